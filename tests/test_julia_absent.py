"""Without Julia (as on gcbench's own machines): clear, fast, one-line unavailability."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import pathlib
import stat
import subprocess
import sys
import time

import pytest

from conftest import run_cli
from gcbench.measuring.backends import BACKENDS, julia_bridge
from gcbench.running.config import Suite
from gcbench.running.runner import RunSettings, run_cells


@pytest.fixture
def no_julia(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no julia on PATH
    monkeypatch.delenv("PYTHON_JULIAPKG_EXE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.juliaup
    monkeypatch.setattr(julia_bridge.sys, "prefix", str(tmp_path))
    julia_bridge.status.cache_clear()
    yield
    julia_bridge.status.cache_clear()


def fake_julia(tmp_path, monkeypatch) -> pathlib.Path:
    """An executable called julia, named by PYTHON_JULIAPKG_EXE (the test skips without juliacall)."""
    if importlib.util.find_spec("juliacall") is None:
        pytest.skip("juliacall not installed")
    exe = tmp_path / "bin" / "julia"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYTHON_JULIAPKG_EXE", str(exe))
    return exe


def test_missing_juliacall_is_one_line(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "juliacall" else real(n, *a))
    julia_bridge.status.cache_clear()
    try:
        ok, reason = BACKENDS["flux"].availability()
    finally:
        julia_bridge.status.cache_clear()
    assert not ok
    assert reason == "juliacall is not installed (pip install 'gcbench[julia]')"


def test_missing_julia_is_detected_fast_without_download(no_julia):
    if importlib.util.find_spec("juliacall") is None:
        pytest.skip("juliacall not installed: the earlier check answers")
    t0 = time.monotonic()
    ok, reason = julia_bridge.status()
    assert time.monotonic() - t0 < 20.0  # a download of Julia takes minutes; a loaded machine, not 20 s
    assert not ok
    assert "no Julia installed" in reason
    assert "PYTHON_JULIAPKG_EXE" in reason
    assert "\n" not in reason


def test_a_julia_on_path_or_in_the_env_makes_them_available(no_julia, tmp_path, monkeypatch):
    monkeypatch.setattr(julia_bridge, "juliapkg_meta", lambda: None)  # setup done, or juliapkg unknown
    exe = fake_julia(tmp_path, monkeypatch)
    assert julia_bridge.find_julia() == str(exe)
    assert julia_bridge.status() == (True, "")


def test_run_records_julia_cells_unavailable_and_goes_on(no_julia, tmp_path):
    ok, why = julia_bridge.status()
    assert not ok
    lines = []
    cells = Suite(backends=["flux", "lux"], workloads=["mlp"], gc=["default", "freeze", "disable"],
                  steps=2, repeats=1).validate().cells()
    docs = run_cells(cells, tmp_path, ["test"], 60, RunSettings(log=lines.append, progress=False))
    assert [d.status for d in docs] == ["unavailable"] * 6
    freeze = [d for d in docs if d.gc_policy == "freeze"]
    assert all("GC policy freeze has no meaning for" in d.reason for d in freeze)
    assert {d.reason for d in docs if d.gc_policy != "freeze"} == {why}
    # One line for every backend unavailable for the same reason, before any cell, not one per cell.
    said = [line for line in lines if why in line]
    assert said == [f"flux, lux: unavailable: {why} (4 cells recorded as unavailable)"]
    assert lines[0] == said[0]


def test_list_marks_freeze_as_python_only():
    out = run_cli("list").stdout
    flux = out[out.index("  flux "):]
    assert "policies: default, disable, manual:K" in flux.splitlines()[2]


def test_julia_threads_must_be_positive():
    proc = run_cli("run", "--julia-threads", "0")
    assert proc.returncode == 2
    assert "julia_threads must be an integer from 1" in proc.stderr


def test_a_julia_that_cannot_start_makes_the_cell_unavailable(monkeypatch):
    from gcbench.measuring import worker

    monkeypatch.setattr(julia_bridge, "status", lambda: (True, ""))

    def broken():
        raise RuntimeError("Pkg resolve failed: Unsatisfiable requirements detected for package Lux\nmore")

    monkeypatch.setattr(julia_bridge, "gcbench_module", broken)
    cell = Suite(backends=["lux"], workloads=["mlp"], steps=2, repeats=1).validate().cells()[0]
    doc = worker.run_cell(cell)
    assert doc.status == "unavailable"
    assert (
        doc.reason
        == "Julia could not start: Pkg resolve failed: Unsatisfiable requirements detected for package Lux"
    )


def test_runs_are_offline_and_setup_is_not(monkeypatch):
    """Item 8: a run never lets juliapkg resolve or download; only julia-setup may."""
    for key in ("PYTHON_JULIAPKG_OFFLINE", "PYTHON_JULIACALL_THREADS", "PYTHON_JULIACALL_OPTIMIZE"):
        monkeypatch.delenv(key, raising=False)
    julia_bridge.configure(2)
    assert os.environ["PYTHON_JULIAPKG_OFFLINE"] == "yes"
    assert os.environ["PYTHON_JULIACALL_THREADS"] == "2,0"  # two default threads, no interactive one, on every release
    assert "PYTHON_JULIACALL_OPTIMIZE" not in os.environ  # Julia's own default (2), as `julia` and the seed
    monkeypatch.delenv("PYTHON_JULIAPKG_OFFLINE")
    julia_bridge.configure(1, offline=False)
    assert "PYTHON_JULIAPKG_OFFLINE" not in os.environ


def test_a_julia_without_installed_packages_asks_for_julia_setup(no_julia, tmp_path, monkeypatch):
    fake_julia(tmp_path, monkeypatch)
    monkeypatch.setattr(julia_bridge, "juliapkg_meta", lambda: tmp_path / "julia_env" / "pyjuliapkg" / "meta.json")
    ok, reason = julia_bridge.status()
    assert not ok
    assert "run `gcbench julia-setup`" in reason
    assert "\n" not in reason


def test_the_offline_setting_reaches_juliapkg_even_when_it_was_imported_first():
    """Issue 24, item 2: pyjuliapkg reads PYTHON_JULIAPKG_OFFLINE once, when its state is
    first imported; a worker imports it early (`status()` -> `juliapkg_meta()`). What
    juliapkg acts on is its STATE, so that is what is checked, in a fresh process as a
    worker starts: the meta path looked up first, then configure()."""
    pytest.importorskip("juliapkg")
    code = ("import os; os.environ.pop('PYTHON_JULIAPKG_OFFLINE', None)\n"
            "from gcbench.measuring.backends import julia_bridge\n"
            "julia_bridge.juliapkg_meta()\n"
            "from juliapkg.state import STATE\n"
            "before = STATE['offline']\n"
            "julia_bridge.configure(1)\n"
            "print(before, STATE['offline'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_julia_setup_tells_juliapkg_it_is_online_again(monkeypatch):
    """Issue 34, item 6: a worker (offline) and julia-setup in one process, or julia-setup
    after juliapkg's state was read offline: setup must turn juliapkg's own state online,
    not only the environment variable (juliapkg's deps.offline sets STATE["offline"])."""
    juliapkg = pytest.importorskip("juliapkg")
    from juliapkg.state import STATE

    monkeypatch.setitem(STATE, "offline", False)
    julia_bridge.configure(1, offline=True)
    assert STATE["offline"] is True
    assert os.environ["PYTHON_JULIAPKG_OFFLINE"] == "yes"
    julia_bridge.configure(1, offline=False)
    assert STATE["offline"] is False
    assert "PYTHON_JULIAPKG_OFFLINE" not in os.environ
    assert juliapkg.offline(None) is False


def test_the_julia_juliapkg_installed_is_found(no_julia, tmp_path, monkeypatch):
    """Issue 34, item 5: for a system Python juliapkg installs Julia under
    ~/.julia/environments/pyjuliapkg/pyjuliapkg/install (STATE["install"]) and records
    the executable it uses in meta.json; both are found without PATH or the venv."""
    pytest.importorskip("juliapkg")
    from juliapkg.state import STATE

    install = tmp_path / "depot" / "environments" / "pyjuliapkg" / "pyjuliapkg" / "install"
    exe = install / "bin" / "julia"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setitem(STATE, "install", str(install))
    monkeypatch.setitem(STATE, "meta", str(tmp_path / "no-meta.json"))
    assert julia_bridge.find_julia() == str(exe)
    # the executable meta.json records (a Julia juliapkg found elsewhere) comes first
    other = tmp_path / "opt" / "julia-1.11" / "bin" / "julia"
    other.parent.mkdir(parents=True)
    other.write_text("#!/bin/sh\n")
    other.chmod(other.stat().st_mode | stat.S_IEXEC)
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"executable": str(other)}))
    monkeypatch.setitem(STATE, "meta", str(meta))
    assert julia_bridge.find_julia() == str(other)


