"""A hostile user's session, counted: every case runs the `gcbench` command line (or, for
the library's cases, a user's program calling it) on input a careless or hostile user
could give, and is classed by what came back.

- ok: exit 0 (the input was read, or the command did what it should);
- one-line error: exit 2 (130/143 for a signal) with exactly one line on standard error;
- exit 1: a run whose every cell was recorded as failed or unavailable, with the reason
  (README: an environment that cannot be built makes its cells unavailable);
- traceback: "Traceback" anywhere in the output, or an exit code that is neither;
- data lost: a file that was there before the command changed or went, or something a
  user's program saved that is not there (it prints "DATA LOST");
- written outside: anything appeared in the case's `outside/` folder, where hostile input
  aims (`--bad=--output=outside/x`, a package named `outside/evil`);
- outcome changed: a pytest session with a budgeted test ended otherwise than it should
  (its twin without a budget, run beside it, where the budget holds; the exit status a
  failing budget gives where it does not: a failure that passed, a crash that did not),
  said INTERNALERROR, or did not run a test after the budgeted one; or a user's program
  says "OUTCOME CHANGED" (an interrupt that did not stop its loop). A warning both
  sessions raise is the project's own, not a change;
- misread: input that must be refused (a document that contradicts itself, a folder
  compared with itself) was read without a word (exit 0);
- hang: no answer in 120 s (a FIFO read as a document, say).

    python benchmarks/hostile.py [--docs 40] [--jobs 2]

Prints one row per kind of case and a total row; exits 1 when any case ended in a
traceback or lost data.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import hashlib
import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from gcbench.measuring import mnist  # noqa: E402
from simulate import BUDGETED_LOOP_HELPERS, docs  # noqa: E402
from test_fuzz import mutate  # noqa: E402

COLUMNS = ["ok", "one-line error", "exit 1", "traceback", "data lost", "outcome changed", "misread", "written outside",
           "hang"]
CASE_TIMEOUT_S = 120


def snapshot(folder: pathlib.Path) -> dict[str, str]:
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def gcbench(*args: str, cwd: pathlib.Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command line with `args`; or, for `python:` and a script's text, that script (a
    user's program calling the library)."""
    argv = [sys.executable, "-m", "gcbench", *args]
    if args[0] == "python:":  # a file, as a user's program is (multiprocessing's spawn imports it again)
        (cwd / "user_program.py").write_text(args[1])
        argv = [sys.executable, "user_program.py"]
    if args[0] == "pytest:":  # a project's test file, run by pytest with the plugin as installed
        (cwd / "test_project.py").write_text(args[1])
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_project.py", *args[2:]]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd,
                          timeout=CASE_TIMEOUT_S, env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})))


def classify(proc: subprocess.CompletedProcess, before: dict, after: dict, expect: int | None = None,
             twin: subprocess.CompletedProcess | None = None, refuse: bool = False) -> str:
    if any(after.get(k) != v for k, v in before.items()) or "DATA LOST" in proc.stdout:
        return "data lost"
    if "OUTCOME CHANGED" in proc.stdout or "OUTCOME CHANGED" in proc.stderr:
        return "outcome changed"
    if twin is not None:  # the same session without the budget: the same outcome, test by test
        if "INTERNALERROR" in proc.stdout + proc.stderr or proc.returncode != twin.returncode \
                or outcomes(proc) != outcomes(twin):
            return "outcome changed"
        return "ok"
    if expect is not None:  # a pytest session: its exit status is the test's own, or a failure is lost
        if "INTERNALERROR" in proc.stdout + proc.stderr or proc.returncode != expect:
            return "outcome changed"
        return "ok"
    if any(k.startswith("outside/") for k in after):
        return "written outside"
    if "Traceback" in proc.stdout + proc.stderr:
        return "traceback"
    if proc.returncode == 0:
        return "misread" if refuse else "ok"
    if proc.returncode in (2, 130, 143) and len(proc.stderr.strip().splitlines()) == 1:
        return "one-line error"
    if proc.returncode == 1 and proc.args[1] == "-m" and proc.args[3] in ("run", "status"):
        return "exit 1"
    return "traceback"


def outcomes(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """Each test's outcome in a session run with -rA (PASSED test_x.py::test_a ...)."""
    import re

    return dict(m.group(2, 1) for m in re.finditer(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)",
                                                   proc.stdout, re.M))


