"""The reliability contract: what gcbench does when things go wrong. Nothing is lost,
nothing is silently mixed, and a mistake is one line with exit code 2.

Each test is one case of the README's Reliability section.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import assert_one_line_error, run_cli, write_mnist
from gcbench.measuring import mnist as datamod
from gcbench.measuring import results
from gcbench.measuring.cell import Cell

pytestmark = pytest.mark.slow

FAST = ["--backends", "jax", "--workloads", "mlp", "--networks", "1", "--warmup", "1", "--no-progress"]


def _start(out, *extra, steps="200000"):
    """A run whose first cell takes long (many steps of batch 8), in the background."""
    return subprocess.Popen([sys.executable, "-m", "gcbench", "run", *FAST, "--steps", steps, "--batch-size", "8",
                             "--repeats", "1", "--gc", "default,disable", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _processes() -> dict[int, tuple[int, str]]:
    """Every process: its parent and its command line."""
    found = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    return found


def _worker_pids(manager: int) -> list[int]:
    """The workers under `manager`: fresh interpreters (`gcbench.child`), or forked by a
    backend's worker server, itself forked by the base server (all three with the server's
    command line)."""
    procs = _processes()

    def server(pid: int) -> bool:
        return "gcbench.worker_server" in procs.get(pid, (0, ""))[1]

    def under(pid: int) -> bool:
        while pid > 1 and pid in procs:
            pid = procs[pid][0]
            if pid == manager:
                return True
        return False

    return [pid for pid, (parent, cmdline) in procs.items() if under(pid) and (
        "gcbench.child" in cmdline or (server(pid) and server(parent) and server(procs[parent][0])))]


def _wait_for_worker(manager: int, timeout=120) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = _worker_pids(manager)
        if pids:
            return pids[0]
        time.sleep(0.2)
    raise AssertionError("no worker started")


def _gone(pid, timeout=10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


# -- workers and signals ---------------------------------------------------------------------

@pytest.mark.e2e
def test_a_killed_worker_fails_its_cell_and_the_run_goes_on(tmp_path):
    out = tmp_path / "out"
    proc = _start(out, steps="30000")
    os.kill(_wait_for_worker(proc.pid), signal.SIGKILL)
    _stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stderr  # a failed cell
    docs = {d.gc_policy: d for d in results.load_dir(out)}
    failed = [d for d in docs.values() if d.status == "failed"]
    assert len(failed) == 1
    assert "killed by signal 9" in failed[0].reason
    assert len(docs) == 2
    assert "Traceback" not in stderr


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_sigint_and_sigterm_keep_finished_cells_and_stop_the_worker(tmp_path, sig, code):
    out = tmp_path / "out"
    tmp_before = {p.name for p in pathlib.Path("/tmp").iterdir()}
    proc = subprocess.Popen([sys.executable, "-m", "gcbench", "run", *FAST, "--steps", "10", "--repeats", "1",
                             "--gc", "default,disable,freeze", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(out.glob("jax__*.json")):
        time.sleep(0.1)
    worker = _wait_for_worker(proc.pid, 60) if not proc.poll() else None
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal")
    assert proc.returncode == code, stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr
    kept = results.load_dir(out)
    assert kept
    assert all(d.status == "ok" for d in kept)
    assert json.loads((out / "suite.json").read_text())["state"] == "interrupted"
    assert not list(out.glob(".*.json"))
    assert not list(out.glob(".*.tmp"))
    assert worker is None or _gone(worker)
    # this run's own temporary files only (tests beside it in other processes make theirs)
    tmp_now = {p.name for p in pathlib.Path("/tmp").iterdir()}
    leaked = [n for n in tmp_now - tmp_before if n.startswith(f"gcbench-stderr-{proc.pid}-")]
    assert not leaked


def test_a_worker_dies_with_its_killed_manager(tmp_path):
    out = tmp_path / "out"
    proc = _start(out)
    worker = _wait_for_worker(proc.pid)
    proc.kill()  # SIGKILL: no handler runs in the manager
    proc.communicate(timeout=30)
    assert _gone(worker, timeout=10), "the worker outlived its manager"


# -- a folder belongs to its run ------------------------------------------------------------------

def test_a_second_run_into_a_busy_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    first = _start(out)
    _wait_for_worker(first.pid)
    try:
        second = run_cli("run", *FAST, "--steps", "5", "--repeats", "1", "--out", str(out), "--force")
        assert_one_line_error(second, "is in use by another gcbench run")
    finally:
        first.kill()
        first.communicate(timeout=30)


@pytest.mark.e2e
def test_a_rerun_never_loses_a_good_result(tmp_path):
    out = tmp_path / "out"
    base = ["run", *FAST, "--steps", "20", "--repeats", "1", "--out", str(out)]
    assert run_cli(*base).returncode == 0
    good = results.load(out / "jax__mlp__default__r0.json")
    # the same folder again: refused, with the command that wrote it
    assert_one_line_error(run_cli(*base), "already holds", "--resume", "--force", "gcbench run --backends jax")
    # --resume with the same settings keeps the result and runs nothing
    resumed = run_cli(*base, "--resume")
    assert resumed.returncode == 0
    assert "kept (an ok result with the same settings is there)" in resumed.stdout
    assert results.load(out / "jax__mlp__default__r0.json").to_doc() == good.to_doc()
    # --force whose new run fails keeps the good result (the worker crashes on start)
    env = dict(os.environ, GCBENCH_MNIST=str(tmp_path / "no such folder"))
    forced = run_cli(*base, "--force", env=env)
    assert forced.returncode == 2  # the data folder is checked first: nothing ran, nothing replaced
    assert results.load(out / "jax__mlp__default__r0.json").to_doc() == good.to_doc()
    # --resume with other settings runs again and replaces it only once the new result is there
    changed = run_cli(*base[:-2], "--steps", "25", "--out", str(out), "--resume")
    assert changed.returncode == 0, changed.stderr
    new = results.load(out / "jax__mlp__default__r0.json")
    assert len(new.wall_ns) == 25
    plan = json.loads((out / "suite.json").read_text())
    assert [r["mode"] for r in plan["runs"]] == ["new", "resume", "resume"]


def test_a_failed_rerun_keeps_the_earlier_ok_result(tmp_path, monkeypatch):
    from gcbench.running import runner
    from gcbench.running.config import Suite

    suite = Suite(backends=["jax"], workloads=["mlp"], steps=10, warmup=1, repeats=1, networks={"mlp": 1}).validate()
    cells = suite.cells()
    first = runner.run_cells(cells, tmp_path, ["t"], 300, runner.RunSettings(log=lambda *_: None, progress=False))
    assert first[0].status == "ok"

    def crash(*a, **k):
        raise runner.CellFailed("worker exit code 1\nboom")

    monkeypatch.setattr(runner, "run_worker", crash)
    said = []
    again = runner.run_cells(cells, tmp_path, ["t"], 300, runner.RunSettings(log=said.append, progress=False))
    assert again[0].status == "ok"
    assert results.load(tmp_path / f"{cells[0].id}.json").status == "ok"
    assert any("kept the earlier ok result instead of this failed one" in s for s in said)


# -- a full disk ---------------------------------------------------------------------------------

def _fill(mnt, leave: int) -> None:
    st = os.statvfs(mnt)
    free = st.f_bavail * st.f_frsize
    (mnt / "filler").write_bytes(b"x" * max(0, free - leave))


def test_a_full_disk_is_one_line_and_loses_nothing(small_disk):
    _fill(small_disk, 0)
    proc = run_cli("run", *FAST, "--steps", "10", "--repeats", "1", "--out", str(small_disk / "out"))
    assert_one_line_error(proc, "No space left on device")


@pytest.mark.e2e
def test_results_that_do_not_fit_are_reported_and_the_run_goes_on(small_disk):
    _fill(small_disk, 24 * 1024)  # room for suite.json and small documents, not for results of 1,200 steps
    out = small_disk / "out"
    proc = run_cli("run", *FAST, "--steps", "1200", "--repeats", "1", "--gc", "default,disable", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.count("No space left on device") >= 2  # both cells said so, the second still ran
    assert not [p for p in out.iterdir() if p.name.startswith(".") and p.name != ".gcbench.lock"]


# -- corrupted and bad inputs ----------------------------------------------------------------------

def test_a_gzip_with_a_bad_deflate_block(tmp_path):
    write_mnist(tmp_path, samples=200, compress=True)
    path = tmp_path / (datamod.IMAGES + ".gz")
    raw = bytearray(path.read_bytes())
    raw[20:40] = b"\xff" * 20
    path.write_bytes(bytes(raw))
    assert_one_line_error(run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "o")), "corrupt gzip data")


def test_idx_dimensions_whose_product_overflows(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.IMAGES
    raw = bytearray(path.read_bytes())
    raw[4:16] = (2**31).to_bytes(4, "big") * 3  # 2^93 elements: int64 overflows to 0
    path.write_bytes(bytes(raw))
    assert_one_line_error(
        run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "o")),
        "IDX header promises",
        "over the 1,073,741,824 gcbench reads",
    )


def test_float_labels_are_refused(tmp_path):
    write_mnist(tmp_path, samples=200)
    datamod.write_idx(tmp_path / datamod.LABELS, np.full(200, 3.7, np.float32))
    assert_one_line_error(run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "o")), "labels are float32")


def test_download_into_a_file(tmp_path):
    target = tmp_path / "f"
    target.write_text("x")
    assert_one_line_error(run_cli("data", "download", "--data", str(target)), "exists and is not a folder")


def test_corrupt_arrays_in_a_result_file(tmp_path):
    res = tmp_path / "res"
    res.mkdir()
    cell = Cell("jax", "mlp", "default", 0, 2, 4992, 3, 1, 0, 1)
    doc = results.new(cell, "ok", wall_ns=[1, 2, 3], gc_ns=[0, 0, 0], gc_collections=[[0, 0, 0]] * 3,
                      loss={"step": [], "value": []}, data={"kind": "synthetic"})
    doc.gc_ns = [0, "x", 0]
    (res / "a.json").write_text(json.dumps(doc.to_doc()))
    assert_one_line_error(run_cli("report", str(res), "--out", str(tmp_path / "rep")), "gc_ns", "integers")
    (res / "a.json").write_bytes(gzip.compress(b"{}"))
    assert_one_line_error(run_cli("report", str(res), "--out", str(tmp_path / "rep")), "a.json", "not a UTF-8")


def test_environment_names_that_differ_only_in_operators_do_not_share_a_file():
    from gcbench.running import config

    suite = config.Suite(backends=["jax"], workloads=["mlp"], repeats=1,
                         envs=["jax==0.8.0", "jax>=0.8.0", "jax<=0.8.0"]).validate()
    ids = [c.id for c in suite.cells()]
    assert len(set(ids)) == 3
    assert any("-ge-" in i for i in ids)


def test_bisect_versions_cannot_smuggle_pins_and_results_are_read_only(tmp_path):
    assert_one_line_error(run_cli("bisect", "--package", "equinox", "--cell", "equinox-filter/vit/default",
                            "--versions", "1.0 jax==0.1"), "is not a version")
    res = tmp_path / "res"
    res.mkdir()
    before = sorted(p.name for p in res.iterdir())
    proc = run_cli("bisect", "--package", "equinox", "--cell", "equinox-filter/vit/default", "--results", str(res))
    assert proc.returncode == 2  # no results there: one line
    assert sorted(p.name for p in res.iterdir()) == before  # nothing written into the folder it read


@pytest.mark.e2e
def test_every_file_gcbench_writes_has_mode_0644(tmp_path):
    out = tmp_path / "out"
    assert run_cli("run", *FAST, "--steps", "5", "--repeats", "1", "--out", str(out), "--report",
                   cwd=tmp_path).returncode == 0
    written = [p for p in out.iterdir() if p.name != ".gcbench.lock"] + list((tmp_path / "reports" / "out").iterdir())
    assert written
    assert {oct(p.stat().st_mode & 0o777) for p in written} == {"0o644"}


def _crashing_python(tmp_path, write_first: bool) -> str:
    """A `python` for the runner that runs the real worker in its own process (or not) and
    then dies of SIGSEGV, as a Julia worker's exit hook can (PythonCall issue #764)."""
    script = tmp_path / "python-then-segv"
    body = "import sys\nfrom gcbench import child\nchild.main(sys.argv[3:])\n" if write_first else ""
    script.write_text(f"#!{sys.executable}\nimport os, signal\n{body}os.kill(os.getpid(), signal.SIGSEGV)\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("write_first", [True, False])
def test_a_worker_that_crashes_after_its_result_keeps_the_result(tmp_path, write_first):
    from gcbench.running import runner

    cell = Cell("jax", "mlp", "default", 0, 1, 0, 5, 1, 0, 10)
    out = tmp_path / f"{cell.id}.json"
    python = _crashing_python(tmp_path, write_first)
    if not write_first:  # nothing written before the crash: the cell fails, as ever
        with pytest.raises(runner.CellFailed, match="killed by signal 11"):
            runner.run_worker(cell, out, ["gcbench"], 300, None, python=python)
        assert not out.exists()
        return
    doc = runner.run_worker(cell, out, ["gcbench"], 300, None, python=python)
    assert doc.status == "ok"
    assert len(doc.wall_ns) == 5
    assert doc.reason == "kept: the worker ended with killed by signal 11 after writing this complete result"
    assert "Julia" not in doc.reason  # a JAX worker: the Julia exit hook is not blamed
    julia = tmp_path / "flux.json"
    results.write(dataclasses.replace(doc, backend="flux", cell=doc.cell.replace("jax__", "flux__", 1), reason=""),
                  julia)
    kept = runner._complete_before_crash(julia, -11)
    assert kept is not None
    assert kept.reason.endswith("(a Julia exit hook with several threads: PythonCall issue #764)")
    assert results.load(out).reason == doc.reason  # kept on disk, the crash noted