def test_the_julia_sources_are_the_package_s_own(monkeypatch, tmp_path):
    """From a checkout (an editable install) the package's gcbench.julia is julia/ here; the
    wheel test (test_packaging.py) checks the installed copy; GCBENCH_JULIA_DIR overrides both."""
    monkeypatch.delenv("GCBENCH_JULIA_DIR", raising=False)
    assert julia_bridge.julia_dir() == pathlib.Path(__file__).resolve().parents[1] / "julia"
    monkeypatch.setenv("GCBENCH_JULIA_DIR", str(tmp_path))
    assert julia_bridge.julia_dir() == tmp_path
    julia_bridge.status.cache_clear()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # as if juliacall were installed
    try:
        ok, why = julia_bridge.status()
    finally:
        julia_bridge.status.cache_clear()
    assert not ok
    assert why.startswith(f"the Julia sources are not at {tmp_path} ")
    assert "\n" not in why


def _julia_saying(folder: pathlib.Path, version: str) -> pathlib.Path:
    folder.mkdir(parents=True)
    exe = folder / "julia"
    exe.write_text(f"#!/bin/sh\necho 'julia version {version}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_juliacall_s_openssl_cap_is_read_from_pyjuliapkg(monkeypatch):
    """pyjuliapkg bounds Julia to "1 - 1.11" where Python's OpenSSL is older than 3.5 (Julia 1.12
    needs 3.5); gcbench asks the installed pyjuliapkg rather than restating its rule."""
    deps = pytest.importorskip("juliapkg.deps")
    monkeypatch.setattr(deps, "openssl_compat", lambda version=None: ("3 - 3.0", "1 - 1.11"))
    assert julia_bridge.openssl_cap() == (1, 11)
    monkeypatch.setattr(deps, "openssl_compat", lambda version=None: ("3 - 3.5", None))
    assert julia_bridge.openssl_cap() is None


def test_a_julia_newer_than_juliacall_admits_is_named_and_an_older_one_chosen(no_julia, tmp_path, monkeypatch):
    if importlib.util.find_spec("juliacall") is None:
        pytest.skip("juliacall not installed: the earlier check answers")
    monkeypatch.setattr(julia_bridge, "juliapkg_meta", lambda: None)
    new = _julia_saying(tmp_path / "new", "1.13.1")
    monkeypatch.setenv("PYTHON_JULIAPKG_EXE", str(new))
    monkeypatch.setattr(julia_bridge, "openssl_cap", lambda: (1, 11))
    ok, why = julia_bridge.status()
    assert not ok
    assert "\n" not in why
    assert why.startswith("juliacall admits Julia 1.10.3 to 1.11 with this Python")
    assert "OpenSSL 3.5" in why
    assert f"refuses {new} (1.13.1)" in why  # which executable, which version
    julia_bridge.status.cache_clear()
    old = _julia_saying(tmp_path / "old", "1.11.7")
    monkeypatch.setenv("PATH", str(old.parent))
    assert julia_bridge.find_julia() == str(old)
    assert julia_bridge.status() == (True, "")
    monkeypatch.setattr(julia_bridge, "openssl_cap", lambda: None)  # a Python with OpenSSL 3.5: the first one
    assert julia_bridge.find_julia() == str(new)


def test_a_worker_whose_cell_raises_exits_with_its_own_error_not_a_signal(tmp_path):
    """A cell that raises (a Julia error from run!) is printed and the worker leaves through
    child.leave with exit code 1; before, the exception left main and Python's exit hooks
    ran, juliacall's among them, which with several Julia threads can end in a signal
    (PythonCall issue #764): here a stand-in juliacall whose exit hook aborts."""
    spec = {"cell": {"backend": "flux", "workload": "mlp", "policy": "default", "repeat": 0, "networks": 2,
                     "params_per_network": 4992, "steps": 3, "warmup": 1, "seed": 0, "loss_every": 1}}
    body = (
        "import atexit, os, sys, types\n"
        "sys.modules['juliacall'] = types.ModuleType('juliacall')\n"
        "atexit.register(os.abort)  # what juliacall's jl_atexit_hook can do with 2 threads\n"
        "import gcbench.child as child\n"
        "def run_cell(*a, **k):\n"
        "    raise RuntimeError('run! failed: MethodError')\n"
        "child.run_cell = run_cell\n"
        f"child.leave(child.main([{str(tmp_path / 'out.json')!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", body], input=json.dumps(spec) + "\n", capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "RuntimeError: run! failed: MethodError" in proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_the_julia_run_is_made_once_per_session_under_xdist(pytester, monkeypatch):
    """tests/test_julia_run.py's 8 cells are one session fixture through tests/once.py: four
    tests spread over two xdist workers make it once, and a plain session once too."""
    for name in [k for k in os.environ if k.startswith("PYTEST_XDIST")]:  # this session's own workers
        monkeypatch.delenv(name)
    pytester.makepyfile(once=(pathlib.Path(__file__).resolve().parent / "once.py").read_text())
    pytester.makepyfile(test_shared="""
        import pytest
        from once import once_per_session, shared_folder

        @pytest.fixture(scope="session")
        def made(tmp_path_factory):
            def make(folder):
                folder.mkdir()
                with open(str(shared_folder(tmp_path_factory) / "made.log"), "a") as f:
                    f.write("made\\n")
                (folder / "result").write_text("42")
            return once_per_session(tmp_path_factory, "shared-run", make)

        @pytest.mark.parametrize("k", range(4))
        def test_reads(made, k):
            import time
            time.sleep(0.3)
            assert (made / "result").read_text() == "42"
    """)
    for workers in (["-n", "2"], ["-n", "0"]):
        base = pytester.path / f"base{workers[1]}"
        result = pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider", "-o", "addopts=",
                                               f"--basetemp={base}")
        result.assert_outcomes(passed=4)
        assert (base / "made.log").read_text() == "made\n", workers


