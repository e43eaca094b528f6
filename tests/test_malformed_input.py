"""What a user or a broken run can hand gcbench, and what it must survive: malformed
documents refused with one line naming the file and the field, files that are not regular
or not bounded (a FIFO, a sparse giant), names that would inject Markdown or HTML into a
report, a full disk and signals during a report, and what killed or refused commands used
to leave behind."""

from __future__ import annotations

import copy
import json
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from conftest import TINY_RUN, assert_one_line_error, ok_results_folder, run_cli, write_documents
from gcbench.core import files
from gcbench.measuring import results
from gcbench.measuring.cell import Cell
from simulate import docs

INJECTED = "lenet5\n<img src=x>\n\n# Injected heading\n\n[injected link](http:evil.example)"


def _damaged(tmp_path, name, damage):
    base = docs(np.random.default_rng(1), 2, 10.0, steps=40)
    out = []
    for d in base:
        d = copy.deepcopy(d.to_doc())  # the document as a file holds it, damaged
        damage(d)
        out.append(d)
    return write_documents(tmp_path / name, out)


# -- item 9: one schema per document, checked on load --------------------------------------------

@pytest.mark.parametrize(("name", "damage", "fragments"), [
    ("empty-rows", lambda d: d.__setitem__("gc_collections", [[] for _ in d["gc_collections"]]),
     ["gc_collections", "empty rows"]),
    ("zero-wall", lambda d: d.__setitem__("wall_ns", [0] * len(d["wall_ns"])), ["wall_ns", "took no time"]),
    ("command", lambda d: d["metadata"].__setitem__("command", "gcbench run"),
     ["field metadata.command", "expected `array`, got `str`"]),
    ("packages", lambda d: d["metadata"].__setitem__("packages", ["jax"]),
     ["field metadata.packages", "expected `object`, got `array`"]),
    ("cpu-count", lambda d: d["metadata"].__setitem__("cpu_count", "two"), ["field metadata.cpu_count"]),
    ("events", lambda d: d.__setitem__("gc_events", {"step": [1], "generation": [7]}), ["field gc_events"]),
    # issue 65, item 3: each crashed report, export and compare, or was misread without a word
    ("rows-of-4", lambda d: d.__setitem__("gc_collections", [[*r, 0] for r in d["gc_collections"]]),
     ["gc_collections", "rows of 4", "one count per generation"]),
    ("explicit-rows-of-2", lambda d: d.__setitem__("gc_explicit", [[0, 0] for _ in d["wall_ns"]]),
     ["gc_explicit", "rows of 2"]),
    ("warmup-lengths", lambda d: d.__setitem__("warmup", {"wall_ns": [5, 6, 7], "gc_ns": [0, 0]}),
     ["warm-up's per-step arrays differ in length", "wall_ns 3", "gc_ns 2"]),
    ("backend", lambda d: d.__setitem__("backend", "nnx"), ["cell 'jax__mlp__default__r0' does not belong to backend "
                                                            "'nnx'"]),
    ("gc-over-wall", lambda d: d["gc_ns"].__setitem__(3, d["wall_ns"][3] * 37_734), ["step 3 spent",
                                                                                      "longer than the step"]),
    ("true-as-1", lambda d: d["wall_ns"].__setitem__(0, True), ["wall_ns", "true or false where numbers belong"]),
    ("bool-in-rows", lambda d: d["gc_collections"][0].__setitem__(0, False), ["gc_collections", "true or false"]),
    ("version-0", lambda d: d.__setitem__("schema_version", 0), ["schema_version 0 is none gcbench wrote"]),
    ("version-minus-1", lambda d: d.__setitem__("schema_version", -1), ["schema_version -1"]),
    ("spec-steps", lambda d: d.__setitem__("cell_spec", {"steps": 999}), ["cell_spec.steps is 999",
                                                                         "the result holds 40 steps"]),
])
def test_a_malformed_result_names_its_file_and_field(tmp_path, name, damage, fragments):
    folder = _damaged(tmp_path, name, damage)
    other = shutil.copytree(folder, tmp_path / f"{name}-copy")
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")], ["export", str(folder), "--csv"],
                 ["compare", str(folder), str(other)]):
        assert_one_line_error(run_cli(*args), "jax__mlp__default__r0.json", *fragments)


def test_a_key_given_twice_is_refused(tmp_path):
    """Issue 65, item 3: Python's json keeps the last of two equal keys without a word."""
    folder = _damaged(tmp_path, "twice", lambda d: None)
    path = folder / "jax__mlp__default__r0.json"
    text = path.read_text()
    path.write_text(text.replace('"status":', '"status": "failed", "status":', 1))
    assert_one_line_error(run_cli("report", str(folder), "--out", str(tmp_path / "rep")),
                          "jax__mlp__default__r0.json", "the key 'status' is given twice in one object")
    assert not (tmp_path / "rep").exists()