def write_docs(folder: pathlib.Path, documents: list) -> pathlib.Path:
    """Result documents (records, or dicts as a file holds them, broken ones too) as files."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, d in enumerate(documents):
        try:
            text = json.dumps(d if isinstance(d, dict) else d.to_doc())
        except (ValueError, RecursionError):
            text = "[" * 5000 + "]" * 5000
        (folder / f"jax__mlp__default__r{i}.json").write_text(text)
    return folder


# -- the cases: (kind, setup(tmp) -> args) -------------------------------------------------------

def malformed_document_cases(n: int):
    rng = np.random.default_rng(2026)
    base = [d.to_doc() for d in docs(rng, 2, 10.0, steps=30)]  # as files hold them, to be damaged
    for i in range(n):
        doc = mutate(base[i % 2], rng)
        for command in ("report", "export", "compare"):
            def setup(tmp, doc=doc, command=command):
                res = write_docs(tmp / "res", [doc])
                return {"report": ["report", str(res), "--out", str(tmp / "rep")],
                        "export": ["export", str(res), "--csv"],
                        "compare": ["compare", str(res), str(res)]}[command]
            yield "malformed result documents", setup


BAD_ARGS = [
    ["run", "--backends", ""],
    ["run", "--gc", ""],
    ["run", "--workloads", "nope"],
    ["run", "--steps", "0"],
    ["run", "--steps", "-3"],
    ["run", "--repeats", "1e9"],
    ["run", "--timeout", "nan"],
    ["run", "--timeout", "-1"],
    ["run", "--gc", "manual:²"],
    ["run", "--gc", "manual:" + "9" * 5000],
    ["run", "--networks", "0"],
    ["run", "--batch-size", "-1"],
    ["run", "--suite", "../../etc/passwd"],
    ["run", "--seed", "x"],
    ["reproduce", "--only", ""],
    ["reproduce", "--steps", "0"],
    ["reproduce", "--repeats", "0"],
    ["reproduce", "--batch-size", "0"],
    ["reproduce", "--only", "nope"],
    [
        "bisect",
        "--package",
        "equinox",
        "--versions",
        "0.13.2",
        "--cell",
        "equinox-filter/vit/default",
        "--factor",
        "inf",
    ],
    ["bisect", "--package", "", "--versions", "1", "--cell", "jax/mlp/default"],
    ["bisect", "--package", "equinox", "--versions", "", "--cell", "jax/mlp/default"],
    ["memory", "--index-dtype", "int8", "--size", "seed", "--no-measure"],
    ["memory", "--size", "3000,1", "--index-dtype", "int16", "--no-measure"],
    ["memory", "--size", "-1,2"],
    ["explain", "nope/vit/default"],
    ["explain", "jax/mlp/default", "--sample-rate", "2"],
    ["compare", "/nonexistent", "/nonexistent"],
    ["report", "/nonexistent"],
    ["export", "/nonexistent", "--csv"],
    ["run", "--env", "python=0.1"],
    ["run", "--env", "python=3.11 jax===="],
    ["data", "info", "--data", "/dev/null/x"],
]


def bad_argument_cases():
    for args in BAD_ARGS:
        def setup(tmp, args=args):
            return [*args, "--out", str(tmp / "out")] if args[0] in ("run", "reproduce", "memory", "explain") else args
        yield "bad arguments", setup


def _archive(tmp: pathlib.Path, add) -> pathlib.Path:
    folder = tmp / "rep"
    folder.mkdir()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        good = json.dumps(docs(np.random.default_rng(1), 1, 10.0, steps=20)[0].to_doc()).encode()
        info = tarfile.TarInfo("jax__mlp__default__r0.json")
        info.size = len(good)
        tar.addfile(info, io.BytesIO(good))
        add(tar)
    (folder / "results.tar.gz").write_bytes(buf.getvalue())
    return folder


def _member(name, kind=tarfile.REGTYPE, data=b"{}", link=""):
    def add(tar):
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return add


ARCHIVES = {
    "../ member": _member("../escaped.json"), "absolute member": _member("/tmp/gcbench-hostile-abs.json"),  # noqa: S108 - an absolute member name, never written,
    "symlink": _member("link.json", tarfile.SYMTYPE, link="/etc/passwd"),
    "hard link": _member("hard.json", tarfile.LNKTYPE, link="/etc/passwd"),
    "device": _member("dev.json", tarfile.CHRTYPE), "fifo": _member("fifo.json", tarfile.FIFOTYPE),
    "member twice": _member("jax__mlp__default__r0.json"),
    "huge member": _member("big.json", data=b" " * (257 * 1024 * 1024)),
}


def archive_cases():
    for _name, add in ARCHIVES.items():
        def setup(tmp, add=add):
            folder = _archive(tmp, add)
            return ["report", str(folder), "--out", str(tmp / "out")]
        yield "hostile archives", setup


def _forged_marker(tmp, listed):
    rep = tmp / "rep"
    rep.mkdir()
    for n in listed:
        if n not in ("..", "."):
            (rep / n).write_text("the user's")
    (rep / ".gcbench-report.json").write_text(json.dumps({"format": "gcbench-report", "files": listed}))
    res = write_docs(tmp / "res", docs(np.random.default_rng(2), 2, 10.0, steps=30))
    return ["report", str(res), "--out", str(rep)]


def _unreadable_resume(tmp):
    out = tmp / "out"
    out.mkdir()
    (out / "jax__mlp__default__r0.json").write_text(json.dumps({"format": "gcbench-result", "schema_version": 99}))
    return ["run", "--backends", "jax", "--workloads", "mlp", "--networks", "2", "--steps", "5", "--repeats", "1",
            "--out", str(out), "--resume"]


def _export_onto_input(tmp):
    res = write_docs(tmp / "res", docs(np.random.default_rng(3), 2, 10.0, steps=30))
    return ["export", str(res), "--csv", "--out", str(res / "jax__mlp__default__r0.json")]


def _run_into_report(tmp):
    rep = tmp / "rep"
    rep.mkdir()
    (rep / "results.tar.gz").write_bytes(gzip.compress(b""))
    return ["run", "--backends", "jax", "--workloads", "mlp", "--networks", "2", "--steps", "5", "--repeats", "1",
            "--out", str(rep)]


def _mixed_folder(tmp):
    res = write_docs(tmp / "res", docs(np.random.default_rng(4), 2, 10.0, steps=30))
    (res / "results.tar.gz").write_bytes(gzip.compress(b""))
    return ["report", str(res), "--out", str(tmp / "o")]


def _copied_marker(tmp):
    rep = tmp / "rep"
    rep.mkdir()
    (rep / "index.md").write_text("the user's own page")
    (rep / ".gcbench-report.json").write_text((ROOT / "reports/cpu-vit/.gcbench-report.json").read_text())
    res = write_docs(tmp / "res", docs(np.random.default_rng(5), 2, 10.0, steps=30))
    return ["report", str(res), "--out", str(rep)]


DATA_LOSS = {
    "forged marker (thesis.txt, .bashrc)": lambda t: _forged_marker(t, ["thesis.txt", ".bashrc", "photos.tar"]),
    "forged marker (..)": lambda t: _forged_marker(t, ["..", "index.md"]),
    "copied marker": _copied_marker, "resume over an unreadable result": _unreadable_resume,
    "export onto its input": _export_onto_input, "run into a report folder": _run_into_report,
    "archive and results in one folder": _mixed_folder,
}


def data_loss_cases():
    for setup in DATA_LOSS.values():
        yield "data-loss scenarios", setup


def _idx(tmp, damage):
    d = tmp / "mnist"
    d.mkdir()
    rng = np.random.default_rng(0)
    mnist.write_idx(d / mnist.IMAGES, rng.integers(0, 255, (100, 28, 28), dtype=np.uint8))
    mnist.write_idx(d / mnist.LABELS, rng.integers(0, 10, 100, dtype=np.uint8))
    damage(d)
    return ["run", "--data", str(d), "--backends", "jax", "--workloads", "mlp", "--steps", "2", "--out", str(tmp / "o")]


def _bomb(d):
    (d / mnist.IMAGES).unlink()
    with gzip.open(d / (mnist.IMAGES + ".gz"), "wb", compresslevel=9) as f:
        f.write(b"\x00\x00\x08\x03" + (100).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2)
        zeros = b"\x00" * (1 << 20)
        for _ in range(1024):  # 1 GiB of zeros: about 1 MB compressed
            f.write(zeros)


IDX = {
    "gzip bomb": _bomb,
    "truncated images": lambda d: (d / mnist.IMAGES).write_bytes((d / mnist.IMAGES).read_bytes()[:500]),
    "float labels": lambda d: mnist.write_idx(d / mnist.LABELS, np.full(100, 3.5, np.float32)),
    "header overflow": lambda d: (d / mnist.IMAGES).write_bytes(b"\x00\x00\x08\x03" + (2**31).to_bytes(4, "big") * 3),
    "not gzip": lambda d: (d / (mnist.IMAGES + ".gz")).write_bytes(b"not gzip at all"),
}


def idx_cases():
    for damage in IDX.values():
        yield "malformed MNIST files", lambda tmp, damage=damage: _idx(tmp, damage)


def _document(tmp, name, content):
    res = write_docs(tmp / "res", docs(np.random.default_rng(6), 2, 10.0, steps=30))
    (res / name).write_text(content)
    return ["report", str(res), "--out", str(tmp / "o")]


OTHER_DOCS = [
    ("suite.json", '{"cells": 5}'), ("suite.json", "{" * 100000), ("explain.json", '{"explanations": [{}]}'),
    ("memory.json", '{"format": "gcbench-memory", "schema_version": 1, "cases": [{"kind": "gather"}]}'),
    ("bisect.json", '{"rows": 3}'), ("suite.json", '{"command": "rm -rf /"}'),
]


def other_document_cases():
    for name, content in OTHER_DOCS:
        yield "malformed suite/explain/memory/bisect", lambda tmp, n=name, c=content: _document(tmp, n, c)


# -- the third pass (issue 31): the scheduler path, git refs, what was deleted or read whole ------

TINY = ["--backends", "jax", "--workloads", "mlp", "--gc", "default", "--networks", "2", "--steps", "5",
        "--warmup", "1", "--no-progress"]


def _ok_results(tmp, name="res", steps=30, repeats=2):
    return write_docs(tmp / name, docs(np.random.default_rng(8), repeats, 10.0, steps=steps))


def _git_repo(tmp, name="toy", commits=1):
    repo = tmp / "repo"
    repo.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    for i in range(commits):
        (repo / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0.{i}"\n')
        run("add", "-A")
        run("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", f"commit {i}")
    return repo


def _forced_failures(tmp):
    res = _ok_results(tmp)  # ok results of the plan's cells (r0, r1), which every attempt now fails to replace
    return ["run", *TINY, "--repeats", "2", "--force", "--timeout", "0.5", "--executor", "submitit-local",
            "--out", str(res)]


def _live_local_job(tmp):
    res = _ok_results(tmp)
    jobs = res / ".gcbench-jobs"
    jobs.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-m", "submitit.local._local",
                             str(jobs)])
    (jobs / "submission.json").write_text(json.dumps(
        {"executor": "submitit-local", "run_id": "r", "folder": str(jobs), "submitted": "2026-11-25T00:00:00+00:00",
         "arrays": [{"round": 1, "jobs": [str(live.pid)], "cells": [[]]}]}))
    return ["run", *TINY, "--force", "--out", str(res)]


def _mixed_settings(tmp):
    long, short = docs(np.random.default_rng(1), 2, 10.0, steps=400), docs(np.random.default_rng(2), 2, 10.0, steps=5)
    res = tmp / "res"
    res.mkdir()
    for d in (long[0], short[1]):
        (res / f"{d.cell}.json").write_text(json.dumps(d.to_doc()))
    return ["report", str(res), "--out", str(tmp / "rep")]


def _widths(tmp):
    ds = docs(np.random.default_rng(1), 2, 10.0, steps=40)
    ds[1].gc_collections = [r[:2] for r in ds[1].gc_collections]
    res = tmp / "res"
    res.mkdir()
    for d in ds:
        (res / f"{d.cell}.json").write_text(json.dumps(d.to_doc()))
    return ["compare", str(res), str(res)]


def _plan(tmp, plan):
    res = _ok_results(tmp)
    (res / "suite.json").write_text(json.dumps({"format": "gcbench-suite", "schema_version": 2, **plan}))
    return res


def _culprit_without_first_bad(tmp):
    src = tmp / "src"
    src.mkdir()
    with tarfile.open(ROOT / "reports/cpu-vit-bisect-equinox-commits/results.tar.gz") as tar:
        tar.extractall(src, filter="data")
    bad = json.loads((src / "gitbisect.json").read_text())["commits"][-1]["sha"][:9]
    for p in src.glob(f"*equinox-{bad}-*.json"):
        p.unlink()
    return ["report", str(src), "--out", str(tmp / "rep")]


def _executor_markup(tmp):
    ds = docs(np.random.default_rng(3), 2, 10.0, steps=30)
    for d in ds:
        d.machine_state = {**(d.machine_state or {}), "scheduler": {"executor": "local\n\n# Injected"}}
    return ["report", str(write_docs(tmp / "res", ds)), "--out", str(tmp / "rep")]


def _sparse(tmp):
    res = _ok_results(tmp)
    with open(res / "jax__mlp__default__r9.json", "wb") as f:
        f.truncate(3 * 2**30)
    return ["report", str(res), "--out", str(tmp / "rep")]


def _fifo(command):
    def setup(tmp):
        res = _ok_results(tmp)
        os.mkfifo(res / "jax__mlp__default__r2.json")
        return {"report": ["report", str(res), "--out", str(tmp / "rep")], "compare": ["compare", str(res), str(res)],
                "resume": ["run", *TINY, "--repeats", "3", "--resume", "--out", str(res)]}[command]
    return setup


def _fake_uv(tmp, body: bytes):
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_bytes(body)
    (bin_dir / "uv").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GCBENCH_INSTALLER": "uv",
            "XDG_CACHE_HOME": str(tmp / "cache")}


def _marker_listing(tmp, name):
    rep = tmp / "rep"
    rep.mkdir()
    (rep / name).write_text("the user's own")
    digest = hashlib.sha256((rep / name).read_bytes()).hexdigest()
    (rep / ".gcbench-report.json").write_text(json.dumps({"format": "gcbench-report-folder", "version": 2, "files": {
        name: {"size": (rep / name).stat().st_size, "sha256": digest}}}))
    return ["report", str(_ok_results(tmp)), "--out", str(rep)]


def _staging_like(tmp):
    rep = tmp / "rep"
    (rep / ".gcbench-staging-x").mkdir(parents=True)
    (rep / ".gcbench-staging-x" / "draft.txt").write_text("mine")
    return ["report", str(_ok_results(tmp)), "--out", str(rep)]


def _linked_envs(tmp):
    (tmp / "big" / "abc" / "bin").mkdir(parents=True)
    (tmp / "cache" / "gcbench").mkdir(parents=True)
    (tmp / "cache" / "gcbench" / "envs").symlink_to(tmp / "big")
    return ["envs", "clear"], {"XDG_CACHE_HOME": str(tmp / "cache")}


def _jobs_file(tmp):
    (tmp / "o").mkdir()
    (tmp / "o" / ".gcbench-jobs").write_text("mine")
    return ["run", *TINY, "--executor", "submitit-local", "--out", str(tmp / "o")]


def _archive_member(tmp):
    return ["report", str(_archive(tmp, _member("jax__mlp__default__r1.json",
                                                data=b'{"format": "gcbench-result", "schema_version": 99}'))),
            "--out", str(tmp / "o")]


THIRD = {
    "--force on a scheduler, every run failing": _forced_failures,
    "a detached local job still running": _live_local_job,
    "repeats of different settings": _mixed_settings,
    "bisect --git into another run's folder": lambda t: [
        "bisect", "--git", str(t / "nowhere"), "--good", "a", "--bad", "b", "--cell", "jax/mlp/default",
        "--out", str(_ok_results(t))],
    "git option injection": lambda t: [
        "bisect", "--git", str(_git_repo(t)), "--good", "HEAD", f"--bad=--output={t / 'outside' / 'x'}",
        "--cell", "jax/mlp/default", "--out", str(t / "o")],
    "a newline in --out for a scheduler": lambda t: ["run", *TINY, "--executor", "submitit-local", "--out",
                                                     str(t / "a\ntouch outside/INJECTED")],
    "%j in --out for a scheduler": lambda t: ["run", *TINY, "--executor", "submitit-local", "--out", str(t / "x-%j")],
    "a package named as a path": lambda t: (  # two commits: the name is read (HEAD..HEAD was refused before it)
        ["bisect", "--git", str(_git_repo(t, "../../outside/evil", commits=2)), "--good", "HEAD~1", "--bad", "HEAD",
         "--cell", "jax/mlp/default", "--out", str(t / "o")], {"XDG_CACHE_HOME": str(t / "cache")}),
    "markup in an executor's name": _executor_markup,
    "a sparse 3 GiB document": _sparse,
    "a FIFO as a document (report)": _fifo("report"), "a FIFO as a document (compare)": _fifo("compare"),
    "a FIFO as a document (run --resume)": _fifo("resume"),
    ".gcbench-jobs is a file": _jobs_file,
    "uv: Exec format error": lambda t: (["run", *TINY, "--env", "python=3.11", "--out", str(t / "o")],
                                        _fake_uv(t, b"\x7fELF\x02\x01\x01" + b"\0" * 64)),
    "uv: output not UTF-8": lambda t: (["run", *TINY, "--env", "python=3.11", "--out", str(t / "o")],
                                       _fake_uv(t, b"#!/bin/sh\nprintf 'bad \\377 bytes\\n'\nexit 3\n")),
    "GCBENCH_INSTALLER=bogus": lambda t: (["run", *TINY, "--env", "python=3.11", "--out", str(t / "o")],
                                          {"GCBENCH_INSTALLER": "bogus"}),
    "a 265-character cell id": lambda t: ["status", str(_plan(t, {"cells": ["jax__" + "m" * 260], "state": "x"}))],
    "fewer labels than cells": lambda t: ["report", str(_plan(t, {"cells": [f"jax__mlp__default__r{i}" for i in
                                                                           range(3)], "labels": ["a"]})),
                                          "--out", str(t / "rep")],
    "repeats counting different generations": _widths,
    "a culprit without a first bad commit": _culprit_without_first_bad,
    "envs clear on a linked folder": _linked_envs,
    "a marker listing thesis.md": lambda t: _marker_listing(t, "thesis.md"),
    "a user's .gcbench-staging-x folder": _staging_like,
    "status of a folder named with escapes": lambda t: ["status", str(_plan(t, {"cells": [], "state": "x"}).rename(
        t / "x\x1b[31mred"))],
    "full-width letters in a partition": lambda t: ["run", *TINY, "--executor", "submitit-local",
                                                    "--slurm-partition", "\uff47\uff50\uff55", "--out", str(t / "o")],
    "--out ''": lambda t: ["run", *TINY, "--out", ""],
    "a bad archive member": _archive_member,
}


def _relative_live_job(tmp):
    """A detached submitit-local run recorded with a relative --out (D1/.gcbench-jobs), its
    controller still running; then a second run with --force into the same folder."""
    res = _ok_results(tmp, "D1")
    jobs = res / ".gcbench-jobs"
    jobs.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-m", "submitit.local._local",
                             str(jobs.absolute())])
    (jobs / "submission.json").write_text(json.dumps(
        {"executor": "submitit-local", "run_id": "r", "folder": "D1/.gcbench-jobs",
         "submitted": "2026-11-25T00:00:00+00:00", "arrays": [{"round": 1, "jobs": [str(live.pid)], "cells": [[]]}]}))
    return ["run", *TINY, "--force", "--out", "D1"]


def _own_replacement(tmp):
    """--force of a plan whose folder holds an earlier run's replacement repeat (r2 of 2)."""
    res = _ok_results(tmp, "res", repeats=3)
    return ["run", *TINY, "--repeats", "2", "--force", "--out", str(res)], None, ["res/"]