@pytest.mark.parametrize(("returned", "cap"), [
    ("3 - 3.0", None),  # pyjuliapkg 0.1.17-0.1.20: OpenSSL's bound alone, no Julia bound ([1] read a space)
    (("3 - 3.0", "1 - 1.11"), (1, 11)),  # 0.1.21 and later, this Python's OpenSSL older than 3.5
    (("3 - 3.5", None), None),  # 0.1.21 and later, OpenSSL 3.5: no cap
])
def test_the_openssl_cap_reads_both_shapes_pyjuliapkg_returned(monkeypatch, returned, cap):
    deps = pytest.importorskip("juliapkg.deps")
    monkeypatch.setattr(deps, "openssl_compat", lambda *a: returned)
    assert julia_bridge.openssl_cap() == cap


@pytest.mark.parametrize(("version", "admitted"), [("1.9.4", False), ("1.10.2", False), ("1.10.3", True),
                                                   ("1.11.7", True), ("1.13.1", False)])
def test_only_a_julia_juliacall_admits_is_found_and_a_refused_one_is_named(no_julia, tmp_path, monkeypatch, version,
                                                                          admitted):
    """juliacall needs ^1.10.3 (its juliapkg.json): a 1.9 or a 1.10.0-1.10.2 was "admitted"
    and then refused by juliapkg; a 1.13 beside an OpenSSL older than 3.5 too."""
    if importlib.util.find_spec("juliacall") is None:
        pytest.skip("juliacall not installed: the earlier check answers")
    monkeypatch.setattr(julia_bridge, "juliapkg_meta", lambda: None)
    monkeypatch.setattr(julia_bridge, "openssl_cap", lambda: (1, 11))
    exe = _julia_saying(tmp_path / version, version)
    monkeypatch.setenv("PYTHON_JULIAPKG_EXE", str(exe))
    assert julia_bridge.juliacall_bounds()[0] == (1, 10, 3)
    assert (julia_bridge.find_julia() == str(exe)) is admitted
    ok, why = julia_bridge.status()
    assert ok is admitted
    if not admitted:
        assert f"refuses {exe} ({version})" in why
        assert why.startswith("juliacall admits Julia 1.10.3 to 1.11")