def test_a_malformed_explain_entry_is_one_line(tmp_path):
    folder = write_documents(tmp_path / "res", docs(np.random.default_rng(2), 2, 10.0, steps=40))
    (folder / "explain.json").write_text(json.dumps({"format": "gcbench-explain", "schema_version": 1,
                                                     "explanations": [{"cell": "jax/mlp/default"}]}))
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "rep"))
    assert_one_line_error(proc, "explain.json")


# -- item 12: names that would inject into a report -------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [("workload", INJECTED), ("workload", "a/b"),
                                            ("backend", "[x](http:evil)"),
                                          ("gc_policy", "<script>")])
def test_names_that_would_inject_are_refused_where_they_are_read(tmp_path, field, value):
    folder = _damaged(tmp_path, "res", lambda d: d.__setitem__(field, value))
    assert_one_line_error(
        run_cli("report", str(folder), "--out", str(tmp_path / "rep")), f"field {field}: expected `str` matching regex"
    )
    assert not (tmp_path / "rep").exists()


def test_text_that_reaches_a_report_is_escaped_where_it_is_written(tmp_path):
    """A title and a reason are free text: shown, never interpreted as Markdown or HTML."""
    folder = write_documents(tmp_path / "res", docs(np.random.default_rng(3), 2, 10.0, steps=40))
    cell = Cell("nnx", "mlp", "default", 0, 2, 4992, 40, 2, 0, 10)
    reason_doc = results.new(cell, "unavailable", reason="# Injected heading\n[injected link](http:evil.example) "
                             "<img src=x>", data={"kind": "synthetic"})
    (folder / "nnx__mlp__default__r0.json").write_text(json.dumps(reason_doc.to_doc()))
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "rep"),
                   "--title", "Mine\n# Injected title\n[link](http:evil.example)")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "rep" / "index.html").read_text()
    assert html.count("<h1") == 1
    assert "Injected title" in html.split("</h1>")[0]
    assert "<h1>Injected" not in html
    assert "<h2>Injected" not in html
    assert 'href="http:evil' not in html
    assert "<img src=x" not in html


# -- item 11: a full disk and signals while a report is written -------------------------------------

def test_a_full_disk_while_a_report_is_written_is_one_line_and_leaves_nothing(tmp_path, small_disk):
    folder = write_documents(
        tmp_path / "res", docs(np.random.default_rng(4), 3, 10.0, steps=200, full_every=20, pause_ms=5)
    )
    assert_one_line_error(run_cli("report", str(folder), "--out", str(small_disk / "rep")), "No space left on device")
    assert not (small_disk / "rep").exists()


def test_a_refused_run_on_a_full_disk_leaves_no_folder_and_no_lock(small_disk):
    """Item 14: a run that could not write its plan leaves nothing, not even its lock file."""
    (small_disk / "filler").write_bytes(b"x" * (os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize))
    assert_one_line_error(run_cli("run", "--backends", "jax", "--workloads", "mlp", "--networks", "2", "--steps", "5",
                      "--repeats", "1", "--out", str(small_disk / "out")), "No space left on device")
    assert not (small_disk / "out").exists()
    (small_disk / "mine").mkdir()
    assert_one_line_error(run_cli("run", "--backends", "jax", "--workloads", "mlp", "--networks", "2", "--steps", "5",
                      "--repeats", "1", "--out", str(small_disk / "mine")), "No space left on device")
    assert list((small_disk / "mine").iterdir()) == []  # the user's folder stays, empty as it was


RESTORE_SIGINT = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "sys.argv[0] = 'gcbench'; runpy.run_module('gcbench', run_name='__main__')")


