"""The second hostile pass, data loss first: every case here lost or overwrote data before
its fix (issue 20, items 1-8 and the leftovers of 13-16 that touch data). Each refusal is
one line on standard error with exit code 2, and what was there is still there."""

from __future__ import annotations

import dataclasses
import io
import json
import multiprocessing
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import gcbench
from conftest import assert_one_line_error, copy_of, fake_job_controller, run_cli, write_documents
from gcbench.core import files
from gcbench.measuring import results
from gcbench.publishing.report import MARKER, build_report
from simulate import docs


def _save(folder, start, name="race", explain=False):
    start.wait()
    with gcbench.measure(name, explain=explain) as m:
        for _ in range(20):
            with m.step():
                [[] for _ in range(5)]
    m.save(folder)


def _race(calls: list[tuple], timeout: float = 60) -> None:
    """Fresh processes that each `_save(folder, start, *rest)` for one of `calls`, all
    released at once; each must end well. Spawned, not forked: the test's process may hold
    JAX's threads, which a forked child (whose measurement asks JAX for its devices) can
    deadlock on."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_save, args=(folder, start, *rest)) for folder, *rest in calls]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0


def test_concurrent_saves_of_a_measured_loop_lose_no_repeat(tmp_path):
    """Item 1: six processes save into one folder at once; all six repeats are there."""
    _race([(tmp_path,)] * 6)
    assert sorted(d.repeat for d in results.load_dir(tmp_path)) == list(range(6))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def _report(tmp_path, name="rep"):
    res = write_documents(tmp_path / "res", docs(np.random.default_rng(0), 2, 10.0, steps=60))
    out = tmp_path / name
    build_report(res, out)
    return res, out


def test_a_copied_marker_does_not_make_a_users_files_ours(tmp_path):
    """Item 2: a marker copied from a real report into a user's folder owns nothing there."""
    res, rep = _report(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.md").write_text("my notes")
    (mine / "results.tar.gz").write_bytes(b"my data")
    shutil.copy(rep / MARKER, mine / MARKER)
    assert_one_line_error(run_cli("report", str(res), "--out", str(mine)), "did not write")
    assert (mine / "index.md").read_text() == "my notes"
    assert (mine / "results.tar.gz").read_bytes() == b"my data"


@pytest.mark.parametrize("listed", [["thesis.txt"], [".bashrc"], [".."], ["../res/jax__mlp__default__r0.json"],
                                    ["photos.tar"]])
def test_a_forged_marker_deletes_nothing(tmp_path, listed):
    res, rep = _report(tmp_path)
    (rep / "thesis.txt").write_text("years of work")
    (rep / ".bashrc").write_text("alias")
    (rep / "photos.tar").write_bytes(b"photos")
    (rep / MARKER).write_text(json.dumps({"format": "gcbench-report-folder", "files": listed}))
    before = {p.name: p.read_bytes() for p in (tmp_path / "res").iterdir()}
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "not a file gcbench writes")
    assert (rep / "thesis.txt").read_text() == "years of work"
    assert (rep / ".bashrc").exists()
    assert (rep / "photos.tar").exists()
    assert {p.name: p.read_bytes() for p in (tmp_path / "res").iterdir()} == before


def test_a_file_changed_since_the_report_was_written_is_not_replaced(tmp_path):
    res, rep = _report(tmp_path)
    (rep / "index.md").write_text("edited by hand")
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "index.md", "changed since")
    assert (rep / "index.md").read_text() == "edited by hand"
    # an untouched report folder rebuilds in place, and keeps no stale files
    res2, rep2 = _report(tmp_path / "two")
    assert run_cli("report", str(res2), "--out", str(rep2)).returncode == 0


def test_an_older_marker_owns_nothing_and_says_how_to_go_on(tmp_path):
    res, rep = _report(tmp_path)
    (rep / MARKER).write_text(json.dumps({"format": "gcbench-report-folder", "files": ["index.md", "index.html"]}))
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "older gcbench", "--out NEW")