# Cases of the library rather than the command line: a script run as a user's program would
# run it, which catches gcbench.UsageError and prints it as one line (exit 2), and says
# "DATA LOST" when something it saved is not there.
_LOOP = """
import gc, sys, gcbench
def loop(name, folder, explain=None):
    m = gcbench.measure(name, **({} if explain is None else {"explain": explain}))
    keep = []
    with m:
        for i in range(60):
            with m.step():
                keep.append([{"i": i}] * 10)
                if i % 20 == 0:
                    gc.collect()
    m.save(folder)
try:
"""


def _script(body: str) -> tuple:
    return ["python:", _LOOP + body + "\nexcept gcbench.UsageError as e:\n    print(e, file=sys.stderr)\n"
            "    sys.exit(2)\n"]


def _explain_off(tmp):
    """GCBENCH_EXPLAIN=off: the timings are saved, and no explanation (it turned explain on)."""
    return _script("""    loop("off", "res")
    import pathlib
    got = sorted(p.name for p in pathlib.Path("res").iterdir())
    if not any(n.endswith(".json") and n != "explain.json" for n in got) or "explain.json" in got:
        print("DATA LOST: saved", got)"""), {"GCBENCH_EXPLAIN": "off"}


def _concurrent_explanations(tmp):
    """Five loops explained at once into one folder: five explanations kept."""
    return _script("""    import json, multiprocessing, pathlib
    if __name__ == "__main__":
        ctx = multiprocessing.get_context("spawn")
        procs = [ctx.Process(target=loop, args=(f"loop{i}", "res", True)) for i in range(5)]
        [p.start() for p in procs]
        [p.join() for p in procs]
        kept = json.loads(pathlib.Path("res/explain.json").read_text())["explanations"]
        if len(kept) != 5:
            print("DATA LOST: explanations kept", len(kept), "of 5")"""), None


