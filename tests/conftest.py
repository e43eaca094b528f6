"""Shared fixtures. Every test runs with an empty MNIST cache and no $GCBENCH_MNIST,
so a developer's own data never changes what a test sees. The session shares one JAX
compilation cache (this process and the workers it starts), so a program the tests
compile twice (a reference and a backend, or two runs of one cell) compiles once."""

from __future__ import annotations

import atexit
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

_JAX_CACHE = tempfile.mkdtemp(prefix="gcbench-test-jax-cache-")
atexit.register(shutil.rmtree, _JAX_CACHE, True)
os.environ.update({"JAX_COMPILATION_CACHE_DIR": _JAX_CACHE, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                   "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"})

# The pytest sessions the tests start run their tests in file order, as written, and without
# Hypothesis's plugin (0.6 s a session); a test that wants one asks for it (`-p randomly`,
# `-p hypothesispytest`), which unblocks it.
os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} -p no:randomly -p no:hypothesispytest".strip()



def _bytecode() -> None:
    """gcbench's modules as bytecode, as an installed package has them, before any test's own
    process imports them: a module compiled from source at import (an edited checkout under
    PYTHONDONTWRITEBYTECODE) makes the interpreter's AST types (600 objects) and frees the
    megabyte its compilation used, which the heap and the memory a loop measures would then
    carry (benchmarks/schedule_footprint.py). Idempotent; each file is written atomically."""
    import compileall

    compileall.compile_dir(str(pathlib.Path(__file__).resolve().parent.parent / "python" / "gcbench"), quiet=2)


_bytecode()

import numpy as np  # noqa: E402 - after the cache's environment, which JAX reads on import
import pytest  # noqa: E402

from gcbench.measuring import mnist as datamod  # noqa: E402

# The budget cases are a project's own test suite, which tests/test_gc_budget.py runs in fresh
# pytest processes (as a project runs them, and under other versions of equinox); collected
# here as well, they ran a second time inside this suite's own workers.
collect_ignore = ["budget_cases"]
pytest_plugins = ["pytester"]  # the GC budget plugin's tests run pytest sessions of their own


@pytest.fixture(autouse=True)
def isolated_data(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv(datamod.ENV_VAR, raising=False)


def write_mnist(folder, samples: int = 512, compress: bool = False, seed: int = 1):
    """Small real-format IDX files: `samples` images of two classes that are easy to tell apart."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, samples).astype(np.uint8)
    images = rng.integers(0, 40, (samples, 28, 28)).astype(np.uint8)
    for i, label in enumerate(labels):  # a bright bar whose row encodes the label
        images[i, 2 + 2 * label, :] = 255
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if compress else ""
    datamod.write_idx(folder / (datamod.IMAGES + suffix), images, compress)
    datamod.write_idx(folder / (datamod.LABELS + suffix), labels, compress)
    return images, labels


@pytest.fixture
def mnist_dir(tmp_path):
    folder = tmp_path / "mnist"
    write_mnist(folder)
    return folder


# Commands that start no process and leave no process state behind: run in the test's own
# process (a subprocess costs an interpreter and the imports, about 1.5 s each, 110 calls).
IN_PROCESS = {"report", "compare", "status", "export", "list"}


def run_cli(*args, timeout=600, **kw):
    """`gcbench ARGS` as a user runs it, with what it printed and its exit status: in this
    process for the commands of IN_PROCESS (`cli.main`, output captured, a traceback as a
    subprocess would show one), in a subprocess for the others and wherever the caller gives
    the subprocess settings of its own (env, cwd, input)."""
    command = next((a for a in args if not a.startswith("-")), None)
    if command not in IN_PROCESS or kw:
        return subprocess.run([sys.executable, "-m", "gcbench", *args], capture_output=True, text=True,
                              timeout=timeout, **kw)
    import contextlib
    import io
    import traceback

    from gcbench import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as e:  # argparse's usage errors and --help
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:  # what the user would see: a traceback and status 1
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(["gcbench", *args], code, out.getvalue(), err.getvalue())


def fake_job_controller(folder, seconds: int = 120) -> subprocess.Popen:
    """A stand-in for submitit's local job controller of `folder`, as /proc shows one. It
    returns once the child has exec'd: until then /proc shows the forking parent's command
    line (a check made at once found no controller, under load)."""
    proc = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})", "-m",
                             "submitit.local._local", str(folder)])
    cmdline = f"/proc/{proc.pid}/cmdline"
    for _ in range(1000):
        if not pathlib.Path(cmdline).exists():
            break  # no /proc here: the caller sees the process id alone
        with open(cmdline, "rb") as f:
            if b"submitit.local._local" in f.read():
                break
        time.sleep(0.01)
    return proc


@pytest.fixture(scope="module")
def exact_float32():
    """Float32 matrix products computed in float32, for tests that compare frameworks.
    XLA's default on Ampere and Hopper GPUs is TF32 (a 10-bit mantissa), which moves a
    ViT's losses by about 1e-4 relative between two equal programs written differently;
    on the CPU 'highest' is what XLA does anyway. The equivalence tests compare the
    frameworks, not the precisions, so they ask for it on every platform."""
    jax = pytest.importorskip("jax")
    before = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "highest")
    yield
    jax.config.update("jax_default_matmul_precision", before)


def assert_one_line_error(proc, *fragments):
    """A refused command: exit code 2, one line on standard error naming what was wrong,
    and no traceback anywhere."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("gcbench: error: "), proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


TINY_RUN = ["--backends", "jax", "--workloads", "mlp", "--gc", "default", "--networks", "2", "--steps", "5",
            "--warmup", "1", "--no-progress"]  # the smallest run of a real cell


def ok_results_folder(path, repeats: int = 2, steps: int = 30):
    """A results folder of simulated ok results (3 cells at 10 ms steps)."""
    from simulate import docs

    return write_documents(path, docs(np.random.default_rng(7), repeats, 10.0, steps=steps))


def write_documents(path, documents):
    """Result documents (records, or dicts as read) as JSON files in `path`, unvalidated
    (tests write broken ones too)."""
    import json

    path.mkdir(parents=True, exist_ok=True)
    for d in documents:
        doc = d if isinstance(d, dict) else d.to_doc()
        (path / f"{doc['cell']}.json").write_text(json.dumps(doc))
    return path


@pytest.fixture
def small_disk(tmp_path):
    """A 600 KiB tmpfs: a disk that fills up (mounting needs root; skipped otherwise)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("mounting a small tmpfs needs root (CAP_SYS_ADMIN); not available here")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def documentation_text() -> str:
    """README and every page of docs/, as one text: what the project tells its readers
    (a claim may live on any of them)."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    return "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])