def test_julia_starts_with_its_threads_in_the_default_pool_and_none_interactive():
    """Since Julia 1.12 `-t N` means `-t N,1` (an interactive thread more, the main task in the
    interactive pool); gcbench asks for `N,0` on every release, so that a 1.10 cell and a 1.13
    cell run alike, and the result records both pools (julia_layout.JuliaRun)."""
    from gcbench.measuring.backends import julia_layout

    assert [julia_bridge.thread_layout(n) for n in (1, 2, 8)] == ["1,0", "2,0", "8,0"]
    fields = {f.name for f in dataclasses.fields(julia_layout.JuliaRun)}
    assert {"julia_threads", "julia_threads_interactive", "julia_maxthreadid"} <= fields
    run_jl = (julia_bridge.julia_dir() / "run.jl").read_text()
    for julia in ('"julia_threads" => Threads.nthreads(:default)', '"julia_threads_interactive" => '
                  'Threads.nthreads(:interactive)', '"julia_maxthreadid" => Threads.maxthreadid()'):
        assert julia in run_jl, julia


def test_where_julia_is_required_its_tests_fail_instead_of_skipping(tmp_path):
    """Issue 70, item 1: with GCBENCH_REQUIRE_JULIA=1 and no Julia, `pytest -m julia` fails
    (each test that needs Julia, with the reason), where it skipped and exited 0."""
    tests = pathlib.Path(__file__).resolve().parent
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_JULIAPKG_EXE"}
    env.update(PATH=str(pathlib.Path(sys.executable).parent), HOME=str(tmp_path))  # no Julia to be found
    args = [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", "-m", "julia",
            str(tests / "test_julia_run.py")]
    skipped = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, cwd=tests.parent)
    assert skipped.returncode == 0, skipped.stdout[-2000:]
    assert " skipped" in skipped.stdout
    required = subprocess.run(args, env={**env, "GCBENCH_REQUIRE_JULIA": "1"}, capture_output=True, text=True,
                              timeout=300, cwd=tests.parent)
    assert required.returncode == 1, required.stdout[-2000:]
    assert "GCBENCH_REQUIRE_JULIA=1, and this test that needs Julia was skipped" in required.stdout
    assert " skipped" not in required.stdout.splitlines()[-1]