def _cgroup_limits(tmp):
    """The cgroup reader on limit files a container could hold: non-ASCII digits, 5,000 digits,
    bytes that are not UTF-8, a NUL, a FIFO, a group 20,000 levels deep: an answer at once."""
    return _script(r"""    import os, pathlib
    from gcbench.running import footprint
    root = pathlib.Path("cg")
    for k, text in enumerate(["\u0661\u0662".encode(), b"9" * 5000, b"\xff max", b"12\x0034", None]):
        group = root / f"g{k}"
        group.mkdir(parents=True)
        (group / "memory.current").write_bytes(b"100")
        if text is None:
            os.mkfifo(group / "memory.max")
        else:
            (group / "memory.max").write_bytes(text)
        pathlib.Path("self").write_bytes(f"0::/g{k}\n".encode())
        footprint.cgroup_room(str(root), "self")
    pathlib.Path("self").write_bytes(b"0::/" + b"a/" * 20000 + b"\n")
    footprint.cgroup_room(str(root), "self")"""), None


FOURTH = {
    "a detached job of a relative --out": _relative_live_job,
    "--force over the plan's own replacement repeat": _own_replacement,
    "compare a side with itself": lambda t: ["compare", str(_ok_results(t)), "--base", "x", "--head", "x"],
    "GCBENCH_EXPLAIN=off (library)": _explain_off,
    "GCBENCH_EXPLAIN=maybe (library)": lambda t: (_script('    loop("maybe", "res")'), {"GCBENCH_EXPLAIN": "maybe"}),
    "five concurrent explanation saves (library)": _concurrent_explanations,
    "odd cgroup limit files (library)": _cgroup_limits,
}