@pytest.fixture
def classic_thresholds():
    """CPython's collector thresholds up to 3.12, (700, 10, 10), for a test whose loop is sized
    for them (3.13 made the young threshold 2,000); restored after."""
    import gc

    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)
    gc.collect()  # its loop's cyclic garbage is not the next test's


def copy_of(folder) -> pathlib.Path:
    """A copy of a results folder (or archive) beside it: the same runs under another name, for a
    command that refuses one folder against itself (`compare X X`)."""
    folder = pathlib.Path(folder)
    copy = folder.with_name(f"copy-of-{folder.name}")  # an archive keeps its suffix
    if folder.is_file():
        return pathlib.Path(shutil.copyfile(folder, copy))
    shutil.rmtree(copy, ignore_errors=True)  # copied again: the folder may have changed since
    return pathlib.Path(shutil.copytree(folder, copy, symlinks=True))


# What the repository holds and an sdist leaves out (26 MiB of published reports, the
# benchmarks, the workflows, CI's script): a test that reads them is skipped, with the reason,
# where they are absent, so that the sdist's own test command passes from an unpacked sdist.
REPOSITORY_ONLY = ("reports", "benchmarks", ".github", ".ci")
_ABSENT = [name for name in REPOSITORY_ONLY if not (pathlib.Path(__file__).resolve().parent.parent / name).exists()]
_TAINTED: dict[str, tuple[set[str], dict[str, str]]] = {}


def _reads_absent(text: str) -> list[str]:
    import re

    return [name for name in _ABSENT if re.search(rf"""["'/(]{re.escape(name)}["'/)]""", text)]


def _module_taint(path: pathlib.Path) -> tuple[set[str], dict[str, str]]:
    """A test module's names that reach what an sdist leaves out (module-level assignments
    that name it, the helpers that read the published reports), and its functions' sources."""
    key = str(path)
    if key not in _TAINTED:
        import ast

        text = path.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text)
        tainted = {"committed", "browser", "simulate"} if "reports" in _ABSENT else set()
        sources = {}
        for node in tree.body:
            segment = ast.get_source_segment(text, node) or ""
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and _reads_absent(segment):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                sources[node.name] = segment
        _TAINTED[key] = (tainted, sources)
    return _TAINTED[key]


def _needs(item) -> bool:
    """Whether a test reads what an sdist leaves out: its own source, or a fixture or helper
    of its module that it names, names an absent folder or a module-level name that does."""
    import re

    tainted, sources = _module_taint(pathlib.Path(str(item.path)))
    name = getattr(item, "originalname", item.name).split("[")[0]
    seen, todo = set(), [name, *getattr(item, "fixturenames", [])]
    while todo:
        current = todo.pop()
        if current in seen or current not in sources:
            continue
        seen.add(current)
        src = sources[current]
        if _reads_absent(src) or any(re.search(rf"\b{re.escape(t)}\b", src) for t in tainted):
            return True
        todo += [other for other in sources if other not in seen and re.search(rf"\b{re.escape(other)}\b", src)]
    return False


def pytest_collection_modifyitems(config, items) -> None:
    if not _ABSENT:
        return
    for item in items:
        if _needs(item):
            item.add_marker(pytest.mark.skip(reason=f"reads the repository's {', '.join(_ABSENT)} (one of them), "
                                                    "which an sdist leaves out"))


# Where Julia must run (the julia workflow sets GCBENCH_REQUIRE_JULIA=1), a test that needs
# Julia and was skipped fails instead: pytest exits 0 when everything is skipped, and a job
# that should have run the Julia backends would read green without running one.
REQUIRE_JULIA = "GCBENCH_REQUIRE_JULIA"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_JULIA) == "1" and item.get_closest_marker("julia") is not None:
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_JULIA}=1, and this test that needs Julia was skipped: {why}"
