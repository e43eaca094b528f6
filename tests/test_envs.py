"""Environments: parsing, interpreter lookup, what gets installed, and real builds with pip
(from the package index; pip's own cache keeps repeated runs quick)."""

import importlib.util
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys

import pytest

from conftest import TINY_RUN, assert_one_line_error, run_cli
from gcbench.core.errors import UsageError
from gcbench.measuring import envspec, results
from gcbench.measuring.cell import Cell
from gcbench.running import installers, runner, venvs

# The user's pip cache, read before the tests point XDG_CACHE_HOME at empty folders.
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(pathlib.Path(
    os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache", "pip"))
SMALL_PIN = "six==1.16.0"  # small, pure Python, and not one of gcbench's dependencies
PKG_DIR = pathlib.Path(venvs.__file__).resolve().parents[1]  # the package


@pytest.fixture
def pip_cache(monkeypatch):
    monkeypatch.setenv("PIP_CACHE_DIR", PIP_CACHE)


@pytest.fixture(scope="module")
def env_cache(tmp_path_factory):
    """One environment cache for the module, so that builds are shared between tests."""
    return tmp_path_factory.mktemp("envcache")


@pytest.fixture
def cache(env_cache, monkeypatch, pip_cache):
    monkeypatch.setenv("XDG_CACHE_HOME", str(env_cache))
    return env_cache


def test_parse_canonical_form():
    spec = envspec.parse("  equinox==0.13.2 python=3.12   JAX==0.8.0 Flax_NNX>=1.0,<2 ")
    assert spec.python == "3.12"
    assert spec.pins == ("equinox==0.13.2", "flax-nnx>=1.0,<2", "jax==0.8.0")
    assert spec.text == "python=3.12 equinox==0.13.2 flax-nnx>=1.0,<2 jax==0.8.0"
    assert spec.name == "py3.12 equinox==0.13.2 flax-nnx>=1.0,<2 jax==0.8.0"
    assert envspec.parse(spec.text) == spec
    assert envspec.parse("python=3.11").name == "py3.11"
    assert envspec.parse("jax==0.8.0").name == "this-python jax==0.8.0"
    assert envspec.parse("python=/opt/py/bin/python3 jax[cpu]==0.8.0").pins == ("jax[cpu]==0.8.0",)
    assert venvs.exact_pin(envspec.parse("jax[cpu]==0.8.0"), "jax") == "0.8.0"
    assert venvs.exact_pin(envspec.parse("jax>=0.8"), "jax") is None


@pytest.mark.parametrize(("text", "message"), [
    ("", "got nothing"),
    ("python=3.12 python=3.11", "interpreter twice"),
    ("python=", "needs a version"),
    ("python=3.12 jax", "pins no version"),
    ("jax==0.8.0 JAX==0.7.0", "pins jax twice"),
    ("jax=0.8.0", "neither"),
])
def test_parse_errors(text, message):
    with pytest.raises(UsageError, match=message):
        envspec.parse(text)


def test_the_same_environment_twice_is_an_error():
    with pytest.raises(UsageError, match="are the same"):
        envspec.parse_all(["python=3.12 jax==0.8.0", "jax==0.8.0  python=3.12"])


def test_requirements_pins_replace_gcbench_bounds_and_only_needed_packages_come():
    reqs = venvs.requirements(envspec.parse("jax==0.8.0 six==1.16.0"), ["jax", "optax", "equinox"])
    names = [envspec.requirement_name(r) for r in reqs]
    assert "jax==0.8.0" in reqs
    assert not any(r.startswith("jax>") for r in reqs)
    assert {"numpy", "scipy", "tqdm", "optax", "equinox", "six"} <= set(names)
    assert not any("cuda" in r for r in reqs)  # the cuda extra's jax never goes into an environment
    assert "flax" not in names
    assert "pytest" not in names
    assert "matplotlib" not in names
    assert any(r.startswith("tomli") and "python_version" in r for r in reqs)  # the marker goes to pip as is
    # gcbench's own dependencies, and nothing else, as pyproject.toml declares them
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    own = {envspec.requirement_name(r) for r in
           tomllib.loads((pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"][
               "dependencies"]}
    assert {"numpy", "scipy", "msgspec", "tomlkit"} <= own
    assert venvs.requirements(envspec.parse("python=3.12"), []) == [r for r in reqs if envspec.requirement_name(r)
                                                                 in own]


def test_matching_jaxlib():
    available = ["0.6.2", "0.5.3", "0.5.1", "0.5.0", "0.4.38"]
    assert venvs.matching_jaxlib("0.5.3", available) == "0.5.3"
    assert venvs.matching_jaxlib("0.5.2", available) == "0.5.1"  # jax 0.5.2 shipped without its own jaxlib
    assert venvs.matching_jaxlib("0.4.10", available) == "0.4.10"  # nothing older: pip will say so


def test_pip_reason_is_one_line():
    missing = ("Collecting six==0.0.0.999\n"
               "ERROR: Could not find a version that satisfies the requirement six==0.0.0.999 (from versions: 1.16.0)\n"
               "ERROR: No matching distribution found for six==0.0.0.999\n")
    assert installers.pip_reason(missing) == "No matching distribution found for six==0.0.0.999"
    conflict = ("ERROR: Cannot install jax==0.4.35 and jax==0.5.2 because these package versions have conflicting "
                "dependencies.\n\nThe conflict is caused by:\n    The user requested jax==0.4.35\n"
                "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/\n")
    assert installers.pip_reason(conflict) == "Cannot install jax==0.4.35 and jax==0.5.2: conflicting dependencies"
    offline = ("WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(...)': /simple/six/\n"
               "ERROR: Could not find a version that satisfies the requirement six (from versions: none)\n"
               "ERROR: No matching distribution found for six\n")
    assert installers.pip_reason(offline) == ("No matching distribution found for six "
                                        "(no network: the package index could not be reached)")


def test_interpreter_lookup(tmp_path, monkeypatch):
    me = venvs.find_interpreter(None)
    assert me.version == platform.python_version()
    minor = ".".join(me.version.split(".")[:2])
    # Not on PATH, but under a pyenv root: found there
    pyenv = tmp_path / "pyenv"
    (pyenv / "versions" / me.version / "bin").mkdir(parents=True)
    (pyenv / "versions" / me.version / "bin" / f"python{minor}").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PYENV_ROOT", str(pyenv))
    found = venvs.find_interpreter(minor)
    assert found.version == me.version
    assert venvs.find_interpreter(me.version).version == me.version
    with pytest.raises(venvs.EnvUnavailable, match=r"no Python 3\.2 on this machine: looked for python3\.2 on PATH"):
        venvs.find_interpreter("3.2")
    with pytest.raises(venvs.EnvUnavailable, match="no such interpreter"):
        venvs.find_interpreter(str(tmp_path / "nope" / "python"))
    fake = tmp_path / "notpython"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    with pytest.raises(venvs.EnvUnavailable, match="does not run as a Python interpreter"):
        venvs.find_interpreter(str(fake))


@pytest.fixture(scope="module")
def small_env(env_cache):
    """An environment of the running interpreter with one small pin, built once for the module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(env_cache))
        mp.setenv("PIP_CACHE_DIR", PIP_CACHE)
        return venvs.ensure(envspec.parse(SMALL_PIN), [])


def test_build_from_the_running_interpreter_with_one_pin(small_env, cache):
    env = small_env
    assert not env.reused
    assert pathlib.Path(env.python).is_file()
    assert env.path.parent == venvs.envs_root()
    assert env.python_version == platform.python_version()
    assert env.packages["six"] == "1.16.0"
    assert "numpy" in env.packages
    assert "tqdm" in env.packages
    probe = subprocess.run([env.python, "-c", "import six, gcbench, importlib.util as u; "
                            "print(six.__version__); print(gcbench.__file__); print(u.find_spec('jax'))"],
                           capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert probe.returncode == 0, probe.stderr
    version, gcbench_file, jax_spec = probe.stdout.split()
    assert version == "1.16.0"
    assert pathlib.Path(gcbench_file).resolve().parent == PKG_DIR  # the running gcbench, through the link
    assert jax_spec == "None"  # nothing of the manager's packages leaks in
    assert env.describe()["packages"]["six"] == "1.16.0"
    assert env.describe()["pins"] == [SMALL_PIN]


def test_reuse_from_the_cache_runs_no_pip(small_env, cache, monkeypatch):
    marker = small_env.path / venvs.MARKER
    before = marker.stat().st_mtime_ns

    def no_commands(*a, **k):
        raise AssertionError(f"reuse ran a command: {a[0]}")

    monkeypatch.setattr(venvs, "_run", no_commands)
    again = venvs.ensure(envspec.parse(SMALL_PIN), [])
    assert again.reused
    assert again.path == small_env.path
    assert again.packages == small_env.packages
    assert marker.stat().st_mtime_ns == before


def test_bad_pin_is_unavailable_with_pips_reason_and_others_go_on(small_env, cache):
    out = venvs.build_all([envspec.parse("six==0.0.0.999"), envspec.parse(SMALL_PIN)], [], log=lambda m: None,
                         progress=False)
    bad, good = out["six==0.0.0.999"], out[SMALL_PIN]
    assert isinstance(bad, venvs.EnvUnavailable)
    assert str(bad).startswith(("No matching distribution found for six==0.0.0.999",  # pip
                                "No solution found when resolving dependencies: no version of six==0.0.0.999"))  # uv
    assert isinstance(good, venvs.Environment)
    assert good.reused
    assert not [p for p in venvs.envs_root().iterdir() if p.is_dir() and p != small_env.path]  # nothing half-built


def test_interrupted_build_is_removed_and_never_reused(cache, monkeypatch):
    spec = envspec.parse("six==1.15.0")
    real_run = venvs._run

    def interrupted(cmd, *a, **k):
        if "install" in cmd:
            raise KeyboardInterrupt
        return real_run(cmd, *a, **k)

    monkeypatch.setattr(venvs, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        venvs.ensure(spec, [])
    folders = [p for p in venvs.envs_root().iterdir() if p.is_dir()]
    assert all((p / venvs.MARKER).is_file() for p in folders)  # only finished environments remain


def test_folder_without_marker_is_rebuilt(small_env, cache, monkeypatch):
    (small_env.path / venvs.MARKER).rename(small_env.path / "saved-marker")
    try:
        rebuilt = venvs.ensure(envspec.parse(SMALL_PIN), [])
        assert not rebuilt.reused
        assert rebuilt.path == small_env.path
        assert (rebuilt.path / venvs.MARKER).is_file()
        assert rebuilt.packages["six"] == "1.16.0"
    finally:
        (small_env.path / "saved-marker").unlink(missing_ok=True)
    # --rebuild-envs: a complete environment is built again, not reused (the build itself is
    # the one above; here it is recorded instead of run a second time)
    built = []
    monkeypatch.setattr(venvs, "_build", lambda spec, interpreter, reqs, folder, status: built.append(folder) or "new")
    assert venvs.ensure(envspec.parse(SMALL_PIN), []).reused  # the marker is back: reused
    assert venvs.ensure(envspec.parse(SMALL_PIN), [], rebuild=True) == "new"
    assert built == [small_env.path]


def test_worker_runs_under_the_environments_interpreter(small_env, cache, tmp_path):
    """A worker started in the environment reports from there: without jax in it, the backend is
    unavailable, and the metadata names the environment's interpreter."""
    cell = Cell("jax", "mlp", "default", 0, 2, 4992, 3, 1, 0, 10, env=SMALL_PIN)
    out = tmp_path / "cell.json"
    runner.run_worker(cell, out, ["gcbench", "test"], 120, None, python=small_env.python,
                      environment=small_env.describe())
    doc = results.load(out)
    assert doc.status == "unavailable"
    assert "not installed: jax" in doc.reason
    assert doc.metadata["python_executable"] == small_env.python
    assert doc.metadata["python"] == small_env.python_version
    assert doc.environment["packages"]["six"] == "1.16.0"
    assert results.label(doc) == "jax/mlp/default r1 [this-python six==1.16.0]"


@pytest.mark.e2e
@pytest.mark.slow
def test_run_cli_in_an_environment_records_it(cache, tmp_path):
    """`gcbench run --env`: a real cell trained in a built environment, and an environment that
    cannot be built recorded as unavailable while the other runs."""
    out_dir = tmp_path / "res"
    out = run_cli("run", "--backends", "jax", "--workloads", "mlp", "--steps", "5", "--warmup", "1",
                  "--networks", "2", "--repeats", "1", "--env", SMALL_PIN, "--env", "python=3.2", "--out", str(out_dir),
                  "--no-progress", timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "py3.2: unavailable: no Python 3.2 on this machine" in out.stdout
    docs = {results.env_name(d): d for d in results.load_dir(out_dir)}
    ran, missing = docs[f"this-python {SMALL_PIN}"], docs["py3.2"]
    assert ran.status == "ok"
    assert len(ran.wall_ns) == 5
    assert ran.metadata["python_executable"].startswith(str(venvs.envs_root()))
    assert ran.environment["packages"]["six"] == "1.16.0"
    assert "jax" in ran.environment["packages"]
    assert ran.metadata["packages"]["jax"] == ran.environment["packages"]["jax"]
    assert missing.status == "unavailable"
    assert "no Python 3.2" in missing.reason


@pytest.mark.e2e
@pytest.mark.slow
def test_bisect_runs_one_environment_per_version(cache, tmp_path):
    out_dir = tmp_path / "bis"
    out = run_cli("bisect", "--package", "six", "--versions", "1.15.0,1.16.0", "--cell", "jax/mlp/default",
                  "--metric", "median", "--steps", "4", "--warmup", "1", "--networks", "2", "--repeats", "1",
                  "--out", str(out_dir),
                  "--no-progress", timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    table = out.stdout[out.stdout.index("six bisect of jax/mlp/default"):].splitlines()
    assert [line.split()[0] for line in table[2:4]] == ["1.15.0", "1.16.0"]
    assert all(line.split()[3] == "1/1" for line in table[2:4])  # one ok run per version
    docs = results.load_dir(out_dir)
    assert sorted(d.environment["packages"]["six"] for d in docs) == ["1.15.0", "1.16.0"]
    assert (out_dir / "bisect.json").is_file()


def test_other_interpreter_if_the_machine_has_one(cache, tmp_path):
    """Under another Python version, the worker's metadata says that version."""
    me = ".".join(platform.python_version().split(".")[:2])
    other = None
    for minor in ("3.12", "3.13", "3.10", "3.11"):
        if minor == me:
            continue
        try:
            other = venvs.find_interpreter(minor)
            break
        except venvs.EnvUnavailable:
            continue
    if other is None:
        pytest.skip("no other Python 3.10-3.13 on this machine")
    env = venvs.ensure(envspec.parse(f"python={'.'.join(other.version.split('.')[:2])}"), [])
    cell = Cell("jax", "mlp", "default", 0, 2, 4992, 3, 1, 0, 10, env=env.spec.text)
    runner.run_worker(cell, tmp_path / "c.json", ["gcbench"], 120, None, python=env.python,
                      environment=env.describe())
    doc = results.load(tmp_path / "c.json")
    assert doc.metadata["python"] == other.version != platform.python_version()


def test_suite_envs_expand_the_cells(tmp_path):
    from gcbench.running.config import load_suite

    path = tmp_path / "matrix.toml"
    path.write_text('backends = ["jax", "equinox-filter"]\nworkloads = ["mlp"]\nrepeats = 2\n'
                    'envs = ["python=3.12 JAX==0.8.0", "python=3.11"]\n')
    suite = load_suite(str(path)).validate()
    assert suite.envs == ["python=3.12 jax==0.8.0", "python=3.11"]
    cells = suite.cells()
    assert len(cells) == 8
    assert len({c.id for c in cells}) == 8
    assert sorted(c.env for c in cells[:4]) == ["python=3.11"] * 2 + ["python=3.12 jax==0.8.0"] * 2  # each round: all
    jax312 = next(c for c in cells if c.env == "python=3.12 jax==0.8.0" and c.backend == "jax" and c.repeat == 0)
    assert jax312.id.startswith("jax__mlp__default__r0__py3.12-jax-eq-0.8.0-")
    assert jax312.label == "jax/mlp/default r1 [py3.12 jax==0.8.0]"
    path.write_text('envs = "python=3.12"\n')
    with pytest.raises(UsageError, match="envs must be a list"):
        load_suite(str(path)).validate()


def test_environment_field_is_validated(tmp_path):
    cell = Cell("jax", "mlp", "default", 0, 2, 4992, 3, 1, 0, 10, env="python=3.12")
    doc = results.new(cell, "unavailable", "no Python 3.12")
    assert doc.environment == {"spec": "python=3.12", "name": "py3.12"}
    results.write(doc, tmp_path / "a.json")
    doc.environment = "py3.12"
    with pytest.raises(UsageError, match="field environment"):
        results.validate(doc)


@pytest.mark.parametrize(("spec", "message"), [("python=3.12 jax", "pins no version"),
                                           ("python=3.12 python=3.11", "interpreter twice")])
def test_run_rejects_a_bad_env_in_one_line(spec, message, tmp_path):
    out = run_cli("run", "--backends", "jax", "--env", spec, "--out", str(tmp_path / "r"))
    assert out.returncode == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_the_compilation_cache_is_kept_from_jaxlibs_that_abort_on_it():
    assert runner.cache_safe(None)  # gcbench's own interpreter
    assert not runner.cache_safe({"packages": {"jax": "0.4.38", "jaxlib": "0.4.38"}})
    assert runner.cache_safe({"packages": {"jax": "0.6.2", "jaxlib": "0.6.2"}})
    env = runner.compile_cache_env("/tmp/x")
    assert env["JAX_COMPILATION_CACHE_DIR"] == "/tmp/x"
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"


def test_uv_takes_pips_index_settings(tmp_path):
    """uv does not read pip.conf: gcbench passes pip's settings on, leaving out local
    indexes that do not exist (pip skips them with a warning), and takes the best version
    from every index, as pip does."""
    from gcbench.running import installers

    links = tmp_path / "wheels"
    links.mkdir()
    config = {"index-url": ["https://mirror.example/simple"], "extra-index-url": [f"file://{tmp_path}", "file:///nope/x"],
              "find-links": [str(links), "/no/such/folder"], "constraint": [str(tmp_path / "absent.txt")],
              "cert": ["/etc/ssl/cert.pem"], "default-timeout": ["180"]}
    assert installers.uv_options(config) == ["--index-url", "https://mirror.example/simple",
                                             "--extra-index-url", f"file://{tmp_path}", "--find-links", str(links),
                                             "--index-strategy", "unsafe-best-match"]
    assert installers.uv_environ(config) == {"SSL_CERT_FILE": "/etc/ssl/cert.pem", "UV_HTTP_TIMEOUT": "180"}
    assert installers.uv_options({"no-index": ["true"]}) == ["--no-index"]


def test_pips_configuration_is_read_as_pip_reads_it(tmp_path, monkeypatch):
    from gcbench.running import installers

    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://a.example/simple https://b.example/simple")
    config = installers.pip_config()
    assert str(tmp_path) in config["find-links"]
    assert {"https://a.example/simple", "https://b.example/simple"} <= set(config["extra-index-url"])


def test_the_installer_is_uv_where_it_is_installed_and_pip_on_request(monkeypatch):
    from gcbench.running import installers

    monkeypatch.setenv(installers.CHOICE_VAR, "pip")
    assert installers.choose() == installers.Installer("pip")
    monkeypatch.setenv(installers.CHOICE_VAR, "conda")
    with pytest.raises(UsageError, match="must be uv or pip"):
        installers.choose()
    monkeypatch.delenv(installers.CHOICE_VAR)
    chosen = installers.choose()
    assert chosen.name == ("uv" if importlib.util.find_spec("uv") or shutil.which("uv") else "pip")


@pytest.mark.e2e
def test_a_pip_build_still_works_where_uv_is_not_wanted(cache, monkeypatch):
    """The fallback: venv + pip, the same environment (the same key: who installed is
    recorded, not part of what was asked for)."""
    from gcbench.running import installers

    monkeypatch.setenv(installers.CHOICE_VAR, "pip")
    env = venvs.ensure(envspec.parse(SMALL_PIN), [], rebuild=True)
    assert env.packages["six"] == SMALL_PIN.split("==")[1]
    marker = json.loads((env.path / venvs.MARKER).read_text())
    assert marker["installer"] == "pip"


def test_a_source_pin_names_a_commit():
    spec = envspec.parse("python=3.11 equinox@git+file:///src/equinox@0277a30aa1b2c3d4 jax==0.8.0")
    assert spec.pins == ("equinox@git+file:///src/equinox@0277a30aa1b2c3d4", "jax==0.8.0")
    assert spec.name == "py3.11 equinox@0277a30aa jax==0.8.0"
    assert spec.pin_for("equinox").startswith("equinox@git+file://")
    exported = envspec.parse("python=3.11 equinox@file:///home/u/.cache/gcbench/src/equinox-0277a30aa1b2c3d4")
    assert exported.name == "py3.11 equinox@0277a30aa"


def test_versions_and_pins_are_read_as_pep_440_and_508_say():
    """Issue 23, item 3: release candidates sort where PEP 440 puts them, extras and
    direct references parse, markers have no place in a pin."""
    order = sorted(["0.4.30", "0.4.4", "0.4.30rc1", "0.13.10", "0.13.9", "nightly"], key=venvs.version_key)
    assert order == ["nightly", "0.4.4", "0.4.30rc1", "0.4.30", "0.13.9", "0.13.10"]
    assert venvs.matching_jaxlib("0.4.30", ["0.4.29", "0.4.30rc1", "0.4.31"]) == "0.4.30rc1"
    spec = envspec.parse("Flax_NNX[all]>=1.0,<2 jax==0.8.0")
    assert spec.pins == ("flax-nnx[all]>=1.0,<2", "jax==0.8.0")
    assert venvs.exact_pin(spec, "jax") == "0.8.0"
    assert venvs.pinned_version("jax==0.8.*") is None
    assert venvs.pinned_version("jax>=0.8") is None
    assert envspec.requirement_name("tomli>=2.0; python_version < '3.11'") == "tomli"
    for bad, message in [
        ("jax==0.8;python_version<'3'", "has a marker"),
        ("jax", "pins no version"),
        ("jax@https://example.org/jax.whl", "gcbench does not build from"),
        ("jax=>1.0", "neither"),
        ("jax====", "is not a version"),
    ]:
        with pytest.raises(UsageError, match=message):
            envspec.parse(bad)


def test_an_installer_that_prints_nothing_still_times_out(tmp_path):
    import io

    log = io.StringIO()
    start = __import__("time").monotonic()
    code, out = venvs._run([sys.executable, "-c", "import time; time.sleep(30)"], log, timeout=1.0)
    assert __import__("time").monotonic() - start < 10
    assert code != 0
    assert "gave up after 1 s" in out


def _fake_uv(tmp_path, body: bytes) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_bytes(body)
    uv.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", GCBENCH_INSTALLER="uv",
                XDG_CACHE_HOME=str(tmp_path / "cache"))


@pytest.mark.parametrize(("body", "expect"), [
    (b"\x7fELF\x02\x01\x01" + b"\0" * 64, "Exec format error"),  # built for another machine
    (b"#!/bin/sh\nprintf 'bad \\377\\376 bytes\\n'\nexit 3\n", None),  # output that is not UTF-8
])
def test_an_installer_that_breaks_leaves_no_running_plan(tmp_path, body, expect):
    env = _fake_uv(tmp_path, body)
    out = tmp_path / "o"
    proc = run_cli("run", *TINY_RUN, "--env", "python=3.11", "--out", str(out), env=env, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr
    if expect:
        assert_one_line_error(proc, expect)
    else:
        assert proc.returncode == 1
        assert "unavailable" in proc.stdout + proc.stderr
    plan = json.loads((out / "suite.json").read_text()) if (out / "suite.json").exists() else {}
    assert plan.get("state") != "running"


def test_a_bad_installer_choice_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "o"
    proc = run_cli("run", *TINY_RUN, "--env", "python=3.11", "--out", str(out),
                   env=dict(os.environ, GCBENCH_INSTALLER="bogus"))
    assert_one_line_error(proc, "GCBENCH_INSTALLER must be uv or pip")
    assert not out.exists()


def test_envs_clear_empties_a_linked_envs_folder_and_keeps_the_link(tmp_path):
    real = tmp_path / "big-disk"
    (real / "abc123" / "bin").mkdir(parents=True)
    (real / "abc123" / "bin" / "python").write_text("x")
    cache = tmp_path / "cache" / "gcbench"
    cache.mkdir(parents=True)
    (cache / "envs").symlink_to(real)
    proc = run_cli("envs", "clear", env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache")))
    assert proc.returncode == 0, proc.stderr
    assert "removed 1 environments" in proc.stdout, proc.stderr
    assert (cache / "envs").is_symlink()
    assert real.is_dir()
    assert not any(real.iterdir())


def test_a_file_url_pin_is_shown_whole():
    from gcbench.measuring.envspec import short_pin

    assert short_pin("jax@file:///etc") == "jax@file:///etc"
    assert short_pin("equinox@file:///c/src/equinox-" + "0277a30" + "e" * 33) == "equinox@0277a30ee"