# -- the fifth pass: the budget plugin inside a project's own test suite, and the rest of its items ----------

def _budgeted(body: str, params: str = "") -> str:
    """A test file whose budgeted test runs `body` in its steps."""
    return ("import pytest\n\n\ndef test_budgeted(" + params + "gc_budget):\n    with gc_budget(warmup=1) as b:\n"
            "        for i in range(5):\n            with b.step():\n"
            + "".join(f"                {line}\n" for line in body.splitlines()))


def _session(body: str, expect: int, *options: str, params: str = "") -> dict:
    return {"args": ["pytest:", _budgeted(body, params), *options], "expect": expect}


_CONFTEST = "def pytest_addoption(parser):\n    parser.addoption('--runslow', action='store_true')\n"


def _conftest_option(tmp):
    (tmp / "conftest.py").write_text(_CONFTEST)
    return _session("assert request.config.getoption('--runslow')", 0, "--runslow", params="request, ")


def _module_in_cwd(tmp):
    (tmp / "sub").mkdir()
    (tmp / "sub" / "helper_in_cwd.py").write_text("X = 1\n")
    return _session("import helper_in_cwd", 1)


def _symlinked_budget_file(tmp):
    """--gc-budget-update through a symlinked gc_budgets.toml: the link stays a link."""
    (tmp / "shared").mkdir()
    (tmp / "shared" / "gc_budgets.toml").write_text("# shared budgets\n")
    (tmp / "gc_budgets.toml").symlink_to("shared/gc_budgets.toml")
    return {"args": ["pytest:", _budgeted("[[] for _ in range(10)]") + _LINK_CHECK, "--gc-budget-update"],
            "expect": 0, "changes": ["shared/"]}


_LINK_CHECK = """

def test_z_the_link_stays():
    import pathlib
    assert pathlib.Path("gc_budgets.toml").is_symlink(), "DATA LOST: the link became a file"
"""


def _relative_report_and_chdir(tmp):
    """--gc-budget-report res, and a test that changes the working folder: results in ./res."""
    (tmp / "elsewhere").mkdir()
    text = ("import os\n\n\ndef test_a_moves():\n    os.chdir('elsewhere')\n\n\n" +
            _budgeted("[[] for _ in range(10)]").replace("import pytest\n", "") +
            f"\n\ndef test_z_results_where_asked():\n    import pathlib\n    os.chdir({str(tmp)!r})\n"
            "    assert list(pathlib.Path('res').glob('*.json')), 'DATA LOST: no result in ./res'\n")
    return {"args": ["pytest:", text, "--gc-budget-report=res", "-p", "no:randomly"], "expect": 0}


def _long_out(command):
    def setup(tmp):
        long = "a" * 300
        if command == "budget":
            return {"args": ["pytest:", _budgeted("pass"), f"--gc-budget-report={long}"], "expect": 4}
        if command == "run":
            return ["run", "--backends", "jax", "--workloads", "mlp", "--steps", "3", "--repeats", "1", "--out", long]
        if command == "report":
            return ["report", str(_ok_results(tmp)), "--out", long]
        return ["memory", "--out", long]
    return setup


def _load_doubt(tmp):
    """Readings that cannot be right (a counter gone back, NaN, negatives, no cores): loaded."""
    return _script("""    from gcbench.core import machineload
    for state, cores in (({"others_cores": float("nan")}, 2), ({"others_cores": -1.0}, 2),
                         ({"others_cores": 0.1, "steal": -0.5}, 2), ({"others_cores": 0.1}, 0)):
        if not machineload.load_reason(state, cores):
            print("DATA LOST: read as quiet:", state, cores)
    start = (0, 1000, 10, 5.0, None)
    back = (2_000_000_000, 700, 10, 6.0, None)
    if not machineload.load_reason(machineload.between(start, back, 2), 2):
        print("DATA LOST: a counter that went back read as quiet")"""), None


