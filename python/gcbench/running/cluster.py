"""A plan's cells as SLURM job arrays, through submitit (`--executor slurm`).

How it works, and why: docs/internals.md, `gcbench.running.cluster`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import time
from typing import Any, ClassVar, NoReturn

from ..core import files, machineload, metadata, records
from ..core.errors import UsageError, printable
from ..core.schemas import Executor
from ..core.terminal import counted
from ..measuring import plans, results
from ..measuring.results import ResultDoc
from . import runner
from .cluster_options import SlurmOptions

JOBS_DIR = ".gcbench-jobs"  # inside the results folder: submitit's pickles and logs, and JOBS_FILE
JOBS_FILE = "submission.json"
POLL_S = 2.0


@dataclasses.dataclass(frozen=True)
class JobArray:
    """One job array of a submission: its jobs' ids and, job by job, the cells each runs."""

    jobs: list[str]
    cells: list[list[str]]
    round: int | None = None


@dataclasses.dataclass(frozen=True)
class Submission:
    """A results folder's latest submission to a scheduler, as JOBS_FILE keeps it."""

    executor: Executor
    run_id: str
    folder: str  # the jobs' folder (absolute since the relative-path fix; older records hold it as given)
    submitted: str
    arrays: list[JobArray]
    command: list[str] = dataclasses.field(default_factory=list)
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    cells: list[str] = dataclasses.field(default_factory=list)

    def job_ids(self) -> list[str]:
        return [j for a in self.arrays for j in a.jobs]


@dataclasses.dataclass(frozen=True)
class Submitted:
    """A submission just made: its record, and submitit's handles on its jobs."""

    record: Submission
    jobs: list


@dataclasses.dataclass(frozen=True)
class ResultCounts:
    ok: int = 0
    failed: int = 0
    unavailable: int = 0
    missing: int = 0


@dataclasses.dataclass(frozen=True)
class SubmissionStatus:
    executor: str
    submitted: str
    jobs: int
    measured_by_it: int
    log_folder: str
    queued_or_running: int | None  # None: squeue could not say


@dataclasses.dataclass(frozen=True)
class FolderStatus:
    """What a results folder holds against its plan (`gcbench status`)."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("submission",)

    folder: str
    state: str | None
    planned: int
    results: ResultCounts
    submission: SubmissionStatus | None = None


def _arrays(job_ids) -> set[str]:
    """The array (or plain job) ids of SLURM job ids: `123` of `123_4`."""
    return {str(j).split("_")[0] for j in job_ids}


def _count_alive(alive: dict, arrays: set[str]) -> int:
    """How many of squeue's jobs (`alive`) belong to `arrays`."""
    return sum(1 for i in alive if i.split("_")[0] in arrays)


def check_executor(executor: str) -> None:
    """Refuse, before anything is written, an executor this machine cannot use."""
    if executor == "local":
        return
    if importlib.util.find_spec("submitit") is None:
        raise UsageError(f"--executor {executor} needs submitit: pip install 'gcbench[cluster]' "
                         "(or pip install submitit)") from None
    if executor == "slurm" and shutil.which("sbatch") is None:
        raise UsageError("--executor slurm: no sbatch on PATH; submit from a machine of the SLURM cluster")


def rounds(cells: list) -> list[list]:
    """The plan's cells by round (repeat number), each round in the plan's shuffled order."""
    by: dict[int, list] = {}
    for c in cells:
        by.setdefault(c.repeat, []).append(c)
    return [by[r] for r in sorted(by)]


def chunks(cells: list, jobs: int) -> list[list]:
    """`cells` in `jobs` contiguous shares whose sizes differ by at most one."""
    jobs = max(1, min(jobs, len(cells)))
    size, extra = divmod(len(cells), jobs)
    out, start = [], 0
    for j in range(jobs):
        end = start + size + (j < extra)
        out.append(cells[start:end])
        start = end
    return out


def job_facts(executor: str) -> dict:
    """The job this process runs in, as results record it (`machine_state.scheduler`)."""
    import submitit

    env = submitit.JobEnvironment()
    def text(v):
        return (None if v is None else str(v))
    return {"executor": executor, "job_id": text(env.job_id), "array_job_id": text(env.array_job_id),
            "array_task_id": text(env.array_task_id), "node": env.hostname,
            "partition": os.environ.get("SLURM_JOB_PARTITION")}


