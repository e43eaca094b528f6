"""The third hostile pass (issue 31): the scheduler path, git refs, and what was still
deleted or read whole. One test per item of the issue, each on the smallest input that
showed the fault; `benchmarks/hostile.py` runs the same cases as a hostile user's session."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import stat
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest

from gcbench.running import cluster
from gcbench.core import files
from gcbench.analysing import gitbisect
from gcbench.measuring import results
from gcbench.core.errors import UsageError
from gcbench.publishing.report import document
from conftest import assert_one_line_error, fake_job_controller, run_cli, write_documents
from simulate import docs

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = ["--backends", "jax", "--workloads", "mlp", "--gc", "default", "--networks", "2", "--steps", "5",
        "--warmup", "1", "--no-progress"]


def _folder_of_ok_results(path: pathlib.Path, repeats: int = 2, steps: int = 30) -> pathlib.Path:
    return write_documents(path, docs(np.random.default_rng(7), repeats, 10.0, steps=steps))


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _repo(tmp_path, pyproject: str) -> pathlib.Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pyproject.toml").write_text(pyproject)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "one")
    return repo


# -- 1. --force on a scheduler counts the failures it hides ------------------------------------

@pytest.mark.slow
def test_forced_scheduler_run_that_fails_everywhere_says_so_and_exits_1(tmp_path):
    pytest.importorskip("submitit")
    out = _folder_of_ok_results(tmp_path / "copy")
    before = {p.name: p.read_bytes() for p in out.glob("*.json")}
    proc = run_cli("run", *TINY, "--repeats", "2", "--force", "--timeout", "0.5", "--executor", "submitit-local",
                   "--out", str(out), timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert "2 runs in" in text and "0 ok, 2 failed" in text, text
    assert "2 runs failed this time and their earlier ok results were kept" in text
    assert {p.name: p.read_bytes() for p in out.glob("jax__*.json")} == \
        {k: v for k, v in before.items() if k.startswith("jax__")}  # the earlier ok results stay


# -- 2 and 18. detached local jobs are seen; a plan whose jobs ended says so ---------------------

def test_a_detached_local_job_that_still_runs_keeps_others_out_and_status_sees_it_end(tmp_path):
    out = _folder_of_ok_results(tmp_path / "d1")
    jobs_dir = out / cluster.JOBS_DIR
    jobs_dir.mkdir()
    live = fake_job_controller(jobs_dir)
    try:
        record = {"executor": "submitit-local", "run_id": "r", "folder": str(jobs_dir), "command": ["gcbench"],
                  "cells": [], "submitted": "2026-11-25T10:00:00+00:00",
                  "arrays": [{"round": 1, "jobs": [str(live.pid)], "cells": [[]]}]}
        files.write_json(jobs_dir / cluster.JOBS_FILE, record)
        files.write_json(out / "suite.json", {"format": "gcbench-suite", "schema_version": 2, "cells": [],
                                              "state": "submitted", "started": "x", "runs": [{"started": "x"}]})
        assert_one_line_error(run_cli("run", *TINY, "--force", "--out", str(out)),
                              "1 jobs of its submission", "still queued or running", f"kill {live.pid}")
        st = json.loads(run_cli("status", str(out), "--json").stdout)
        assert st["submission"]["queued_or_running"] == 1 and st["state"] == "submitted"
    finally:
        live.kill()
        live.wait()
    proc = run_cli("status", str(out))
    assert proc.returncode == 0 and "0 jobs running" in proc.stdout, proc.stdout + proc.stderr
    assert json.loads((out / "suite.json").read_text())["state"] == "finished"  # not "submitted" for ever


def test_a_reused_process_id_is_not_taken_for_a_live_job(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not cluster._local_job_alive(str(other.pid), str(tmp_path))
        assert not cluster._local_job_alive("not-a-pid", str(tmp_path))
    finally:
        other.kill()
        other.wait()


def test_status_shows_a_folder_name_with_escapes_escaped(tmp_path):
    out = _folder_of_ok_results(tmp_path / "x\x1b[31mred")
    proc = run_cli("status", str(out))
    assert proc.returncode == 2 and "\x1b" not in proc.stderr and "\\x1b[31mred" in proc.stderr  # no plan: refused
    (out / "suite.json").write_text(json.dumps({"format": "gcbench-suite", "schema_version": 2, "state": "finished",
                                                "cells": ["jax__mlp__default__r0"]}))
    proc = run_cli("status", str(out))
    assert proc.returncode == 0 and "\x1b" not in proc.stdout and "\\x1b[31mred" in proc.stdout


# -- 3. a report never pools repeats with different settings ------------------------------------

def test_repeats_with_different_settings_are_refused_not_pooled(tmp_path):
    long = docs(np.random.default_rng(1), 2, 10.0, steps=400)
    short = docs(np.random.default_rng(2), 2, 10.0, steps=5)
    folder = write_documents(tmp_path / "mix", [long[0], short[1]])
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")], ["compare", str(folder), str(folder)]):
        assert_one_line_error(run_cli(*args), "jax/mlp/default", "differ in steps", "400 in repeat 0",
                              "5 in repeat 1")
    assert not (tmp_path / "rep").exists()


# -- 4 and 6. a commit bisect keeps to its folder, and refs are never options -------------------

def test_a_commit_bisect_refuses_another_runs_folder(tmp_path):
    run_folder = _folder_of_ok_results(tmp_path / "run")
    before = sorted(p.name for p in run_folder.iterdir())
    base = ["bisect", "--git", str(tmp_path / "nowhere"), "--good", "v1", "--bad", "v2", "--cell", "jax/mlp/default"]
    assert_one_line_error(run_cli(*base, "--out", str(run_folder)), "not a commit bisect's", "new or empty folder")
    assert_one_line_error(run_cli(*base, "--out", str(run_folder), "--resume"), "not a commit bisect's")
    assert sorted(p.name for p in run_folder.iterdir()) == before


@pytest.mark.parametrize("option", ["--bad=--output=OUT", "--good=-n"])
def test_a_ref_that_is_an_option_is_refused_before_git_sees_it(tmp_path, option):
    repo = _repo(tmp_path, '[project]\nname = "toy"\n')
    option = option.replace("OUT", str(tmp_path / "x"))
    args = {"--good": "HEAD", "--bad": "HEAD"}
    name, value = option.split("=", 1)
    args[name] = value
    proc = run_cli("bisect", "--git", str(repo), "--good", "HEAD", "--bad", "HEAD", option, "--cell", "jax/mlp/default",
                   "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "is not a git ref")
    assert not list(tmp_path.glob("x*"))
    with pytest.raises(UsageError, match="is not a git ref"):
        gitbisect.commit(repo, "--output=" + str(tmp_path / "y"))
    assert not list(tmp_path.glob("y*"))
    assert gitbisect.commit(repo, "HEAD").sha == _git(repo, "rev-parse", "HEAD").strip()


# -- 7. the results folder never reaches a batch script raw ------------------------------------

@pytest.mark.parametrize("name", ["a\ntouch INJECTED", "logs-%j", "tab\there"])
def test_a_folder_a_batch_script_cannot_name_is_refused(tmp_path, name):
    pytest.importorskip("submitit")
    out = tmp_path / name
    proc = run_cli("run", *TINY, "--executor", "submitit-local", "--out", str(out), cwd=tmp_path)
    assert_one_line_error(proc, "cannot hold", "batch scripts")
    assert not out.exists() and not (tmp_path / "INJECTED").exists()


# -- 8. a package name is a name, not a path --------------------------------------------------

@pytest.mark.parametrize("name", ["/abs/path/evil", "../../escape", "a b", ""])
def test_a_hostile_package_name_is_refused(tmp_path, name):
    repo = _repo(tmp_path, f'[project]\nname = "{name}"\n')
    with pytest.raises(UsageError, match="not a valid distribution name|cannot tell the package"):
        gitbisect.package_name(repo, _git(repo, "rev-parse", "HEAD").strip())


# -- 9. markup from results stays text ---------------------------------------------------------

@pytest.mark.parametrize("text", ["# Injected", "## also", "- item", "+ item", "1. first", "3) third", "---",
                                  "===", "~~~ fence", "  # indented"])
def test_text_that_would_start_a_block_stays_text(tmp_path, text):
    md = document.to_markdown([document.Para(document.escape(text)),
                               document.Bullets([document.escape(text), "files changed: x"])])
    html = document.to_html(md, "t", tmp_path)
    for tag in ("<h1", "<h2", "<ol", "<hr", "<pre", "<h3"):
        assert tag not in html.split("<body>")[-1], (text, md)
    assert html.count("<li>") == 2  # the two bullets, no list inside them


def test_an_executor_name_with_markup_is_refused(tmp_path):
    ds = docs(np.random.default_rng(3), 2, 10.0, steps=30)
    for d in ds:
        d.setdefault("machine_state", {})["scheduler"] = {"executor": "local\n\n# Injected"}
    folder = write_documents(tmp_path / "res", ds)
    assert_one_line_error(run_cli("report", str(folder), "--out", str(tmp_path / "rep")),
                          "machine_state.scheduler.executor")


def test_readme_says_a_commit_bisect_runs_build_code():
    from conftest import documentation_text

    readme = " ".join(documentation_text().split())
    assert "Building a commit runs its build code" in readme and "as you, with your permissions" in readme


# -- 11 and 12. documents are read only when they are regular files of a bounded size -----------

def test_a_sparse_huge_document_is_refused_before_it_is_read(tmp_path):
    folder = _folder_of_ok_results(tmp_path / "res")
    with open(folder / "jax__mlp__default__r9.json", "wb") as f:
        f.truncate(3 * 2**30)  # 3 GiB, sparse: nothing on disk
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "rep"), timeout=60)
    assert_one_line_error(proc, "jax__mlp__default__r9.json", "over the 256 MiB")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
def test_a_fifo_named_like_a_document_never_hangs(tmp_path):
    folder = _folder_of_ok_results(tmp_path / "res")
    os.mkfifo(folder / "jax__mlp__default__r2.json")
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")], ["compare", str(folder), str(folder)],
                 ["run", *TINY, "--repeats", "3", "--resume", "--out", str(folder)]):
        assert_one_line_error(run_cli(*args, timeout=60), "jax__mlp__default__r2.json", "not a regular file")
    assert stat.S_ISFIFO(os.stat(folder / "jax__mlp__default__r2.json").st_mode)


# -- 13. local jobs at once: by cores and memory -----------------------------------------------

def test_local_jobs_at_once_are_capped_by_cores_and_memory():
    cells = list(range(12))
    assert cluster.local_jobs_at_once(cells, 2**30, cores=2, available=16 * 2**30) == 2
    assert cluster.local_jobs_at_once(cells, 2**30, cores=16, available=5 * 2**30) == 5
    assert cluster.local_jobs_at_once(cells, 2**30, cores=16, available=2**29) == 1  # one always runs
    assert cluster.local_jobs_at_once(cells[:3], 2**30, cores=16, available=None) == 3


# -- 14. a manual policy's measurement saves -------------------------------------------------

def test_a_measurement_with_a_manual_policy_saves(tmp_path):
    import gcbench

    with gcbench.measure("loop", policy="manual:5", warmup=1) as m:
        for _ in range(4):
            with m.step():
                [object() for _ in range(50)]
    path = m.save(tmp_path / "res")
    assert path.name == "user__loop__manual-5__r0.json" and results.load(path)["gc_policy"] == "manual:5"


# -- 15. a plan never stays "running" after a failure -----------------------------------------

def test_a_jobs_folder_that_is_a_file_is_one_line_and_leaves_no_running_plan(tmp_path):
    pytest.importorskip("submitit")
    out = tmp_path / "o"
    out.mkdir()
    (out / cluster.JOBS_DIR).write_text("mine")
    proc = run_cli("run", *TINY, "--executor", "submitit-local", "--out", str(out))
    assert_one_line_error(proc, cluster.JOBS_DIR, "is not a folder")
    assert not (out / "suite.json").exists() and (out / cluster.JOBS_DIR).read_text() == "mine"


def _fake_uv(tmp_path, body: bytes) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_bytes(body)
    uv.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", GCBENCH_INSTALLER="uv",
                XDG_CACHE_HOME=str(tmp_path / "cache"))


@pytest.mark.parametrize("body, expect", [
    (b"\x7fELF\x02\x01\x01" + b"\0" * 64, "Exec format error"),  # built for another machine
    (b"#!/bin/sh\nprintf 'bad \\377\\376 bytes\\n'\nexit 3\n", None),  # output that is not UTF-8
])
def test_an_installer_that_breaks_leaves_no_running_plan(tmp_path, body, expect):
    env = _fake_uv(tmp_path, body)
    out = tmp_path / "o"
    proc = run_cli("run", *TINY, "--env", "python=3.11", "--out", str(out), env=env, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr
    if expect:
        assert_one_line_error(proc, expect)
    else:
        assert proc.returncode == 1 and "unavailable" in proc.stdout + proc.stderr
    plan = json.loads((out / "suite.json").read_text()) if (out / "suite.json").exists() else {}
    assert plan.get("state") != "running"


def test_a_bad_installer_choice_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "o"
    proc = run_cli("run", *TINY, "--env", "python=3.11", "--out", str(out),
                   env=dict(os.environ, GCBENCH_INSTALLER="bogus"))
    assert_one_line_error(proc, "GCBENCH_INSTALLER must be uv or pip")
    assert not out.exists()


# -- 16. malformed documents are one line -------------------------------------------------------

def test_a_cell_id_too_long_for_a_file_name_is_one_line(tmp_path):
    folder = _folder_of_ok_results(tmp_path / "res")
    plan = {"format": "gcbench-suite", "schema_version": 2, "cells": ["jax__" + "m" * 260], "state": "finished"}
    (folder / "suite.json").write_text(json.dumps(plan))
    assert_one_line_error(run_cli("status", str(folder)), "suite.json", "cells")


def test_a_plan_with_fewer_labels_than_cells_reports(tmp_path):
    folder = _folder_of_ok_results(tmp_path / "res")
    plan = {"format": "gcbench-suite", "schema_version": 2, "state": "interrupted",
            "cells": ["jax__mlp__default__r0", "jax__mlp__default__r1", "jax__mlp__default__r2"],
            "labels": ["jax/mlp/default r0"]}
    (folder / "suite.json").write_text(json.dumps(plan))
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    assert (
        "never ran: the run was interrupted first | 1 | jax\\_\\_mlp\\_\\_default\\_\\_r2"
        in (tmp_path / "rep" / "index.md").read_text()
    )


def test_repeats_counting_different_generations_are_one_line(tmp_path):
    ds = docs(np.random.default_rng(1), 3, 10.0, steps=40)
    ds[1]["gc_collections"] = [row[:2] for row in ds[1]["gc_collections"]]
    folder = write_documents(tmp_path / "res", ds)
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")], ["compare", str(folder), str(folder)]):
        assert_one_line_error(run_cli(*args), "differ in collector generations")


def test_a_commit_bisect_with_a_culprit_but_no_first_bad_commit_reports(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with tarfile.open(ROOT / "reports/cpu-vit-bisect-equinox-commits/results.tar.gz") as tar:
        tar.extractall(src, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(src)
    plan = json.loads((src / "gitbisect.json").read_text())
    assert plan.get("culprit")
    bad_sha = plan["commits"][-1]["sha"]
    for p in src.glob(f"*equinox-{bad_sha[:9]}-*.json"):  # the bad endpoint's results gone: no first bad commit
        p.unlink()
    proc = run_cli("report", str(src), "--out", str(tmp_path / "rep"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "The first bad commit," not in (tmp_path / "rep" / "index.md").read_text()


# -- 17. interrupts and links ------------------------------------------------------------------

@pytest.mark.slow
def test_ctrl_c_on_local_jobs_is_quiet_and_runs_as_many_jobs_as_cores(tmp_path):
    pytest.importorskip("submitit")
    out = tmp_path / "o"
    argv = [a if a != "5" else "100000" for a in TINY]
    proc = subprocess.Popen([sys.executable, "-m", "gcbench", "run", *argv, "--gc", "default,disable", "--repeats",
                             "2", "--out", str(out), "--executor", "submitit-local"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    record = out / cluster.JOBS_DIR / cluster.JOBS_FILE
    deadline = time.monotonic() + 60
    while not record.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: to the whole process group
    text, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in text, text
    jobs = [j for a in json.loads(record.read_text())["arrays"] for j in a["jobs"]]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert len(jobs) == min(cores, 4), jobs
    assert f"runs {len(jobs)} job" in text and "cancelled" in text


def test_envs_clear_empties_a_linked_envs_folder_and_keeps_the_link(tmp_path):
    real = tmp_path / "big-disk"
    (real / "abc123" / "bin").mkdir(parents=True)
    (real / "abc123" / "bin" / "python").write_text("x")
    cache = tmp_path / "cache" / "gcbench"
    cache.mkdir(parents=True)
    (cache / "envs").symlink_to(real)
    proc = run_cli("envs", "clear", env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache")))
    assert proc.returncode == 0 and "removed 1 environments" in proc.stdout, proc.stderr
    assert (cache / "envs").is_symlink() and real.is_dir() and not any(real.iterdir())


def test_the_package_imports_light_and_measure_is_the_function():
    code = (
        "import sys, gcbench, gcbench.cli; heavy = [m for m in ('scipy', 'numpy', 'jsonschema') if m in sys.modules];"
        "import gcbench.user_loop; print(heavy, callable(gcbench.measure), gcbench.summarize.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True summarize"


def test_ctrl_c_while_the_command_line_loads_is_one_line():
    for delay in (0.05, 0.15, 0.3):  # wherever SIGINT lands while the command line starts: no traceback
        started = subprocess.Popen([sys.executable, "-m", "gcbench", "list"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        started.send_signal(signal.SIGINT)
        out, err = started.communicate(timeout=60)
        assert "Traceback" not in out + err, (delay, err)
        # before the interpreter has set up its own handler, SIGINT simply ends it (-2, nothing printed);
        # under `python -m`, CPython also ends with -2 after gcbench's own line when the interrupt arrived
        # inside an extension module's import (seen while scipy loads; not with the console script):
        # a shell shows 130 for both
        assert started.returncode in (0, 130, -signal.SIGINT), (delay, started.returncode, err)
        assert started.returncode != 130 or err.strip() == "gcbench: interrupted"
        assert started.returncode != -signal.SIGINT or err.strip() in ("", "gcbench: interrupted"), (delay, err)


# -- 18. minor ---------------------------------------------------------------------------------

def test_full_width_letters_in_a_partition_are_refused():
    from gcbench.running.config import Suite

    with pytest.raises(UsageError, match="partition must be a name"):
        Suite(backends=["jax"], workloads=["mlp"], slurm={"partition": "ｇｐｕ"}).validate()


def test_an_empty_out_is_refused(tmp_path):
    for command in (["run", *TINY], ["report", str(_folder_of_ok_results(tmp_path / "r"))]):
        assert_one_line_error(run_cli(*command, "--out", "", cwd=tmp_path), "--out '' names no folder")
    assert not (tmp_path / "results").exists() and not (tmp_path / "reports").exists()


def test_a_bad_archive_member_is_named_in_the_archive(tmp_path):
    folder = tmp_path / "rep"
    folder.mkdir()
    with tarfile.open(folder / "results.tar.gz", "w:gz") as tar:
        path = tmp_path / "jax__mlp__default__r0.json"
        path.write_text('{"format": "gcbench-result", "schema_version": 99}')
        tar.add(path, arcname=path.name)
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, f"{folder / 'results.tar.gz'}, member jax__mlp__default__r0.json")
    assert "gcbench-results-" not in proc.stderr


def test_a_file_url_pin_is_shown_whole():
    from gcbench.measuring.envspec import short_pin

    assert short_pin("jax@file:///etc") == "jax@file:///etc"
    assert short_pin("equinox@file:///c/src/equinox-" + "0277a30" + "e" * 33) == "equinox@0277a30ee"


# -- 5. a marker lists only what a report writes; a user's staging-like folder stays -----------

def _marker_listing(folder: pathlib.Path, name: str) -> None:
    digest = __import__("hashlib").sha256((folder / name).read_bytes()).hexdigest()
    (folder / ".gcbench-report.json").write_text(json.dumps(
        {"format": "gcbench-report-folder", "version": 2,
         "files": {name: {"size": (folder / name).stat().st_size, "sha256": digest}}}))


@pytest.mark.parametrize("name", ["thesis.md", "photo.png", "backup.tar.gz", "notes.html"])
def test_a_marker_listing_a_users_file_is_refused_and_the_file_stays(tmp_path, name):
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / name).write_text("the user's own")
    _marker_listing(rep, name)
    res = _folder_of_ok_results(tmp_path / "res")
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "not a file gcbench writes")
    assert (rep / name).read_text() == "the user's own"


def test_a_users_folder_named_like_staging_is_never_removed(tmp_path):
    rep = tmp_path / "rep"
    (rep / ".gcbench-staging-x").mkdir(parents=True)
    (rep / ".gcbench-staging-x" / "draft.txt").write_text("mine")
    (rep / ".gcbench-staging-1-abc").mkdir()  # a process 1 that is alive: not a killed report's
    res = _folder_of_ok_results(tmp_path / "res")
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "holds files gcbench did not write")
    assert (rep / ".gcbench-staging-x" / "draft.txt").read_text() == "mine" and (
        rep / ".gcbench-staging-1-abc"
    ).is_dir()


def test_a_killed_reports_staging_folder_is_swept(tmp_path):
    rep = tmp_path / "rep"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = rep / f".gcbench-staging-{dead.pid}-k1ll3d"
    stale.mkdir(parents=True)
    (stale / "index.md").write_text("half a report")
    res = _folder_of_ok_results(tmp_path / "res")
    proc = run_cli("report", str(res), "--out", str(rep))
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists() and (rep / "index.md").is_file()