def _budget_abort_at_exit(tmp):
    return _session("import atexit, os\natexit.register(os.abort)", -6)


FIFTH = {
    "a warning as an error in a budget": lambda t: _session("import warnings\nwarnings.warn('old', DeprecationWarning)",
                                                            1, "-W", "error::DeprecationWarning"),
    "an abort at exit in a budget": _budget_abort_at_exit,
    "a module of the working folder in a budget": _module_in_cwd,
    "a skipped budget with --junitxml and -rA": lambda t: _session("pytest.skip('no')", 0, "--junitxml=r.xml", "-rA"),
    "a hanging budget under pytest-timeout's signal": lambda t: _session("import time\ntime.sleep(30)", 1,
                                                                        "--timeout=2", "--timeout-method=signal"),
    "unhashable classes in a budget": lambda t: _session(
        "class M(type):\n    def __eq__(c, o):\n        return c is o\nM('C', (), {})", 0),
    "a conftest option in a budget": _conftest_option,
    "a budget under -n 2": lambda t: _session("assert worker_id.startswith('gw')", 0, "-n", "2",
                                              params="worker_id, "),
    "a symlinked gc_budgets.toml updated": _symlinked_budget_file,
    "a relative --gc-budget-report and os.chdir": _relative_report_and_chdir,
    "--gc-budget-report ''": lambda t: {"args": ["pytest:", _budgeted("pass"), "--gc-budget-report="], "expect": 4},
    "--gc-budget-report into a report": lambda t: {"args": ["pytest:", _budgeted("pass"),
                                                            f"--gc-budget-report={_report_of(t)}"], "expect": 4},
    "a 300-character --out (run)": _long_out("run"),
    "a 300-character --out (report)": _long_out("report"),
    "a 300-character --out (memory)": _long_out("memory"),
    "a 300-character --gc-budget-report": _long_out("budget"),
    "load readings that cannot be right (library)": _load_doubt,
}


# -- the sixth pass: interrupts, budgets inside real suites, documents at the edges, one folder twice --------

_PLAIN_BUDGET = """
import contextlib, pytest

class _Plain:
    def step(self):
        return contextlib.nullcontext()

@pytest.fixture
def gc_budget():
    \"\"\"The twin's budget: the same loop, nothing measured.\"\"\"
    return lambda *a, **k: contextlib.nullcontext(_Plain())
"""


def _twin_session(tmp: pathlib.Path, args: list) -> subprocess.CompletedProcess:
    """The session of `args` with `gc_budget` a plain fixture (a conftest's fixture wins over
    the plugin's), in a copy of the case's folder as it was."""
    import shutil

    twin = pathlib.Path(tempfile.mkdtemp(prefix="gcbench-hostile-twin-"))
    try:
        shutil.copytree(tmp, twin, dirs_exist_ok=True, symlinks=True)
        conftest = twin / "conftest.py"
        conftest.write_text((conftest.read_text() if conftest.exists() else "") + _PLAIN_BUDGET)
        options = [a for a in args[2:] if not a.startswith("--gc-budget")]
        return gcbench(args[0], args[1], *options, cwd=twin)
    finally:
        shutil.rmtree(twin, ignore_errors=True)


def _suite(text: str, *options: str, expect: int | None = None, must_exist=()) -> dict:
    """A test file of a project's, run as it is with -rA; compared with its twin without a
    budget, or (a budget that fails by design) with the exit status `expect`."""
    case = {"args": ["pytest:", text, "-rA", "-p", "no:randomly", *options], "must_exist": list(must_exist)}
    if expect is None:
        case["twin"] = True
    else:
        case["expect"] = expect
    return case


_KEEPING = BUDGETED_LOOP_HELPERS


def _sigint_in_measure(tmp):
    return ["python:", """
import os, signal, sys, threading, time, gcbench
threading.Timer(0.7, os.kill, (os.getpid(), signal.SIGINT)).start()
start = time.monotonic()
try:
    with gcbench.measure("interrupted", explain=True) as m:
        for i in range(100_000):
            with m.step():
                [[j] for j in range(200)]
            if time.monotonic() - start > 20:
                break
    print("OUTCOME CHANGED: the loop ran to its end through Ctrl-C")
except KeyboardInterrupt:
    print(f"stopped after {time.monotonic() - start:.1f} s")
"""]


def _sigint_in_budget(tmp):
    return _suite(_KEEPING + """
def test_interrupted(gc_budget):
    threading.Timer(0.7, os.kill, (os.getpid(), signal.SIGINT)).start()
    with gc_budget(warmup=1) as b:
        for_seconds(b, 8)
""")


def _timeout_signal_in_budget(tmp):
    return _suite(_KEEPING + """
def test_timed_out(gc_budget):
    with gc_budget(warmup=1) as b:
        for_seconds(b, 8)
""", "--timeout=2", "--timeout-method=signal", must_exist=["ran-after"])


def _stored(tmp, key: str, budget: str) -> None:
    (tmp / "gc_budgets.toml").write_text(f'["test_project.py::{key}"]\n{budget}\n')


def _rerun_keeps_the_budget(tmp):
    _stored(tmp, "test_over", "max_promotions_per_step = 0.1")
    return _suite(_KEEPING + """
@pytest.mark.flaky(reruns=2)
def test_over(gc_budget):
    with gc_budget(warmup=1) as b:
        keeping(b, 600)
""", expect=1, must_exist=["ran-after"])


def _hypothesis_examples(tmp):
    return _suite(_KEEPING + """
from hypothesis import HealthCheck, given, settings, strategies as st

@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 8))
def test_examples(gc_budget, width):
    with gc_budget(warmup=1) as b:
        keeping(b, 300, width=width)

def test_zzz_one_table():
    import tomlkit
    keys = list(tomlkit.parse(pathlib.Path("gc_budgets.toml").read_text()))
    assert keys == ["test_project.py::test_examples"], f"DATA LOST: examples became budgets of their own: {keys}"
""", "--gc-budget-update", expect=0)


