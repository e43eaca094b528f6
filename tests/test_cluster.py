"""Repeats on a scheduler (`--executor`), through submitit; results of several kinds of node.

The end-to-end tests use submitit's local executor: the code path of `--executor slurm`
(job arrays of `cluster.run_job`, results written by the jobs, the submitting process
waiting and collecting), with jobs as local processes. `test_slurm_one_node` runs the
same against a real one-node SLURM cluster it starts itself (Debian's slurmctld, slurmd
and munge; skipped with the reason when they are absent).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import operator
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest

from conftest import (
    TINY_RUN,
    assert_one_line_error,
    copy_of,
    documentation_text,
    fake_job_controller,
    ok_results_folder,
    run_cli,
    write_documents,
)
from gcbench.analysing import summary
from gcbench.core import files
from gcbench.core.errors import UsageError
from gcbench.measuring import results
from gcbench.running import cluster
from gcbench.running.config import Suite, load_suite
from simulate import docs

pytest.importorskip("submitit")

SMALL = ["--backends", "jax", "--workloads", "mlp", "--gc", "default,disable", "--networks", "2", "--steps", "20",
         "--warmup", "1", "--repeats", "2", "--no-progress"]


# -- options -------------------------------------------------------------------------------------

def test_slurm_table_of_a_suite_becomes_submitit_parameters(tmp_path):
    suite = tmp_path / "gpu.toml"
    suite.write_text('backends = ["jax"]\nworkloads = ["mlp"]\n[slurm]\npartition = "gpu"\ntime = 90\ngpus = 1\n'
                     'account = "ml-lab"\nparallelism = 4\nsbatch = ["--constraint=h100", "#SBATCH --qos high",'
                     ' "--requeue"]\n')
    options = load_suite(str(suite)).slurm_options()
    p = options.parameters("gcbench-x-r1")
    assert p["slurm_partition"] == "gpu"
    assert p["timeout_min"] == 90
    assert p["slurm_gres"] == "gpu:1"
    assert p["slurm_account"] == "ml-lab"
    assert p["slurm_array_parallelism"] == 4
    assert p["slurm_exclusive"] is True
    assert p["slurm_additional_parameters"] == {"constraint": "h100", "qos": "high", "requeue": True}
    assert p["nodes"] == 1
    assert p["tasks_per_node"] == 1

    import argparse

    from gcbench.commands import _common

    args = argparse.Namespace(slurm_partition="a100", slurm_time=None, slurm_gpus=2, slurm_account=None)
    assert _common.slurm_given_on(args) == {"partition": "a100", "gpus": 2}
    merged = options.override(_common.slurm_given_on(args))  # the command line wins over the suite file
    assert (merged.partition, merged.time, merged.gpus, merged.account) == ("a100", 90, 2, "ml-lab")


def test_the_readme_suite_for_a_gpu_partition_is_read_as_it_says(tmp_path):

    example = re.search(r"```toml\n(# gpu-suite.toml.*?)```", documentation_text(), re.S).group(1)
    (tmp_path / "gpu-suite.toml").write_text(example)
    p = load_suite(str(tmp_path / "gpu-suite.toml")).slurm_options().parameters("x")
    assert (p["slurm_partition"], p["slurm_gres"], p["slurm_array_parallelism"]) == ("gpu", "gpu:1", 8)
    assert p["slurm_additional_parameters"] == {"constraint": "h100", "qos": "normal"}


@pytest.mark.parametrize(("table", "message"), [
    ({"partition": "gpu; rm -rf /"}, "partition must be a name"),
    ({"time": 0}, "time must be an integer from 1"),
    ({"gpus": "two"}, "gpus must be an integer"),
    ({"parallelism": True}, "parallelism must be an integer"),
    ({"sbatch": "--constraint=h100"}, "must be a list of lines"),
    ({"sbatch": ["constraint=h100"]}, "is not an sbatch option"),
    ({"sbatch": ["--array=0-9"]}, "gcbench sets --array itself"),
    ({"sbatch": ["--exclusive=user"]}, "gcbench sets --exclusive itself"),
    ({"nodes": 2}, "unknown keys nodes"),
])
def test_bad_slurm_settings_are_refused_in_one_line(table, message):
    with pytest.raises(UsageError, match=message):
        Suite(backends=["jax"], workloads=["mlp"], slurm=table).validate()


def test_rounds_become_arrays_of_near_equal_shares():
    cells = Suite(backends=["jax", "jax-vmap"], workloads=["mlp"], gc=["default", "disable"], repeats=3).cells()
    rounds = cluster.rounds(cells)
    assert [len(r) for r in rounds] == [4, 4, 4]
    assert all({c.repeat for c in r} == {i} for i, r in enumerate(rounds))
    assert [len(s) for s in cluster.chunks(rounds[0], 3)] == [2, 1, 1]
    assert [c.id for s in cluster.chunks(rounds[0], 3) for c in s] == [c.id for c in rounds[0]]  # order kept
    assert [len(s) for s in cluster.chunks(rounds[0], 16)] == [1, 1, 1, 1]


def test_executor_errors_are_one_line(tmp_path, monkeypatch):
    proc = run_cli("run", *SMALL, "--out", str(tmp_path / "o"), "--detach")
    assert proc.returncode == 2
    assert "--detach needs a scheduler" in proc.stderr
    assert "Traceback" not in proc.stderr
    monkeypatch.setenv("PATH", "/nonexistent")
    proc = run_cli("run", *SMALL, "--out", str(tmp_path / "o"), "--executor", "slurm")
    assert proc.returncode == 2
    assert "no sbatch on PATH" in proc.stderr
    assert not (tmp_path / "o").exists()  # refused before anything was written
    proc = run_cli("run", *SMALL, "--out", str(tmp_path / "o"), "--executor", "submitit-local", "--slurm-time", "0")
    assert proc.returncode == 2
    assert "slurm time must be an integer from 1" in proc.stderr


# -- the submitit path, jobs as local processes ---------------------------------------------------

@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster") / "results"
    proc = run_cli("run", *SMALL, "--out", str(out), "--executor", "submitit-local", "--json")
    return out, proc


@pytest.mark.e2e
@pytest.mark.slow
def test_a_submitted_plan_records_its_jobs_and_reports_like_a_local_one(submitted, tmp_path):
    out, proc = submitted
    assert proc.returncode == 0, proc.stderr[-3000:]
    docs = results.load_dir(out)
    assert len(docs) == 4
    assert all(d.status == "ok" for d in docs)
    scheds = [d.machine_state["scheduler"] for d in docs]
    assert {s["executor"] for s in scheds} == {"submitit-local"}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = min(cores, 4)  # submitit-local starts its jobs at once: one array, as many jobs as cores
    assert len({s["job_id"] for s in scheds}) == n
    assert all(s["node"] == socket.gethostname() for s in scheds)
    assert len({d.machine_state["run_id"] for d in docs}) == 1  # one submission: its rounds pair in compare
    sub = json.loads((out / cluster.JOBS_DIR / cluster.JOBS_FILE).read_text())
    assert len(sub["arrays"]) == 1
    assert sum(len(c) for c in sub["arrays"][0]["cells"]) == 4
    assert [c.split("__")[-1] for c in functools.reduce(operator.iadd, sub["arrays"][0]["cells"], [])] == [
        "r0",
        "r0",
        "r1",
        "r1",
    ]  # rounds in order
    assert sorted(j for a in sub["arrays"] for j in a["jobs"]) == sorted({s["job_id"] for s in scheds})
    assert f"submitted {n} job{'s' * (n > 1)} in 1 array" in proc.stderr
    cells = {c["cell"]: c for c in json.loads(proc.stdout)["cells"]}
    assert set(cells) == {"jax/mlp/default", "jax/mlp/disable"}
    assert cells["jax/mlp/default"]["repeats"] == 2
    # status, report and compare read it as any results folder
    st = run_cli("status", str(out))
    assert st.returncode == 0
    assert "4 runs planned (plan finished): 4 ok" in st.stdout
    assert "4 runs measured by them so far" in st.stdout
    rep = run_cli("report", str(out), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "index.md").read_text()
    assert f"- Scheduler: submitit-local; 4 of 4 runs in {n} jobs on 1 node" in md
    assert ".gcbench-jobs" not in "\n".join(n for n in _tar_names(tmp_path / "rep" / "results.tar.gz"))
    assert run_cli("compare", str(out), str(copy_of(out))).returncode == 0


def _tar_names(path):

    with tarfile.open(path) as tar:
        return tar.getnames()


@pytest.mark.e2e
@pytest.mark.slow
def test_resume_submits_only_what_is_missing(submitted, tmp_path):
    out, proc = submitted
    assert proc.returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns(cluster.JOBS_DIR))
    (copy / "jax__mlp__disable__r1.json").unlink()
    before = {p.name: p.read_bytes() for p in copy.glob("jax__*.json")}
    again = run_cli("run", *SMALL, "--out", str(copy), "--executor", "submitit-local", "--resume")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "3 runs kept" in again.stdout
    assert "submitted 1 job in 1 array" in again.stdout
    sub = json.loads((copy / cluster.JOBS_DIR / cluster.JOBS_FILE).read_text())
    assert sub["cells"] == ["jax__mlp__disable__r1"]
    assert all((copy / name).read_bytes() == data for name, data in before.items())  # kept as they were
    assert results.load(copy / "jax__mlp__disable__r1.json").status == "ok"


@pytest.mark.slow
def test_ctrl_c_cancels_what_was_submitted(tmp_path):
    out = tmp_path / "o"
    argv = [a if a != "20" else "100000" for a in SMALL]  # steps: long enough to be stopped while running
    proc = subprocess.Popen([sys.executable, "-m", "gcbench", "run", *argv, "--out", str(out), "--executor",
                             "submitit-local"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    record = out / cluster.JOBS_DIR / cluster.JOBS_FILE
    deadline = time.monotonic() + 60
    while not record.exists():
        assert time.monotonic() < deadline, proc.stdout.read() if proc.poll() else ""
        assert proc.poll() is None, proc.stdout.read() if proc.poll() else ""
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    text, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, text
    jobs = sum(len(a["jobs"]) for a in json.loads(record.read_text())["arrays"])  # as many at once as cores hold
    assert f"cancelled {jobs} submitted job" in text
    assert "interrupted; 0 finished runs kept" in text
    assert json.loads((out / "suite.json").read_text())["state"] == "interrupted"
    time.sleep(2)  # the jobs' workers die with their jobs: nothing writes into the folder any more
    assert not list(out.glob("jax__*.json"))
    assert not list(out.glob(".*partial*"))


class _DeadJob:
    """A job that ended without reporting back (killed, preempted, out of time)."""

    def __init__(self, folder, job_id):
        self.job_id = job_id
        self.paths = type("P", (), {"result_pickle": pathlib.Path(folder) / f"{job_id}_result.pkl"})()

    def done(self):
        return True


@pytest.mark.e2e
def test_a_job_that_died_leaves_its_cells_failed_and_keeps_an_earlier_ok_result(submitted, tmp_path):
    out, _ = submitted
    folder = tmp_path / "r"
    folder.mkdir()
    cells = Suite(backends=["jax"], workloads=["mlp"], gc=["default", "disable"], repeats=1,
                  networks={"mlp": 2}, steps=20, warmup=1).cells()
    kept = results.load(out / f"{cells[0].id}.json")  # an ok result from an earlier run stays
    results.write(kept, folder / f"{cells[0].id}.json")
    record = cluster.Submission("slurm", "new", str(folder / cluster.JOBS_DIR), "2026-11-25T10:00:00+00:00",
                                [cluster.JobArray(["7_0", "7_1"], [[cells[0].id], [cells[1].id]], 1)])
    said = []
    docs = cluster._collect(cells, folder, "new", [_DeadJob(folder, "7_0"), _DeadJob(folder, "7_1")], record,
                            said.append)
    assert docs[0] is not None
    assert docs[0].status == "ok"
    assert docs[1].status == "failed"
    assert "slurm job 7_1 ended without a result" in docs[1].reason
    assert results.load(folder / f"{cells[1].id}.json").status == "failed"  # --resume reruns it
    assert any("job 7_1 failed: it ended without reporting back" in s for s in said)
    assert any("2 runs without a result from its job" in s for s in said)


# -- several kinds of node ------------------------------------------------------------------------

def _on(doc: results.ResultDoc, cpu: str, host: str) -> results.ResultDoc:
    """`doc` as measured on a node of another kind (a copy)."""
    return dataclasses.replace(doc, metadata={**doc.metadata, "cpu": cpu, "hostname": host})


@pytest.mark.e2e
@pytest.mark.slow
def test_repeats_of_different_kinds_of_node_are_never_pooled(submitted, tmp_path):
    out, _ = submitted
    docs = results.load_dir(out)
    mixed = [_on(d, "Xeon A" if d.repeat == 0 else "EPYC B", f"n{d.repeat}") for d in docs]
    cells = summary.summarize_all(mixed)
    assert len(cells) == 4
    assert all(cs.stats.repeats == 1 for cs in cells)
    labels = {cs.label for cs in cells}
    assert "jax/mlp/default on Xeon A x2" in labels
    assert "jax/mlp/default on EPYC B x2" in labels
    records = [summary.record(cs) for cs in cells]
    assert {r["node_type"] for r in records} == {"Xeon A x2", "EPYC B x2"}
    # one kind of node: no split, no node in the label
    same = summary.summarize_all([_on(d, "Xeon A", f"n{d.repeat}") for d in docs])
    assert len(same) == 2
    assert all(cs.stats.repeats == 2 and " on " not in cs.label for cs in same)
    # the report shows them side by side and says they are not pooled
    folder = tmp_path / "mixed"
    folder.mkdir()
    for d in mixed:
        results.write(d, folder / f"{d.cell}.json")
    rep = run_cli("report", str(folder), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "index.md").read_text()
    assert "Machines: 2 kinds, whose repeats are never pooled" in md
    assert "Xeon A x2 (2 runs on 1 node: n0)" in md
    assert "| jax/mlp/default on EPYC B x2 |" in md
    # compare pairs a cell with the same cell on the same kind of node, and says why
    c = run_cli("compare", str(folder), str(copy_of(folder)), "--json")
    assert c.returncode == 0, c.stderr
    doc = json.loads(c.stdout)
    assert len(doc["rows"]) == 4
    assert any("several kinds of machine (2 in A, 2 in B)" in n for n in doc["notes"])


# -- a real one-node SLURM cluster ----------------------------------------------------------------

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sacct")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _find(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.access(p, os.X_OK)),
                                      None)


@pytest.fixture
def one_node_slurm(tmp_path):
    """munged, slurmctld and slurmd for this host, as this test's own processes, with job
    completion records in a text file (`sacct -c` reads them; no database needed)."""
    missing = [d for d in DAEMONS if _find(d) is None]
    if missing:
        pytest.skip(f"SLURM is not installed here ({', '.join(missing)} missing; Debian: apt-get install "
                    "slurmctld slurmd slurm-client munge)")
    if os.geteuid() != 0:
        pytest.skip("slurmd runs jobs as their user only when started as root")
    base = tmp_path / "slurm"
    for sub in ("state", "spool"):
        (base / sub).mkdir(parents=True)
    base.chmod(0o755)  # munged wants the socket's folder searchable, and not writable by others
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname()
    conf = base / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=gcbenchtest", f"SlurmctldHost={host}", f"SlurmctldPort={_free_port()}",
        f"SlurmdPort={_free_port()}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
        f"AuthInfo=socket={base}/munge.sock", "CredType=cred/munge", f"StateSaveLocation={base}/state",
        f"SlurmdSpoolDir={base}/spool", f"SlurmctldPidFile={base}/slurmctld.pid", f"SlurmdPidFile={base}/slurmd.pid",
        f"SlurmctldLogFile={base}/slurmctld.log", f"SlurmdLogFile={base}/slurmd.log", "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "MpiDefault=none",
        "ReturnToService=2", "JobCompType=jobcomp/filetxt", f"JobCompLoc={base}/jobcomp.txt",
        "AccountingStorageType=accounting_storage/none", "SchedulerType=sched/backfill",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN",
        f"PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
    env = dict(os.environ, SLURM_CONF=str(conf))
    subprocess.run(
        [
            _find("munged"),
            f"--key-file={key}",
            f"--socket={base}/munge.sock",
            f"--pid-file={base}/munged.pid",
            f"--log-file={base}/munged.log",
            f"--seed-file={base}/munged.seed",
            "--force",
        ],
        check=True,
        env=env,
    )
    procs = [subprocess.Popen([_find("slurmctld"), "-D", "-i"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        time.sleep(1)
        procs.append(subprocess.Popen([_find("slurmd"), "-D"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True)
            if s.stdout.strip() == "idle":
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the test cluster did not come up: {s.stdout} {s.stderr}; "
                        f"{(base / 'slurmctld.log').read_text()[-2000:] if (base / 'slurmctld.log').exists() else ''}")
        yield env, base
        deadline = time.monotonic() + 30  # let the last job steps end before their daemons go
        while time.monotonic() < deadline and subprocess.run(["squeue", "-h"], env=env, capture_output=True,
                                                             text=True).stdout.strip():
            time.sleep(0.5)
    finally:
        subprocess.run(["scancel", "--full", "-u", str(os.getuid())], env=env, capture_output=True)
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        pid = base / "munged.pid"
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid.read_text().strip()), signal.SIGTERM)


@pytest.mark.e2e
@pytest.mark.slurm
@pytest.mark.slow
def test_slurm_one_node(one_node_slurm, tmp_path):
    env, base = one_node_slurm
    out = tmp_path / "results"
    proc = run_cli("run", *SMALL, "--out", str(out), "--executor", "slurm", "--slurm-partition", "test",
                   "--slurm-time", "10", env=env, timeout=300)
    print(proc.stdout, proc.stderr)  # the test's output, for the record
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    docs = results.load_dir(out)
    assert len(docs) == 4
    assert all(d.status == "ok" for d in docs)
    scheds = [d.machine_state["scheduler"] for d in docs]
    assert all(s["executor"] == "slurm" and s["partition"] == "test" and s["node"] == socket.gethostname()
               for s in scheds)
    arrays = {s["array_job_id"] for s in scheds}
    assert len(arrays) == 2
    assert all(s["job_id"] == f"{s['array_job_id']}_{s['array_task_id']}" for s in scheds)
    deadline = time.monotonic() + 60  # a job's completion record follows its last write by a moment
    while True:
        sacct = subprocess.run(["sacct", "-c", "-n", "-P", "-o", "JobID,State"], env=env, capture_output=True,
                               text=True)
        completed = [ln for ln in sacct.stdout.split() if ln.endswith("|COMPLETED")]
        if len(completed) == 4 or time.monotonic() > deadline:
            break
        time.sleep(1)
    print(sacct.stdout)
    assert len(completed) == 4, sacct.stdout + sacct.stderr
    records = (base / "jobcomp.txt").read_text()  # what sacct -c read: each record names its array task
    ran = set(re.findall(r"ArrayJobId=(\d+) ArrayTaskId=(\d+)", records))
    assert ran == {(s["array_job_id"], s["array_task_id"]) for s in scheds}
    st = run_cli("status", str(out), env=env)
    assert "4 ok" in st.stdout
    assert "0 jobs queued or running" in st.stdout
    rep = run_cli("report", str(out), "--out", str(tmp_path / "rep"), env=env)
    assert rep.returncode == 0
    assert "- Scheduler: slurm; 4 of 4 runs in 4 jobs on 1 node" in \
        (tmp_path / "rep" / "index.md").read_text()
    assert run_cli("compare", str(out), str(copy_of(out)), env=env).returncode == 0
    # a submission sbatch refuses is one line, and leaves no folder behind
    bad = run_cli("run", *SMALL, "--out", str(tmp_path / "bad"), "--executor", "slurm", "--slurm-partition", "nosuch",
                  env=env)
    assert bad.returncode == 2
    assert "submitting to slurm failed" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert "partition" in bad.stderr.lower()
    assert not (tmp_path / "bad").exists()
    # --detach: the jobs run on; a second run into the folder is refused while they do
    detached = tmp_path / "detached"
    one = [*SMALL[:SMALL.index("--repeats")], "--repeats", "1", "--no-progress"]
    proc = run_cli("run", *one, "--steps", "300", "--out", str(detached), "--executor", "slurm", "--detach", env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"next: gcbench status {detached}" in proc.stdout, proc.stderr
    again = run_cli("run", *one, "--out", str(detached), "--executor", "slurm", "--resume", env=env)
    assert again.returncode == 2
    assert "are still queued or running" in again.stderr
    deadline = time.monotonic() + 120
    while "0 jobs queued or running" not in (st := run_cli("status", str(detached), env=env)).stdout:
        assert time.monotonic() < deadline, st.stdout + st.stderr
        time.sleep(2)
    assert "2 ok" in st.stdout, st.stdout


@pytest.mark.slow
def test_forced_scheduler_run_that_fails_everywhere_says_so_and_exits_1(tmp_path):
    pytest.importorskip("submitit")
    out = ok_results_folder(tmp_path / "copy")
    before = {p.name: p.read_bytes() for p in out.glob("*.json")}
    proc = run_cli("run", *TINY_RUN, "--repeats", "2", "--force", "--timeout", "0.5", "--executor", "submitit-local",
                   "--out", str(out), timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert "2 runs in" in text, text
    assert "0 ok, 2 failed" in text, text
    assert "2 runs failed this time and their earlier ok results were kept" in text
    assert {p.name: p.read_bytes() for p in out.glob("jax__*.json")} == \
        {k: v for k, v in before.items() if k.startswith("jax__")}  # the earlier ok results stay


def test_a_detached_local_job_that_still_runs_keeps_others_out_and_status_sees_it_end(tmp_path):
    out = ok_results_folder(tmp_path / "d1")
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
        assert_one_line_error(run_cli("run", *TINY_RUN, "--force", "--out", str(out)),
                              "1 jobs of its submission", "still queued or running", f"kill {live.pid}")
        st = json.loads(run_cli("status", str(out), "--json").stdout)
        assert st["submission"]["queued_or_running"] == 1
        assert st["state"] == "submitted"
    finally:
        live.kill()
        live.wait()
    proc = run_cli("status", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 jobs running" in proc.stdout, proc.stdout + proc.stderr
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
    out = ok_results_folder(tmp_path / "x\x1b[31mred")
    proc = run_cli("status", str(out))
    assert proc.returncode == 2
    assert "\x1b" not in proc.stderr
    assert "\\x1b[31mred" in proc.stderr
    (out / "suite.json").write_text(json.dumps({"format": "gcbench-suite", "schema_version": 2, "state": "finished",
                                                "cells": ["jax__mlp__default__r0"]}))
    proc = run_cli("status", str(out))
    assert proc.returncode == 0
    assert "\x1b" not in proc.stdout
    assert "\\x1b[31mred" in proc.stdout


@pytest.mark.parametrize("name", ["a\ntouch INJECTED", "logs-%j", "tab\there"])
def test_a_folder_a_batch_script_cannot_name_is_refused(tmp_path, name):
    pytest.importorskip("submitit")
    out = tmp_path / name
    proc = run_cli("run", *TINY_RUN, "--executor", "submitit-local", "--out", str(out), cwd=tmp_path)
    assert_one_line_error(proc, "cannot hold", "batch scripts")
    assert not out.exists()
    assert not (tmp_path / "INJECTED").exists()


def test_an_executor_name_with_markup_is_refused(tmp_path):
    ds = docs(np.random.default_rng(3), 2, 10.0, steps=30)
    for d in ds:
        d.machine_state = {**(d.machine_state or {}), "scheduler": {"executor": "local\n\n# Injected"}}
    folder = write_documents(tmp_path / "res", ds)
    assert_one_line_error(run_cli("report", str(folder), "--out", str(tmp_path / "rep")),
                          "machine_state.scheduler.executor")


def test_local_jobs_at_once_are_capped_by_cores_and_memory():
    cells = list(range(12))
    assert cluster.local_jobs_at_once(cells, 2**30, cores=2, available=16 * 2**30) == 2
    assert cluster.local_jobs_at_once(cells, 2**30, cores=16, available=5 * 2**30) == 5
    assert cluster.local_jobs_at_once(cells, 2**30, cores=16, available=2**29) == 1  # one always runs
    assert cluster.local_jobs_at_once(cells[:3], 2**30, cores=16, available=None) == 3


def test_a_jobs_folder_that_is_a_file_is_one_line_and_leaves_no_running_plan(tmp_path):
    pytest.importorskip("submitit")
    out = tmp_path / "o"
    out.mkdir()
    (out / cluster.JOBS_DIR).write_text("mine")
    proc = run_cli("run", *TINY_RUN, "--executor", "submitit-local", "--out", str(out))
    assert_one_line_error(proc, cluster.JOBS_DIR, "is not a folder")
    assert not (out / "suite.json").exists()
    assert (out / cluster.JOBS_DIR).read_text() == "mine"


@pytest.mark.slow
def test_ctrl_c_on_local_jobs_is_quiet_and_runs_as_many_jobs_as_cores(tmp_path):
    pytest.importorskip("submitit")
    out = tmp_path / "o"
    argv = [a if a != "5" else "100000" for a in TINY_RUN]
    proc = subprocess.Popen([sys.executable, "-m", "gcbench", "run", *argv, "--gc", "default,disable", "--repeats",
                             "2", "--out", str(out), "--executor", "submitit-local"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    record = out / cluster.JOBS_DIR / cluster.JOBS_FILE
    deadline = time.monotonic() + 60
    while not record.exists():
        assert time.monotonic() < deadline
        assert proc.poll() is None
        time.sleep(0.2)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: to the whole process group
    text, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, text
    assert "Traceback" not in text, text
    jobs = [j for a in json.loads(record.read_text())["arrays"] for j in a["jobs"]]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert len(jobs) == min(cores, 4), jobs
    assert f"runs {len(jobs)} job" in text
    assert "cancelled" in text


def test_full_width_letters_in_a_partition_are_refused():
    from gcbench.running.config import Suite

    with pytest.raises(UsageError, match="partition must be a name"):
        Suite(backends=["jax"], workloads=["mlp"], slurm={"partition": "ｇｐｕ"}).validate()