def measured_by(doc: ResultDoc | None, run_id: str) -> bool:
    """Whether `doc` is an ok result of the submission `run_id` (a requeued job skips it)."""
    return doc is not None and doc.status == "ok" and results.run_id(doc) == run_id


@dataclasses.dataclass(frozen=True)
class JobSpec:
    """What every job of a submission runs with: the run's settings (pickled into each job)."""

    out_dir: pathlib.Path
    command: list[str]
    timeout: float
    environments: dict | None
    resume: bool
    data_kind: str | None
    executor: Executor  # slurm or submitit-local
    run_id: str = dataclasses.field(default_factory=runner.new_run_id)


def run_job(spec: JobSpec, cells: list) -> dict:
    """One job of an array, on its node: its cells one after another, each repeat in a
    fresh worker process, exactly as `gcbench run` does. Returns {cell id: status}."""
    out_dir = pathlib.Path(spec.out_dir)
    todo = [c for c in cells if not measured_by(runner.existing(out_dir / f"{c.id}.json"), spec.run_id)]
    print(f"gcbench job: {len(todo)} of {len(cells)} cells to run (the others were measured by this submission)",
          flush=True)
    settings = runner.RunSettings(log=functools.partial(print, flush=True), progress=False,
                                  environments=spec.environments, resume=spec.resume, data_kind=spec.data_kind,
                                  run_id=spec.run_id, scheduler=job_facts(spec.executor))
    docs = runner.run_cells(todo, out_dir, spec.command, spec.timeout, settings)
    # an attempt that failed where an earlier ok result was kept is a failure of this run
    return {c.id: "failed" if d.superseded else d.status for c, d in zip(todo, docs, strict=True)}


def _executor(kind: str, folder: pathlib.Path):
    import logging

    import submitit

    # submitit warns on every poll where sacct is missing (no accounting); gcbench asks squeue then
    logging.getLogger("submitit").setLevel(logging.ERROR)

    return submitit.AutoExecutor(folder=folder, cluster="local" if kind == "submitit-local" else "slurm")