def _measure_in_a_budget(tmp):
    return _suite(_KEEPING + """
import gcbench

def test_measure_inside(gc_budget):
    with gc_budget(warmup=1) as b, gcbench.measure("inner") as m:
        for _ in range(20):
            with b.step(), m.step():
                gc.disable()
                gc.enable()

def test_later():
    gc.disable(); gc.enable(); gc.freeze(); gc.unfreeze()
""")


def _budgets_in_threads(tmp):
    return _suite(_KEEPING + """
def test_two_threads(gc_budget):
    said = []
    ready = threading.Barrier(2)
    def run(name):
        try:
            ready.wait(30)
            with gc_budget(warmup=1, name=name) as b:
                keeping(b, 200, width=2)
                time.sleep(0.5)
        except BaseException as e:
            said.append(type(e).__name__)
    threads = [threading.Thread(target=run, args=(n,)) for n in "ab"]
    for t in threads: t.start()
    for t in threads: t.join()
    assert len(said) <= 1 and "RecursionError" not in said, said

def test_later():
    gc.disable(); gc.enable()
""")


def _frozen_heap(tmp):
    return _suite(_KEEPING + """
def test_frozen_before(gc_budget):
    gc.freeze()
    before = gc.get_freeze_count()
    with gc_budget(warmup=1) as b:
        keeping(b, 50, width=2)
    mine = [[]]
    if gc.get_freeze_count() > before:
        print("DATA LOST: the budget froze more of the test's heap")
    gc.unfreeze()

def test_frozen_inside(gc_budget):
    with gc_budget(warmup=1) as b:
        keeping(b, 50, width=2)
        gc.freeze()
    if not gc.get_freeze_count():
        print("DATA LOST: the loop's own freeze was undone")
    gc.unfreeze()
""", "-s")


def _collector_off(tmp):
    return _suite(_KEEPING + """
def test_off(gc_budget):
    with gc_budget(warmup=1, max_full_per_1000=0) as b:
        keeping(b, 50, width=2)
        gc.disable()

def test_z_on_again():
    assert gc.isenabled()
""", expect=1, must_exist=["ran-after"])


def _report_on_a_full_disk(tmp):
    (tmp / "conftest.py").write_text("import errno\nimport gcbench.core.files as f\n\n\ndef _full(*a, **k):\n"
                                     "    raise OSError(errno.ENOSPC, 'No space left on device')\n\n\n"
                                     "f.write_new = _full\n")
    return _suite(_KEEPING + """
def test_reported(gc_budget):
    with gc_budget(warmup=1, max_promotions_per_step=1000) as b:
        keeping(b, 50, width=2)
""", "--gc-budget-report=res", expect=1, must_exist=["ran-after"])


def _system_exit_in_the_rerun(tmp):
    return _suite(_KEEPING + """
def test_exits(gc_budget):
    if runs("count") > 1:
        raise SystemExit(3)
    with gc_budget(warmup=1, max_promotions_per_step=0.1) as b:
        keeping(b, 600)
""", expect=1, must_exist=["ran-after"])


def _rerun_past_a_thread_timeout(tmp):
    return _suite(_KEEPING + """
@pytest.mark.timeout(20, method="thread")
def test_rerun_slow(gc_budget):
    slow = runs("count") > 1
    with gc_budget(warmup=1, max_promotions_per_step=0.1) as b:
        keeping(b, 400, pause=0.2 if slow else 0.0)
""", expect=1, must_exist=["ran-after"])


def _marked_side_effects(tmp):
    return _suite(_KEEPING + """
@pytest.mark.gc_budget_side_effects
def test_once(gc_budget):
    if runs("count") > 1:
        print("DATA LOST: a body marked as having side effects ran twice")
    with gc_budget(warmup=1, max_promotions_per_step=0.1) as b:
        keeping(b, 600)
""", "-s", expect=1)


def _asyncio_warning(tmp):
    """A warning both sessions raise (an un-awaited coroutine): the project's own, no change."""
    return _suite(_KEEPING + """
import asyncio

async def never():
    pass

def test_async_loop(gc_budget):
    async def main():
        with gc_budget(warmup=1) as b:
            for i in range(100):
                with b.step():
                    never()
                    await asyncio.sleep(0)
    asyncio.run(main())
""")


def _refused(setup):
    """A command on input it must refuse: exit 0 is a misreading."""
    return lambda tmp: {"args": setup(tmp), "refuse": True}


def _same_folder(how: str):
    def setup(tmp):
        res = _ok_results(tmp)
        other = {"itself": str(res), "./X/": f"./{res.name}/", "a link": "link"}[how]
        (tmp / "link").symlink_to(res)
        return ["compare", res.name, other, "--fail-on", "slower"]
    return setup


def _linked_plan(tmp):
    res = _ok_results(tmp)
    (tmp / "outside" / "suite.json").unlink(missing_ok=True)
    target = tmp / "elsewhere.json"
    target.write_text('{"not": "a plan"}')
    (res / "suite.json").unlink(missing_ok=True)
    (res / "suite.json").symlink_to(target)
    return ["run", "--backends", "jax", "--workloads", "mlp", "--repeats", "2", "--steps", "30", "--resume",
            "--out", str(res)]


def _damaged_result(damage):
    def setup(tmp):
        d = docs(np.random.default_rng(3), 1, 10.0, steps=30)[0].to_doc()
        text = damage(d)
        folder = tmp / "res"
        folder.mkdir()
        (folder / "jax__mlp__default__r0.json").write_text(text if isinstance(text, str) else json.dumps(d))
        return {"args": ["report", str(folder), "--out", str(tmp / "rep")], "refuse": True}
    return setup


def _negative_explain(tmp):
    folder = _ok_results(tmp)
    (folder / "explain.json").write_text(json.dumps({"format": "gcbench-explain", "explanations": [
        {"label": "jax/mlp/default", "counts": [-5, 0, 0], "julia": {"samples": -1}}]}))
    return ["report", str(folder), "--out", str(tmp / "rep")]