def test_julia_setup_loads_each_framework_in_its_own_process_and_says_which_failed(monkeypatch):
    """Issue 70, item 4: one framework's failing extension failed the setup of all three
    (they loaded in one process, with extensions no cell loads); each now loads alone, and
    the setup names the one that failed."""
    monkeypatch.setattr(julia_bridge, "configure", lambda **kw: None)
    monkeypatch.setattr(julia_bridge, "start", lambda threads=1: (True, ""))
    loaded: list[str] = []

    def load(name):
        loaded.append(name)
        return "LoadError: FluxExt failed to precompile" if name == "lux" else ""

    monkeypatch.setattr(julia_bridge, "load_in_own_process", load)
    said: list[str] = []
    ok, why = julia_bridge.setup(said.append)
    assert loaded == list(julia_bridge.FRAMEWORKS)
    assert not ok
    assert why == "1 of 3 frameworks failed to load: lux (LoadError: FluxExt failed to precompile)"
    assert said == ["  flux: loaded", "  lux: failed: LoadError: FluxExt failed to precompile",
                    "  simplechains: loaded"]
    monkeypatch.setattr(julia_bridge, "load_in_own_process", lambda name: "")
    assert julia_bridge.setup(said.append) == (True, "")


def test_a_process_s_framework_load_reports_its_last_line(monkeypatch):
    """The child's last line is the reason; a child that could not start Julia says why."""
    proc = subprocess.CompletedProcess([], 1, stdout="", stderr="Traceback ...\nJuliaError: Package Lux not found\n")
    monkeypatch.setattr(julia_bridge.subprocess, "run", lambda *a, **k: proc)
    assert julia_bridge.load_in_own_process("lux") == "JuliaError: Package Lux not found"
    monkeypatch.setattr(julia_bridge.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess([], 0, "", ""))
    assert julia_bridge.load_in_own_process("lux") == ""


def test_julia_s_streams_are_flushed_whenever_juliacall_is_loaded(monkeypatch):
    """Where GCBench.jl failed to load, Julia's own output says why: flushed then too."""
    import types

    flushed: list[str] = []
    fake = types.ModuleType("juliacall")
    fake.Main = types.SimpleNamespace(seval=flushed.append)
    monkeypatch.setitem(sys.modules, "juliacall", fake)
    julia_bridge.gcbench_module.cache_clear()  # GCBench.jl never loaded
    julia_bridge.flush_streams()
    assert flushed == ["(flush(stdout); flush(stderr); nothing)"]