@contextlib.contextmanager
def _quiet_children():
    """Standard output and error on /dev/null for the processes started inside: submitit's
    local job controllers inherit them, and print a traceback each when Ctrl-C reaches
    them (their jobs log into the jobs folder)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def local_jobs_at_once(cells: list, per_worker: int | None, cores: int | None = None,
                       available: int | None = None) -> int:
    """How many submitit-local jobs may run at once: one per core, and no more workers than
    the memory available holds (`per_worker`: the largest cell's estimate, in bytes)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = max(1, min(cores, len(cells)))
    if per_worker and available:
        n = max(1, min(n, available // per_worker))
    return n


def _jobs_folder(folder: pathlib.Path) -> bool:
    """Make the folder of the jobs' files (a one-line error where it cannot be); whether it was made now."""
    made = not folder.exists()
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UsageError(f"{folder} is not a folder; gcbench keeps its jobs' files there: move it away")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {folder}: {files.describe_os_error(e)}") from None
    return made


def _reraise_submission(e: BaseException, kind: str) -> NoReturn:
    """A submission that failed: an interrupt as it came, anything else as one line."""
    if isinstance(e, (KeyboardInterrupt, runner.Interrupted)):
        raise e
    said = str(e).strip()
    raise UsageError(f"submitting to {kind} failed: {said.splitlines()[-1] if said else repr(e)}") from None


def submit(cells: list, spec: JobSpec, options: SlurmOptions, name: str, log,
           local_at_once: int | None = None) -> Submitted:
    """Submit one job array per round of `cells`, each job running its share with `spec`;
    write and return the submission record. On the local executor (whose jobs all start at
    once) the rounds form one array of `local_at_once` jobs, each running its share of the
    rounds in order. `name` names the jobs (the suite's)."""
    kind = spec.executor
    # absolute, as the job controllers' command lines hold it (a relative --out stored as given
    # was never found there: `status` said 0 jobs and a --force run was let in)
    folder = (pathlib.Path(spec.out_dir) / JOBS_DIR).absolute()
    made = _jobs_folder(folder)
    executor = _executor(kind, folder)
    jobs: list = []  # submitit's jobs
    arrays: list[JobArray] = []
    local = kind == "submitit-local"
    if local:  # its jobs are this process's children: their workers leave them out of their load readings
        os.environ.setdefault(machineload.ROOT_ENV, str(os.getpid()))
    groups = [[c for r in rounds(cells) for c in r]] if local else rounds(cells)
    per_array = min(options.parallelism, local_at_once or len(cells)) if local else options.parallelism
    try:
        for n, round_cells in enumerate(groups, 1):
            _submit_round(executor, spec, options, f"gcbench-{name}-r{n}", chunks(round_cells, per_array), local,
                          jobs, arrays, n)
    except BaseException as e:
        cancel(jobs, log)
        if made and not jobs:  # nothing went out: leave no trace
            shutil.rmtree(folder, ignore_errors=True)
        _reraise_submission(e, kind)
    record = Submission(kind, spec.run_id, str(folder),
                        metadata.timestamp(), arrays,
                        spec.command, dataclasses.asdict(options), [c.id for c in cells])
    files.write_json(folder / JOBS_FILE, records.to_json(record))
    ids = sorted(_arrays(j.job_id for j in jobs))
    log(f"gcbench: submitted {counted(len(jobs), 'job')} in {counted(len(arrays), 'array')} "
        f"({kind}: {options.describe()}); job ids {', '.join(ids)}")
    return Submitted(record, jobs)


def _submit_round(executor, spec: JobSpec, options: SlurmOptions, job_name: str, shares: list, local: bool,
                  jobs: list, arrays: list[JobArray], n: int) -> None:
    """One job array: a job per share of the round's cells; its jobs join `jobs` as they are
    submitted (cancelled, all of them, if a later round fails), its record `arrays`."""
    executor.update_parameters(**options.parameters(job_name))
    with _quiet_children() if local else contextlib.nullcontext():
        array = executor.map_array(functools.partial(run_job, spec), shares)
    jobs += array
    arrays.append(JobArray([j.job_id for j in array], [[c.id for c in s] for s in shares], n))


def cancel(jobs: list, log) -> None:
    """Cancel submitted jobs that have not ended (scancel for SLURM), and say so."""
    live = [j for j in jobs if not _reported(j)]
    for j in live:
        try:
            j.cancel(check=False)
        except Exception as e:  # a job we could not cancel is named, not fatal
            log(f"gcbench: could not cancel job {j.job_id}: {e}")
    if live:
        ids = sorted(_arrays(j.job_id for j in live))
        log(f"gcbench: cancelled {counted(len(live), 'submitted job')} ({'scancel ' if _is_slurm(live[0]) else ''}"
            f"{' '.join(ids)})")


def _is_slurm(job) -> bool:
    return type(job).__name__ == "SlurmJob"


def queued() -> dict[str, str] | None:
    """SLURM jobs pending or running, {id (`123`, `123_4`): state}, or None when squeue
    cannot say. A cluster without accounting has no sacct, which submitit reads states
    from; squeue still knows which jobs are alive."""
    try:
        out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return dict(line.split(None, 1) for line in out.stdout.splitlines() if len(line.split()) == 2)


def wait(submission: Submitted, cells: list, out_dir: pathlib.Path, log, show_bars: bool) -> list[ResultDoc]:
    """Wait for the jobs, showing progress across the whole submission; then the results in
    plan order. A job that ended without measuring its cells leaves them failed (with
    where its log is), never an earlier ok result replaced. Ctrl-C cancels the jobs."""
    jobs, record = submission.jobs, submission.record
    run_id = record.run_id
    seen: dict[str, float] = {}
    done_ids: set[str] = set()
    bar = None
    if show_bars:
        from tqdm import tqdm

        bar = tqdm(total=len(cells), desc="all cells", unit="run", dynamic_ncols=True, file=sys.stderr)
    t0 = time.monotonic()
    try:
        while True:
            finished = _newly_measured(cells, out_dir, run_id, seen, done_ids)
            alive = queued() if _is_slurm(jobs[0]) else {}  # one squeue per look, for the counts and the end
            if bar is not None:
                bar.update(finished)
                bar.set_postfix_str(_job_counts(jobs, alive))
            elif finished:
                log(f"gcbench: {len(done_ids)}/{len(cells)} runs measured; {_job_counts(jobs, alive)}")
            if _all_gone(jobs, alive):
                break
            time.sleep(poll_interval(time.monotonic() - t0))
    except (KeyboardInterrupt, runner.Interrupted):
        if bar is not None:
            bar.close()
            bar = None
        cancel(jobs, log)
        raise
    finally:
        if bar is not None:
            bar.close()
    _newly_measured(cells, out_dir, run_id, seen, done_ids)
    return _collect(cells, out_dir, run_id, jobs, record, log)


def _newly_measured(cells, out_dir, run_id, seen, done_ids) -> int:
    """How many cells gained a result of this submission since the last look (a file is
    read again only when it changed)."""
    new = 0
    for c in cells:
        if c.id in done_ids:
            continue
        path = out_dir / f"{c.id}.json"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if seen.get(c.id) == mtime:
            continue
        seen[c.id] = mtime
        doc = runner.existing(path)
        if doc is not None and results.run_id(doc) == run_id:
            done_ids.add(c.id)
            new += 1
    return new


def _done(job) -> bool:
    try:
        return job.done()
    except Exception:  # a job whose state cannot be read has not ended for us
        return False


def _reported(job) -> bool:
    """Whether the job has reported back (its result or its error is on disk)."""
    return job.paths.result_pickle.exists()


def poll_interval(elapsed: float) -> float:
    """Seconds between looks at the jobs: 2 at first, up to 15 for long runs (a cluster's
    controller answers every squeue)."""
    return min(15.0, POLL_S + elapsed / 20)


def _job_counts(jobs, alive: dict | None) -> str:
    """`jobs: 2 finished, 1 running, 3 pending`, from the jobs' files and squeue (`alive`)."""
    states: dict[str, int] = {}
    for j in jobs:
        if _reported(j):
            s = "finished"
        elif alive is None:
            s = "unknown"
        elif _is_slurm(j):
            s = alive.get(j.job_id, "ended").lower()
        else:
            s = "running"
        states[s] = states.get(s, 0) + 1
    return "jobs: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))


def _all_gone(jobs, alive: dict | None) -> bool:
    """Every job has reported back, or none is queued or running any more (SLURM: squeue's
    `alive`; where squeue cannot say, and for local jobs, submitit's own view)."""
    if all(_reported(j) for j in jobs):
        return True
    if alive is None or not _is_slurm(jobs[0]):
        return all(_done(j) for j in jobs)
    return not _count_alive(alive, _arrays(j.job_id for j in jobs))


def _handled(jobs: list, log) -> dict[str, str]:
    """The cells the jobs that ended normally measured, kept (--resume) or recorded, by
    status; each job that failed said."""
    handled: dict[str, str] = {}
    for j in jobs:
        outcome, err = _job_outcome(j)
        if err:
            log(f"gcbench: job {j.job_id} failed: {err}")
        handled.update(outcome or {})
    return handled


def _collect(cells, out_dir, run_id, jobs, record: Submission, log) -> list[ResultDoc]:
    handled = _handled(jobs, log)
    job_of = {cid: a.jobs[k] for a in record.arrays for k, share in enumerate(a.cells) for cid in share}
    docs: list[ResultDoc] = []
    missing = 0
    for c in cells:
        out_file = out_dir / f"{c.id}.json"
        old = runner.existing(out_file)
        doc = _found(c, old, handled, run_id, log)
        if doc is None:
            missing += 1
            reason = (f"its {record.executor} job {job_of.get(c.id, '?')} ended without a result for it (died, "
                      f"cancelled, preempted or out of time; its log is in {record.folder}); --resume runs it again")
            doc = runner.keep(results.new(c, "failed", reason), old, out_file, c.label, log)
        docs.append(doc)
    if missing:
        log(f"gcbench: {counted(missing, 'run')} without a result from its job; `--resume` runs them again")
    return docs


def _found(c, old: ResultDoc | None, handled: dict[str, str], run_id: str, log) -> ResultDoc | None:
    """The result a job left for cell `c` (`old`, the file there now), or the earlier ok
    one where this run's attempt failed; None where its job left none."""
    if old is None:
        return None
    if handled.get(c.id) == "failed" and old.status == "ok" and not measured_by(old, run_id):
        log(f"{c.label}: kept the earlier ok result instead of this failed one")  # the earlier ok result stayed
        return dataclasses.replace(old, superseded=True)
    return old if c.id in handled or measured_by(old, run_id) else None


def _job_outcome(job) -> tuple[dict | None, str | None]:
    """A finished job's {cell id: status}, or why it has none."""
    if not job.paths.result_pickle.exists():
        return None, "it ended without reporting back (killed, cancelled, preempted or out of time)"
    try:
        return job.result(), None
    except Exception as e:  # submitit raises what the job raised, or that it died
        text = str(e).strip().splitlines()
        return None, text[-1] if text else repr(e)


def read_submission(out_dir: pathlib.Path) -> Submission | None:
    """The record of the folder's latest submission to a scheduler, or None; a record that
    is not one is refused in one line."""
    path = out_dir / JOBS_DIR / JOBS_FILE
    if not path.is_file():
        return None
    return records.from_json(files.read_json(path, "submission record"), Submission, str(path))


def live_jobs(sub: Submission) -> int | None:
    """How many jobs of a submission are still queued or running: for SLURM those squeue
    lists (None where it cannot say); for submitit-local, whose job ids are the process ids
    of its job controllers, those whose controller process still runs."""
    if sub.executor == "submitit-local":
        return sum(1 for j in sub.job_ids() if _local_job_alive(j, sub.folder))
    if sub.executor != "slurm":
        return None
    alive = queued()
    return None if alive is None else _count_alive(alive, _arrays(sub.job_ids()))


def _local_job_alive(job_id: str, folder: str) -> bool:
    """Whether submitit's local job controller `job_id` (a process id) still runs: the process
    is there and, where /proc shows it, is a controller of this folder (a process id may be
    reused by then)."""
    if not job_id.isdigit() or not files.process_alive(int(job_id)):
        return False
    try:
        cmdline = pathlib.Path(f"/proc/{job_id}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return not pathlib.Path("/proc/self").exists()  # no /proc: the process is all we know
    if b"submitit.local._local" not in cmdline:
        return False
    target = os.fsencode(os.path.abspath(folder))  # noqa: PTH100 - ".." resolved, links kept
    # records written before folders were stored absolute hold the path as given (D1/.gcbench-jobs)
    tail = b"/" + os.fsencode(os.path.normpath(folder)).lstrip(b"/")
    return any(arg == target or arg.endswith(tail) for arg in cmdline)


def check_no_live_jobs(out_dir: pathlib.Path) -> None:
    """Refuse to run into a folder whose submitted jobs are still queued or running: both
    would write the same cells."""
    sub = read_submission(out_dir)
    n = live_jobs(sub) if sub else None
    if sub and n:
        ids = " ".join(sorted(_arrays(sub.job_ids())))
        how = f"scancel {ids}" if sub.executor == "slurm" else f"kill {ids}"
        raise UsageError(f"{printable(out_dir)}: {n} jobs of its submission of {sub.submitted} are still queued or "
                         f"running; wait for them (`gcbench status {printable(out_dir)}`) or cancel them ({how})")


def _of_submission(doc: ResultDoc | None, sub: Submission | None) -> bool:
    """The result was measured by this submission's jobs."""
    return sub is not None and doc is not None and results.run_id(doc) == sub.run_id


def status(out_dir: pathlib.Path) -> FolderStatus:
    """What a results folder holds against its plan and, when it was submitted to a
    scheduler, which of its jobs are still queued or running."""
    plan = plans.read(out_dir) or plans.Plan()
    planned = plan.cells
    counts = {"ok": 0, "failed": 0, "unavailable": 0, "missing": 0}
    sub = read_submission(out_dir)
    this_submission = 0
    for cid in planned:
        doc = runner.existing(out_dir / f"{cid}.json")
        counts["missing" if doc is None else doc.status] += 1
        this_submission += _of_submission(doc, sub)
    state = plan.state
    submission = None
    if sub:
        alive = live_jobs(sub)
        submission = SubmissionStatus(sub.executor, sub.submitted, len(sub.job_ids()), this_submission, sub.folder,
                                      alive)
        if state == "submitted" and alive == 0:  # a detached plan whose jobs have all ended
            state = _mark_ended(out_dir, plan)
    return FolderStatus(str(out_dir), state, len(planned), ResultCounts(**counts), submission)


def _mark_ended(out_dir: pathlib.Path, plan: plans.Plan) -> str:
    """Record in suite.json that a detached plan's jobs have ended, when `status` finds so
    (unless another gcbench holds the folder now); the state to show."""
    try:
        with files.FolderLock(out_dir, "busy"):
            plans.finish(out_dir, plan, "finished")
    except UsageError:
        pass
    return "finished"