SIXTH = {
    "Ctrl-C in measure(explain=True) (library)": _sigint_in_measure,
    "Ctrl-C under a budget": _sigint_in_budget,
    "pytest-timeout's signal on a budgeted loop": _timeout_signal_in_budget,
    "a failing stored budget under pytest-rerunfailures": _rerun_keeps_the_budget,
    "a budget in a Hypothesis test, updated": _hypothesis_examples,
    "gcbench.measure() inside a budget": _measure_in_a_budget,
    "budgets in two threads": _budgets_in_threads,
    "a frozen heap before and inside a budget": _frozen_heap,
    "a loop that leaves the collector off": _collector_off,
    "--gc-budget-report on a full disk": _report_on_a_full_disk,
    "a SystemExit in the rerun for sites": _system_exit_in_the_rerun,
    "a rerun for sites past a thread-method timeout": _rerun_past_a_thread_timeout,
    "a body marked gc_budget_side_effects": _marked_side_effects,
    "an asyncio loop raising a warning both sessions raise": _asyncio_warning,
    "compare X X": _refused(_same_folder("itself")),
    "compare X ./X/": _refused(_same_folder("./X/")),
    "compare X and a link to X": _refused(_same_folder("a link")),
    "a suite.json that is a link, run --resume": _refused(_linked_plan),
    "gc_collections rows of 4": _damaged_result(lambda d: d.__setitem__(
        "gc_collections", [[*r, 0] for r in d["gc_collections"]])),
    "gc_explicit rows of 2": _damaged_result(lambda d: d.__setitem__("gc_explicit",
                                                                      [[0, 0] for _ in d["wall_ns"]])),
    "warm-up arrays of unequal length": _damaged_result(lambda d: d.__setitem__(
        "warmup", {"wall_ns": [5, 6, 7], "gc_ns": [0]})),
    "a backend the cell id contradicts": _damaged_result(lambda d: d.__setitem__("backend", "nnx")),
    "gc_ns longer than its step": _damaged_result(lambda d: d["gc_ns"].__setitem__(2, d["wall_ns"][2] * 40_000)),
    "true in wall_ns": _damaged_result(lambda d: d["wall_ns"].__setitem__(0, True)),
    "schema_version 0": _damaged_result(lambda d: d.__setitem__("schema_version", 0)),
    "schema_version -1": _damaged_result(lambda d: d.__setitem__("schema_version", -1)),
    "a duplicate key": _damaged_result(lambda d: json.dumps(d).replace('"status":',
                                                                      '"status": "failed", "status":', 1)),
    "cell_spec.steps against the data": _damaged_result(lambda d: d.__setitem__("cell_spec", {"steps": 999})),
    "negative counts in explain.json": _refused(_negative_explain),
}


def sixth_pass_cases():
    for name, setup in SIXTH.items():
        yield f"sixth pass: {name}", setup


def _report_of(tmp) -> str:
    folder = tmp / "rep"
    folder.mkdir()
    (folder / "index.md").write_text("# a report\n")
    return str(folder)


def fifth_pass_cases():
    for name, setup in FIFTH.items():
        yield f"fifth pass: {name}", setup


def fourth_pass_cases():
    for name, setup in FOURTH.items():
        yield f"fourth pass: {name}", setup


def third_pass_cases():
    for name, setup in THIRD.items():
        yield f"third pass: {name}", setup


def run_case(case) -> tuple[str, str, str]:
    kind, setup = case
    with tempfile.TemporaryDirectory(prefix="gcbench-hostile-") as d:
        tmp = pathlib.Path(d)
        (tmp / "outside").mkdir()
        args = setup(tmp)
        env, replaces, expect, twin, must_exist, refuse = None, (), None, None, (), False
        if isinstance(args, dict):  # a pytest session: its arguments and the exit status its twin has
            case = args
            refuse = bool(case.get("refuse"))
            args, expect, replaces = case["args"], case.get("expect"), tuple(case.get("changes", ()))
            must_exist = tuple(case.get("must_exist", ()))
            if case.get("twin"):  # the same session with gc_budget a plain fixture, in a copy of the folder
                twin = _twin_session(tmp, args)
        if isinstance(args, tuple):  # (arguments, environment[, folders that --force is asked to replace])
            args, env, *rest = args
            replaces = tuple(rest[0]) if rest else ()
        before = {k: v for k, v in snapshot(tmp).items() if not k.startswith(replaces) or not replaces}
        try:
            proc = gcbench(*args, cwd=tmp, env=env)
        except subprocess.TimeoutExpired:
            return kind, "hang", ("a user's program" if args[0] == "python:" else " ".join(a[:40] for a in args[:3])) \
                + " :: no answer"
        outcome = classify(proc, before, snapshot(tmp), expect, twin, refuse)
        if outcome == "ok" and any(not (tmp / name).exists() for name in must_exist):
            outcome = "outcome changed"  # the session ended before the tests after the budgeted one
        said = (proc.stdout.strip().splitlines() if outcome in ("data lost", "outcome changed") else []) or \
            proc.stderr.strip().splitlines() or [""]
        shown = ["a user's program"] if args[0] == "python:" else ["a test file", *args[2:4]] \
            if args[0] == "pytest:" else args[:3]
        return kind, outcome, " ".join(a[:40] for a in shown) + " :: " + said[-1][:200]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=40, help="generated malformed documents (each through 3 commands)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print every case that did not end as ok or one line")
    ap.add_argument("--only", default="", help="only the kinds of case whose name holds this text")
    args = ap.parse_args()
    cases = [*malformed_document_cases(args.docs), *bad_argument_cases(), *archive_cases(), *data_loss_cases(),
             *idx_cases(), *other_document_cases(), *third_pass_cases(), *fourth_pass_cases(), *fifth_pass_cases(),
             *sixth_pass_cases()]
    cases = [c for c in cases if args.only in c[0]]
    table: dict[str, dict[str, int]] = {}
    bad = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for kind, outcome, detail in pool.map(run_case, cases):
            row = table.setdefault(kind, dict.fromkeys(COLUMNS, 0))
            row[outcome] += 1
            if outcome in ("traceback", "data lost", "outcome changed", "misread", "written outside", "hang"):
                bad.append(f"{outcome}: {detail}")
            elif args.verbose and outcome != "one-line error":
                print(f"{kind}: {outcome}: {detail}", file=sys.stderr)
    cols = COLUMNS
    print(f"| kind of case | cases | {' | '.join(cols)} |")
    print("| --- | ---: |" + " ---: |" * len(cols))
    for kind, row in table.items():
        print(f"| {kind} | {sum(row.values())} | " + " | ".join(str(row[c]) for c in cols) + " |")
    total = {c: sum(r[c] for r in table.values()) for c in cols}
    print(f"| all | {sum(total.values())} | " + " | ".join(str(total[c]) for c in cols) + " |")
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