@pytest.mark.e2e
@pytest.mark.parametrize(("sig", "code", "said"),
                         [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_during_a_report_from_an_archive_is_one_line_and_leaves_nothing(tmp_path, sig, code, said):
    """Item 11 and 13: Ctrl-C or SIGTERM while a report is drawn; the archive was unpacked into
    a temporary folder, which goes too, and so does the half-built report."""
    folder = write_documents(
        tmp_path / "res",
        docs(np.random.default_rng(5), 3, 10.0, steps=1500, full_every=30, pause_ms=5)
        + docs(np.random.default_rng(6), 3, 12.0, steps=1500, backend="nnx"),
    )
    assert run_cli("report", str(folder), "--out", str(tmp_path / "first")).returncode == 0
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    tmp = pathlib.Path(tempfile.gettempdir())
    for _attempt in range(3):  # on a busy machine this test may see the folder only as the report ends: again
        # Ctrl-C as a terminal delivers it: a process started in the background by a non-interactive
        # shell (a CI script's `cmd &`) inherits SIGINT ignored, and Python then installs no
        # KeyboardInterrupt; the child puts it back before gcbench runs (no preexec_fn: JAX is loaded here)
        proc = subprocess.Popen([sys.executable, "-c", RESTORE_SIGINT, "report", str(tmp_path / "first"), "--out",
                                 str(tmp_path / "again")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        prefix = f"gcbench-results-{proc.pid}-"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and \
                not any(p.name.startswith(prefix) for p in tmp.iterdir()):
            time.sleep(0.02)  # signal once the archive is being unpacked and the report drawn
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            break
        shutil.rmtree(tmp_path / "again")  # it finished before the signal: a whole report, not this test's case
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines() == [f"gcbench: {said}"], err
    assert not any(p.name.startswith(prefix) for p in tmp.iterdir())
    assert not (tmp_path / "again").exists()


# -- item 13: what killed runs left behind is swept -------------------------------------------------

def test_an_interrupted_command_removes_its_own_temporary_files_and_no_others():
    """An interrupt can land between a temporary folder's creation and the registration of
    its cleanup (seen under load: the unpacked archive stayed after status 130); a command that
    ends interrupted removes what carries its own process id, of every kind, and nothing else."""
    tmp = pathlib.Path(tempfile.gettempdir())
    mine = [tmp / f"gcbench-results-{os.getpid()}-t1", tmp / f"gcbench-jax-cache-{os.getpid()}-t2"]
    theirs = [tmp / f"gcbench-results-{os.getpid() + 1}-t3", tmp / f"gcbench-chromium-{os.getpid()}x"]
    for path in mine + theirs:
        path.mkdir()
    (mine[0] / "a.json").write_text("{}")
    try:
        assert files.remove_own_temps() >= 2
        assert not any(p.exists() for p in mine)
        assert all(p.exists() for p in theirs)
    finally:
        for path in mine + theirs:
            shutil.rmtree(path, ignore_errors=True)


def test_temporary_files_of_killed_processes_are_swept_and_living_ones_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tmp = pathlib.Path(tempfile.gettempdir())
    left = {"jax-cache": tmp / f"gcbench-jax-cache-{dead.pid}-abc", "results": tmp / f"gcbench-results-{dead.pid}-abc"}
    for path in left.values():
        path.mkdir()
        (path / "inside").write_text("x")
    stderr_file = tmp / f"gcbench-stderr-{dead.pid}-abc.txt"
    stderr_file.write_text("x")
    alive = tmp / f"gcbench-stderr-{os.getpid()}-mine.txt"
    alive.write_text("x")
    try:
        assert files.sweep_stale_temps("jax-cache") >= 1
        assert files.sweep_stale_temps("results") >= 1
        assert files.sweep_stale_temps("stderr") >= 1
        assert not any(p.exists() for p in [*left.values(), stderr_file])
        assert alive.exists()  # this process is alive: its files are its own
    finally:
        alive.unlink(missing_ok=True)


def test_the_lock_file_goes_with_the_lock_and_a_second_taker_is_refused(tmp_path):
    with files.FolderLock(tmp_path, "busy"):
        assert (tmp_path / files.LOCK_NAME).exists()
        with pytest.raises(files.UsageError, match="busy"):
            with files.FolderLock(tmp_path, "busy"):
                pass
    assert not (tmp_path / files.LOCK_NAME).exists()
    with files.FolderLock(tmp_path, "busy"):  # and it can be taken again
        pass


def test_a_sparse_huge_document_is_refused_before_it_is_read(tmp_path):
    folder = ok_results_folder(tmp_path / "res")
    with open(folder / "jax__mlp__default__r9.json", "wb") as f:
        f.truncate(3 * 2**30)  # 3 GiB, sparse: nothing on disk
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "rep"), timeout=60)
    assert_one_line_error(proc, "jax__mlp__default__r9.json", "over the 256 MiB")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
def test_a_fifo_named_like_a_document_never_hangs(tmp_path):
    folder = ok_results_folder(tmp_path / "res")
    os.mkfifo(folder / "jax__mlp__default__r2.json")
    other = ok_results_folder(tmp_path / "other")
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")], ["compare", str(folder), str(other)],
                 ["run", *TINY_RUN, "--repeats", "3", "--resume", "--out", str(folder)]):
        assert_one_line_error(run_cli(*args, timeout=60), "jax__mlp__default__r2.json", "not a regular file")
    assert stat.S_ISFIFO((folder / "jax__mlp__default__r2.json").stat().st_mode)


def test_a_cell_id_too_long_for_a_file_name_is_one_line(tmp_path):
    folder = ok_results_folder(tmp_path / "res")
    plan = {"format": "gcbench-suite", "schema_version": 2, "cells": ["jax__" + "m" * 260], "state": "finished"}
    (folder / "suite.json").write_text(json.dumps(plan))
    assert_one_line_error(run_cli("status", str(folder)), "suite.json", "cells")