def test_a_stale_staging_folder_of_a_killed_report_is_cleaned(tmp_path):
    """Item 13: a report killed while staging left .gcbench-staging-* inside its folder."""
    res, rep = _report(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # the killed report's process is gone
    (rep / f".gcbench-staging-{dead.pid}-abc123").mkdir()
    (rep / f".gcbench-staging-{dead.pid}-abc123" / "index.md").write_text("half")
    assert run_cli("report", str(res), "--out", str(rep)).returncode == 0
    assert not list(rep.glob(".gcbench-staging-*"))


def test_a_reused_report_folder_does_not_keep_the_old_title(tmp_path):
    """Item 16: the title is kept by a rebuild in place, not by a report of other results."""
    res, rep = _report(tmp_path)
    assert run_cli("report", str(res), "--out", str(rep), "--title", "First title").returncode == 0
    assert run_cli("report", str(rep)).returncode == 0  # in place: the title it was published with
    assert (rep / "index.md").read_text().startswith("# First title")
    other = write_documents(tmp_path / "other", docs(np.random.default_rng(1), 2, 10.0, steps=60, backend="nnx"))
    assert run_cli("report", str(other), "--out", str(rep)).returncode == 0
    # a report of other results gets its own title: the question it answers, then its folder
    assert (rep / "index.md").read_text().splitlines()[0].endswith("(other)")


RUN = ["--backends", "jax", "--workloads", "mlp", "--gc", "default", "--repeats", "1", "--networks", "1",
       "--steps", "5", "--warmup", "1", "--no-progress"]


def test_resume_never_replaces_a_result_it_cannot_read(tmp_path):
    """Item 3: a newer schema, a corrupt file or one without permission stays as it is."""
    out = tmp_path / "out"
    out.mkdir()
    target = out / "jax__mlp__default__r0.json"
    for content in (json.dumps({"format": "gcbench-result", "schema_version": 99}), "{not json"):
        target.write_text(content)
        assert_one_line_error(run_cli("run", *RUN, "--out", str(out), "--resume"), "--resume would replace", "--force")
        assert target.read_text() == content
        assert not (out / "suite.json").exists()  # refused before the plan was written


def test_explain_refuses_a_folder_that_another_gcbench_holds(tmp_path):
    """Item 4: explain merges into explain.json; not beside a run, nor beside another explain."""
    with files.FolderLock(tmp_path, "busy"):
        assert_one_line_error(
            run_cli("explain", "jax/mlp/default", "--out", str(tmp_path)), "in use by another gcbench"
        )


def test_explain_validates_before_it_makes_its_folder(tmp_path):
    """Item 14: a refused explain leaves no folder behind."""
    out = tmp_path / "never"
    assert_one_line_error(run_cli("explain", "jax/mlp/default", "--site-steps", "0", "--out", str(out)), "--site-steps")
    assert not out.exists()


def test_export_never_overwrites_its_input(tmp_path):
    """Item 5: the output may not be the input, a file inside it, or an existing document or archive."""
    res, rep = _report(tmp_path)
    result = next(res.glob("*.json"))
    before = result.read_bytes()
    assert_one_line_error(
        run_cli("export", str(result.parent), "--csv", "--out", str(result)), "inside the input folder"
    )
    assert_one_line_error(run_cli("export", str(rep / "results.tar.gz"), "--csv", "--out", str(rep / "results.tar.gz")),
              "is the input")
    assert_one_line_error(
        run_cli("export", str(res), "--csv", "--out", str(rep / "results.tar.gz")), "existing archive"
    )
    assert result.read_bytes() == before
    ok = run_cli("export", str(rep), "--csv", "--out", str(tmp_path / "steps.csv"))
    assert ok.returncode == 0
    assert (tmp_path / "steps.csv").read_text().count("\n") == 121


def test_an_archive_with_a_member_twice_is_refused(tmp_path):
    """Item 6: the last of two members with one name would win silently."""
    res, _rep = _report(tmp_path)
    first = next(res.glob("*.json"))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for data in (first.read_bytes(), first.read_bytes().replace(b'"repeat":0', b'"repeat":0 ')):
            info = tarfile.TarInfo(first.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    bad = tmp_path / "dup.tar.gz"
    bad.write_bytes(buf.getvalue())
    assert_one_line_error(run_cli("report", str(bad), "--out", str(tmp_path / "r2")), "appears twice")
    assert not (tmp_path / "r2").exists()


def test_an_archive_member_too_large_to_read_is_refused_before_reading(tmp_path):
    """Item 10: a member of zeros just over the limit (a few hundred KiB compressed; the probe used 2 GiB)
    is refused by its header, before anything is read."""
    from gcbench.publishing import archive

    bad = tmp_path / "big.tar.gz"
    with tarfile.open(bad, mode="w:gz") as tar:
        info = tarfile.TarInfo("jax__mlp__default__r0.json")
        info.size = archive.MEMBER_LIMIT + 2**20

        class Zeros(io.RawIOBase):
            left = info.size

            def readable(self):
                return True

            def readinto(self, b):
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        tar.addfile(info, io.BufferedReader(Zeros(), 1 << 20))
    assert_one_line_error(run_cli("compare", str(bad), str(copy_of(bad))), "over the")


def test_a_folder_with_an_archive_and_results_of_its_own_is_refused(tmp_path):
    """Item 7: one of the two would be read and the other silently ignored."""
    res, rep = _report(tmp_path)
    shutil.copy(next(res.glob("*.json")), rep)
    for cmd in (["report", str(rep), "--out", str(tmp_path / "r3")], ["export", str(rep), "--csv"],
                ["compare", str(rep), str(res)]):
        assert_one_line_error(run_cli(*cmd), "holds both results.tar.gz and 1 JSON documents")
    clean = _report(tmp_path / "b")[1]
    assert_one_line_error(run_cli("run", *RUN, "--out", str(clean)), "holds results.tar.gz")


def test_force_with_another_plan_refuses_to_mix_old_cells_in(tmp_path):
    """Item 8: --force replaces the plan's results; others would be mixed into its report."""
    out = write_documents(tmp_path / "out", docs(np.random.default_rng(2), 1, 10.0, steps=60, backend="nnx"))
    assert_one_line_error(
        run_cli("run", *RUN, "--out", str(out), "--force"), "not in this plan", "nnx__mlp__default__r0.json"
    )
    assert (out / "nnx__mlp__default__r0.json").exists()


@pytest.mark.slow
def test_force_whose_new_cell_failed_exits_1_and_says_the_old_result_was_kept(tmp_path):
    """Item 8: a failed attempt keeps the earlier ok result, and the run says so and fails."""
    out = tmp_path / "out"
    earlier = docs(np.random.default_rng(3), 1, 10.0, steps=5)[0]
    write_documents(out, [earlier])
    before = (out / "jax__mlp__default__r0.json").read_bytes()
    proc = run_cli("run", *RUN, "--steps", "1000000", "--timeout", "1", "--out", str(out), "--force")
    assert proc.returncode == 1, proc.stderr
    assert "failed this time and their earlier ok results were kept" in proc.stdout + proc.stderr
    assert "0 ok, 1 failed" in proc.stdout + proc.stderr
    assert (out / "jax__mlp__default__r0.json").read_bytes() == before


def test_a_step_that_raised_is_not_a_timed_step_and_steps_do_not_nest():
    """Item 16: the measure API records only steps that finished, one at a time."""
    with gcbench.measure("loop") as m:
        for i in range(10):
            try:
                with m.step():
                    if i % 3 == 0:
                        raise ValueError("a bad batch")
            except ValueError:
                pass
        with pytest.raises(gcbench.UsageError, match="does not nest"):  # noqa: PT012 - the nesting is the case
            with m.step():
                with m.step():
                    pass
    assert m.steps == 6
    assert m.raised == 5
    doc = m.result()
    assert len(doc.wall_ns) == 6
    assert doc.probe["steps_raised"] == 5
    with pytest.raises(gcbench.UsageError, match="capacity must be an integer from 1 to 10,000,000"):
        gcbench.measure("big", capacity=10**8)


@pytest.mark.parametrize(("args", "fragment"), [
    (["run", "--backends", ""], "--backends is empty"),
    (["run", "--gc", ""], "--gc is empty"),
    (["reproduce", "--only", ""], "--only is empty"),
    (["reproduce", "--steps", "0"], "--steps must be a positive integer"),
    (["reproduce", "--repeats", "0"], "--repeats must be a positive integer"),
    (["reproduce", "--batch-size", "0"], "--batch-size must be a positive integer"),
    (["reproduce", "--steps", "-1"], "--steps must be a positive integer"),
    (["reproduce", "--timeout", "nan"], "--timeout must be a positive, finite number"),
    (["run", "--timeout", "-1"], "timeout must be a positive, finite number"),
    (["run", "--timeout", "nan"], "timeout must be a positive, finite number"),
    (["run", "--gc", "manual:²"], "manual:K needs a positive integer"),
    (["run", "--gc", "manual:" + "9" * 5000], "manual:K needs a positive integer"),
    (["bisect", "--package", "equinox", "--versions", "0.13.2", "--cell", "equinox-filter/vit/default",
      "--factor", "inf"], "--factor must be a finite number"),
    (["memory", "--index-dtype", "int8", "--size", "seed", "--no-measure"], "cannot hold N = 128"),
    (["memory", "--size", "3000,1", "--index-dtype", "int16", "--no-measure"], "32-bit indices"),
])
def test_empty_zero_and_out_of_range_values_are_refused_at_once(tmp_path, args, fragment):
    """Items 11 and 15: an empty list or a zero never means "all" or "the default"."""
    out = tmp_path / "out"
    assert_one_line_error(run_cli(*args, "--out", str(out)), fragment)
    assert not out.exists()


def test_an_empty_or_deeply_nested_suite_file_is_one_line(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert_one_line_error(run_cli("run", "--suite", str(empty), "--out", str(tmp_path / "o")), "empty suite file")
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert_one_line_error(run_cli("run", "--suite", str(deep), "--out", str(tmp_path / "o")), "invalid TOML")
    nested = tmp_path / "res"
    nested.mkdir()
    (nested / "jax__mlp__default__r0.json").write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line_error(run_cli("report", str(nested), "--out", str(tmp_path / "r")), "nested too deeply")


def test_a_non_utf8_title_and_folder_are_shown_not_a_crash(tmp_path):
    """Item 11: undecodable bytes in a folder name or a title."""
    res = write_documents(tmp_path / "res", docs(np.random.default_rng(4), 2, 10.0, steps=60))
    out = os.fsencode(tmp_path) + b"/rep-\xff"
    proc = run_cli("report", str(res), "--out", os.fsdecode(out), "--title", os.fsdecode(b"caf\xe9"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert b"caf\\xe9" in (pathlib.Path(os.fsdecode(out)) / "index.md").read_bytes()


def test_concurrent_explanations_are_all_kept(tmp_path):
    """Five loops explained at once into one folder keep five explanations (explain.json is
    read, changed and written under its lock; without it, 3 or 4 of 5 survived)."""
    _race([(tmp_path, f"loop{i}", True) for i in range(5)])
    kept = json.loads((tmp_path / "explain.json").read_text())["explanations"]
    assert sorted(e["cell"]["workload"] for e in kept) == [f"loop{i}" for i in range(5)]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no lock file left behind


def test_a_detached_local_job_of_a_relative_out_is_seen_running(tmp_path, monkeypatch):
    """A submission stored with a relative folder (D1/.gcbench-jobs) is found in its job
    controller's command line, which holds the absolute path: `status` counts it and a
    second `run --force` into the folder is refused while it runs (it was let in, and the
    detached jobs then rewrote its results)."""
    from gcbench.running import cluster

    monkeypatch.chdir(tmp_path)
    jobs = pathlib.Path("D1") / ".gcbench-jobs"
    jobs.mkdir(parents=True)
    live = fake_job_controller(jobs.absolute())
    try:
        sub = cluster.Submission("submitit-local", "r", str(jobs), "2026-11-25T10:00:00+00:00",
                                 [cluster.JobArray([str(live.pid)], [[]], 1)])
        assert cluster.live_jobs(sub) == 1
        assert cluster.live_jobs(dataclasses.replace(sub, folder=str(jobs.absolute()))) == 1
        assert cluster.live_jobs(dataclasses.replace(sub, folder="D2/.gcbench-jobs")) == 0  # another folder's
    finally:
        live.kill()
        live.wait()


@pytest.mark.e2e
def test_force_replaces_the_plans_own_replacement_repeats(tmp_path):
    """`run --force` of the same plan is not refused because an earlier run of it measured a
    replacement repeat (r2 of a 2-repeat plan); the stale replacement goes, the others'
    results would still be refused."""
    from gcbench.flows import pipeline
    from gcbench.measuring.cell import Cell

    cells = [Cell("jax", "mlp", "default", r, 1, 0, 5, 1, 0, 10) for r in range(2)]
    assert pipeline.replacement_of("jax__mlp__default__r2", cells)
    assert pipeline.replacement_of("jax__mlp__default__r3", cells)
    assert not pipeline.replacement_of("jax__mlp__default__r1", cells)  # planned, not a replacement
    assert not pipeline.replacement_of("nnx__mlp__default__r2", cells)  # another cell's
    assert not pipeline.replacement_of("jax__mlp__disable__r2", cells)
    out = tmp_path / "res"
    first = run_cli("run", "--backends", "jax", "--workloads", "mlp", "--networks", "1", "--steps", "5",
                    "--gc", "default", "--repeats", "2", "--out", str(out), "--no-progress")
    assert first.returncode == 0, first.stderr
    stale = json.loads((out / "jax__mlp__default__r1.json").read_text())
    stale.update(repeat=2, cell="jax__mlp__default__r2")
    (out / "jax__mlp__default__r2.json").write_text(json.dumps(stale))
    again = run_cli("run", "--backends", "jax", "--workloads", "mlp", "--networks", "1", "--steps", "5",
                    "--gc", "default", "--repeats", "2", "--out", str(out), "--force", "--no-progress")
    assert again.returncode == 0, again.stderr
    assert not (out / "jax__mlp__default__r2.json").exists()
    assert sorted(d.repeat for d in results.load_dir(out) if d.gc_policy == "default") == [0, 1]


def test_a_linked_suite_json_is_never_followed(tmp_path):
    """Issue 65, item 4: a suite.json that is a link made `run --resume` write outside --out.
    Reading one is refused in one line; the plan gcbench writes replaces a link, never the
    file it points to."""
    from gcbench.measuring import plans

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    target = elsewhere / "suite.json"
    target.write_text('{"not": "mine"}')
    (out / "suite.json").symlink_to(target)
    assert_one_line_error(run_cli("run", *RUN, "--out", str(out), "--resume"), "suite.json is a symbolic link")
    assert_one_line_error(run_cli("status", str(out)), "suite.json is a symbolic link")
    assert target.read_text() == '{"not": "mine"}'
    assert not [p for p in elsewhere.iterdir() if p.name != "suite.json"]
    plans.write(out, plans.Plan(cells=["jax/mlp/default"]))
    assert not (out / "suite.json").is_symlink()
    assert target.read_text() == '{"not": "mine"}'
