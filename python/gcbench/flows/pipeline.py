"""A plan, run end to end: what happens when you type `gcbench run`.

How it works, and why: docs/internals.md, `gcbench.flows.pipeline`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import shlex
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

from ..analysing import stats, summary
from ..core import files, machineload, metadata, terminal
from ..core.errors import UsageError, option
from ..measuring import mnist, plans, results
from ..measuring.backends import BACKENDS
from ..measuring.cell import Cell
from ..measuring.results import ResultDoc
from ..publishing import archive
from ..running import cluster_options, config, footprint
from .options import RunOptions


def check_data(path: str | None) -> tuple[str, str, int]:
    """Validate the data the workers will read, in the manager, so errors come once and
    early: (kind, note for people, number of samples)."""
    folder = mnist.locate(path)
    if folder is None:
        return "synthetic", "synthetic (no MNIST found; see `gcbench data info`)", mnist.SYNTHETIC_SAMPLES
    ds = mnist.load_mnist(folder)
    return "real", f"real MNIST from {folder}", len(ds)


def language_of(cell: Cell) -> str:
    return BACKENDS[cell.backend].language


def prepare_folder(out: str, resume: bool, force: bool) -> pathlib.Path:
    """The results folder of a run: refused when it already holds results, unless the run
    resumes it or is forced to replace them."""
    out_dir = files.make_folder(out, "results folder")
    if (out_dir / archive.NAME).exists():
        raise UsageError(f"{out_dir} holds {archive.NAME}: it is a report's folder (or a copy of its data), and "
                         f"results written beside the archive would not be read; use another {option('out')}")
    held = [p for p in out_dir.glob("*.json") if not p.name.startswith(".")]
    if held and not (resume or force):
        by = ""
        with contextlib.suppress(UsageError):  # a plan that does not read: the files are named without it
            plan = plans.read(out_dir)
            by = f" from `{' '.join(plan.command)}`" if plan and plan.command else ""
        raise UsageError(f"{out_dir} already holds {len(held)} files{by}; use {option('resume')} to run only what "
                         f"is missing there, {option('force')} to replace them, or another {option('out')}")
    return out_dir


def write_plan(out_dir: pathlib.Path, suite: config.Suite, cells: list, command: list[str], mode: str,
               previous: plans.Plan | None, state: str) -> plans.Plan:
    """suite.json: the plan of the latest run and the history of every run into the folder."""
    now = metadata.timestamp()
    runs = previous.history() if previous else []
    return plans.write(out_dir, plans.Plan(
        suite=suite.name, command=command, cells=[c.id for c in cells], labels=[c.label for c in cells],
        envs=suite.envs, repeats=suite.repeats, started=now, state=state,
        runs=[*runs, plans.PlanRun(command, now, mode, len(cells))]))


@dataclasses.dataclass
class _Run:
    """One run of a plan into its folder: what its parts share."""

    cells: list[Cell]
    suite: config.Suite
    opts: RunOptions
    out_dir: pathlib.Path
    out_fn: Callable[..., None]
    data_kind: str
    samples: int
    command: list[str]
    environments: dict | None = None


def _kept_on_resume(run: _Run) -> dict[str, ResultDoc | None]:
    """What an earlier submission (or run) measured with these settings: not submitted again."""
    from ..running import runner

    kept = {c.id: doc for c in run.cells
            if runner.reusable(doc := runner.existing(run.out_dir / f"{c.id}.json"), c, run.data_kind)}
    if kept:
        run.out_fn(f"gcbench: {len(kept)} runs kept (ok results with the same settings are there)")
    return kept


def _local_at_once(run: _Run, todo: list) -> int:
    """submitit-local's jobs all start at once: as many as the cores and the memory hold."""
    from ..running import cluster

    at_once = cluster.local_jobs_at_once(todo, footprint.largest(todo, run.samples, language_of)[1].total,
                                         available=footprint.available_bytes())
    run.out_fn(f"gcbench: submitit-local runs {at_once} job{'s' * (at_once > 1)} at once (one per core, as "
               "many as the memory available holds)")
    return at_once


def _run_on_scheduler(run: _Run) -> list[ResultDoc] | None:
    """The plan as job arrays (`--executor slurm` or `submitit-local`); its results, or None
    with --detach."""
    from ..running import cluster

    kept = _kept_on_resume(run) if run.opts.resume else {}
    todo = [c for c in run.cells if c.id not in kept]
    docs = {}
    if todo:
        at_once = _local_at_once(run, todo) if run.opts.executor == "submitit-local" else None
        spec = cluster.JobSpec(run.out_dir, run.command, run.suite.timeout, run.environments, run.opts.resume,
                               run.data_kind, run.opts.executor)
        submission = cluster.submit(todo, spec, run.suite.slurm_options().override(run.opts.slurm), run.suite.name,
                                    run.out_fn, local_at_once=at_once)
        if run.opts.detach:
            run.out_fn(f"gcbench: detached; the jobs run on. `gcbench status {shlex.quote(str(run.out_dir))}` says "
                       "what is done; report or compare the folder once they have ended")
            return None
        show_bars = sys.stderr.isatty() and run.opts.progress
        waited = cluster.wait(submission, todo, run.out_dir, run.out_fn, show_bars)
        docs = {c.id: d for c, d in zip(todo, waited, strict=True)}
    return [kept.get(c.id) or docs[c.id] for c in run.cells]


def _run_locally(run: _Run, plan: plans.Plan) -> list[ResultDoc]:
    """The plan in worker processes here, then one replacement repeat for each cell with a
    flagged repeat (unless the machine is still loaded); `plan` (suite.json) lists them."""
    from ..running import runner, warm_workers

    progress = None if run.opts.progress else False
    with contextlib.ExitStack() as stack:
        # one invocation: its replacement repeats share its run id (their rounds) and its compiled programs
        run_id, cache = runner.new_run_id(), stack.enter_context(runner.compile_cache())
        servers = stack.enter_context(warm_workers.ServerPool(log=run.out_fn, enabled=run.opts.fork_workers,
                                                                keep=True, meanwhile=stats.sst))
        settings = runner.RunSettings(log=run.out_fn, progress=progress, environments=run.environments,
                                      resume=run.opts.resume, data_kind=run.data_kind, run_id=run_id, cache=cache,
                                      servers=servers)
        docs = runner.run_cells(run.cells, run.out_dir, run.command, run.suite.timeout, settings)
        extra = summary.replacements(run.cells, docs, run.suite.repeats)
        busy = _still_loaded(docs) if extra else None
        if busy:  # a replacement would be loaded too: the load has not gone
            run.out_fn(terminal.wrap(
                f"gcbench: {len(extra)} cell{'s' * (len(extra) > 1)} had a repeat flagged, but the machine is still "
                f"loaded ({busy}): no replacement repeats measured; times of loaded repeats are not judged, their "
                "counts are"))
            extra = []
        if extra:  # a flagged repeat is left out of the times: measure one more in its place
            run.out_fn(f"gcbench: {len(extra)} cell{'s' * (len(extra) > 1)} had a repeat flagged (drift or load): "
                       f"one replacement repeat each ({', '.join(c.label for c in extra[:4])}"
                       f"{', ...' if len(extra) > 4 else ''})")
            run.cells = run.cells + extra
            plan.cells, plan.labels = [c.id for c in run.cells], [c.label for c in run.cells]
            plans.write(run.out_dir, plan)
            docs += runner.run_cells(extra, run.out_dir, run.command, run.suite.timeout, settings)
    return docs


def _still_loaded(docs: list[ResultDoc]) -> str | None:
    """Whether the machine is loaded now, in words (None where it is not): as the last
    repeat read it over its timed steps, a few seconds ago, without a wait; where it read
    nothing, over the next second."""
    cores = os.cpu_count()
    last = next((d for d in reversed(docs) if "others_cores" in results.part(d, "machine_state")), None)
    if last is None:
        busy = machineload.load_reason(machineload.now(cores), cores)
        return f"{busy} over the last second" if busy else None
    busy = machineload.load_reason(results.part(last, "machine_state"), cores)
    return f"{busy} in the last repeat" if busy else None


class RunOutcome(NamedTuple):
    """What a run of a plan ended with: its results (None when it was interrupted, or its
    jobs were left running with --detach), its folder, the command's exit code, how long
    it ran, and the runs that failed this time whose earlier ok result was kept."""

    docs: list[ResultDoc] | None
    folder: pathlib.Path
    code: int
    seconds: float = 0.0
    superseded: tuple[str, ...] = ()  # cell ids

    def tally(self) -> tuple[int, int]:
        """(ok, failed) runs of a finished run: an earlier ok result kept in place of this
        run's failure counts as failed."""
        statuses = [d.status for d in self.docs or []]
        return (statuses.count("ok") - len(self.superseded), statuses.count("failed") + len(self.superseded))


Present = Callable[[RunOutcome], None]  # how the command shows a finished run (commands/_outcome.py)


def run_suite(suite: config.Suite, opts: RunOptions, out_fn: Callable[..., None], present: Present | None = None
              ) -> RunOutcome:
    """Build the suite's environments, run its cells into `opts.out` (or a new folder named
    after the suite), `present` the outcome where they finished; a `RunOutcome`."""
    kind, data_note, samples = check_data(opts.data)
    cells = suite.cells(opts.data)
    return run_plan(cells, suite, opts.replace(out=opts.out or config.default_out(suite.name)), out_fn, kind,
                    data_note, samples, present)


def run_plan(cells: list, suite: config.Suite, opts: RunOptions, out_fn: Callable[..., None], kind: str,
             data_note: str, samples: int, present: Present | None = None) -> RunOutcome:
    """Run `cells` (the plan; `suite` names it and holds its environments and timeout) into
    the results folder `opts.out`, which belongs to this run (see `prepare_folder`);
    `present` the outcome where they finished."""
    if not opts.out:
        raise ValueError("run_plan needs the results folder (opts.out)")
    out = opts.out
    footprint.check(cells, samples, language_of)
    if suite.envs:  # a bad GCBENCH_INSTALLER is refused before the folder is touched
        from ..running import installers

        installers.choose()
    if opts.detach and opts.executor == "local":
        raise UsageError(f"{option('detach')} needs a scheduler ({option('executor')} slurm or submitit-local): a "
                         "local run is this process")
    if opts.executor != "local":
        from ..running import cluster

        cluster.check_executor(opts.executor)
        suite.slurm_options().override(opts.slurm)  # refuse bad --slurm-* values before anything is written
        cluster_options.check_folder(pathlib.Path(out).absolute())
    made = not pathlib.Path(out).exists()
    try:
        out_dir, stale = _open_folder(cells, opts, out)
        run = _Run(cells, suite, opts, out_dir, out_fn, kind, samples, opts.command)
        outcome = _run_plan(run, data_note, stale)
    except BaseException:
        if made:  # a run refused or stopped before it wrote anything leaves no empty folder behind
            with contextlib.suppress(OSError):
                pathlib.Path(out).rmdir()
        raise
    if outcome.docs is not None and present is not None:
        present(outcome)
    return outcome


def replacement_of(stem: str, cells: list) -> bool:
    """Whether the result named `stem` is a replacement repeat of one of `cells` (the same
    cell, a repeat number past the plan's): what an earlier run of this plan measured in
    place of a flagged repeat."""
    import re

    m = re.match(r"^(.*)__r(\d+)(__.*)?$", stem)
    if not m:
        return False
    planned = {(c.id.replace(f"__r{c.repeat}", "__r#", 1)) for c in cells}
    repeats = max((c.repeat for c in cells), default=-1)
    return int(m.group(2)) > repeats and f"{m.group(1)}__r#{m.group(3) or ''}" in planned


def _open_folder(cells: list, opts: RunOptions, out: str) -> tuple[pathlib.Path, list[pathlib.Path]]:
    """The results folder, checked for this run: (the folder, an earlier run's replacement
    repeats of this plan's cells, which --force replaces too)."""
    from ..running import cluster, runner

    out_dir = prepare_folder(out, opts.resume, opts.force)
    cluster.check_no_live_jobs(out_dir)  # submitted to a scheduler before: none of its jobs may still run
    if opts.resume:
        runner.check_resumable(cells, out_dir)
    # --force replaces the plan's results; results of other cells would stay and be mixed in
    return out_dir, _replaced(out_dir, cells) if opts.force else []


def _replaced(out_dir: pathlib.Path, cells: list) -> list[pathlib.Path]:
    """The results --force replaces: the plan's, and earlier repeats of its cells; refused
    where the folder holds results of cells not in the plan."""
    held = [p for p in archive.documents(out_dir) if p.stem not in {c.id for c in cells}]
    stale = [p for p in held if replacement_of(p.stem, cells)]
    others = sorted(p.name for p in held if p not in stale)
    if others:
        raise UsageError(
            f"{out_dir} holds {len(others)} results of cells that are not in this plan "
            f"({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}); {option('force')} replaces "
            "only this plan's and its report would mix the others in: move them away, or use another "
            f"{option('out')}"
        )
    return stale


def _build_environments(run: _Run) -> dict | None:
    from ..measuring import envspec
    from ..running import venvs

    if not run.suite.envs:
        return None
    needed = sorted({m for b in run.suite.all_backends() for m in BACKENDS[b].requires})
    run.out_fn(f"gcbench: {len(run.suite.envs)} environments (in {venvs.envs_root()}) with {', '.join(needed)}")
    return venvs.build_all([envspec.parse(e) for e in run.suite.envs], needed, run.opts.rebuild_envs, log=run.out_fn,
                          progress=None if run.opts.progress else False)


def _remove_stale(stale: list[pathlib.Path], ran: set[str]) -> None:
    """Results of cells this run did not plan (this run's own replacements have the same
    names and were written anew)."""
    for path in stale:
        if path.stem not in ran:
            path.unlink(missing_ok=True)


def _run_plan(run: _Run, data_note: str, stale: list[pathlib.Path]) -> RunOutcome:
    """The bookkeeping of a run: the folder locked, the plan written, the cells run here or
    on a scheduler, the plan's state kept true whatever happens."""
    from ..core.files import FolderLock
    from ..running import runner

    opts, out_dir = run.opts, run.out_dir
    repeats = max(c.repeat for c in run.cells) + 1 if run.cells else 0
    with FolderLock(out_dir, f"{out_dir} is in use by another gcbench run; wait for it or use another "
                             f"{option('out')}"):
        before, plan = _start_plan(run)
        run.out_fn(f"gcbench: {len(run.cells)} runs ({len(run.cells) // max(repeats, 1)} cells x {repeats} repeats, "
                   f"interleaved) -> {out_dir}; data: {data_note}")
        t0 = time.monotonic()
        try:
            with runner.interruptible():
                run.environments = _build_environments(run)
                if opts.executor == "local":
                    docs = _run_locally(run, plan)
                else:
                    scheduled = _on_scheduler(run, plan, before)
                    if scheduled is None:  # --detach: the jobs run on; `gcbench status` follows them
                        return RunOutcome(None, out_dir, 0)
                    docs = scheduled
        except (runner.Interrupted, KeyboardInterrupt) as e:
            return RunOutcome(None, out_dir, _interrupted(out_dir, plan, e))
        except BaseException:  # refused or broken midway: the plan says so, never "running" for ever
            _failed(out_dir, plan)
            raise
        _remove_stale(stale, {c.id for c in run.cells})
        plans.finish(out_dir, plan, "finished")
    superseded = tuple(d.cell for d in docs if d.superseded)  # said as failed this time
    outcome = RunOutcome(docs, out_dir, 0, time.monotonic() - t0, superseded)
    measured, failed = outcome.tally()
    return outcome._replace(code=1 if failed or not measured else 0)  # a run failed, or nothing was measured


def _start_plan(run: _Run) -> tuple[bytes | None, plans.Plan]:
    """The folder's plan as it was (its bytes, None where it had none: put back if a scheduler
    refuses the run), and this run's, written."""
    path = run.out_dir / plans.FILE
    before = path.read_bytes() if path.is_file() else None
    opts = run.opts
    previous = plans.read(run.out_dir) if (opts.resume or opts.force) else None
    mode = "resume" if opts.resume else "force" if opts.force else "new"
    return before, write_plan(run.out_dir, run.suite, run.cells, run.command, mode, previous, "running")


def _failed(out_dir: pathlib.Path, plan: plans.Plan) -> None:
    """A run refused or broken midway: its plan says failed, unless the plan was put back
    (nothing was submitted) or does not read."""
    with contextlib.suppress(UsageError):
        now_there = plans.read(out_dir)
        if now_there is not None and now_there.started == plan.started:
            plans.finish(out_dir, plan, "failed")


def _on_scheduler(run: _Run, plan: plans.Plan, before: bytes | None) -> list[ResultDoc] | None:
    """The cells as a scheduler's jobs; None with --detach (the plan then says submitted). A
    refusal before anything was submitted puts the folder's plan back as it was (`before`:
    its bytes, None where it had none)."""
    try:
        scheduled = _run_on_scheduler(run)
    except UsageError:  # nothing was submitted: the folder is as it was before this command
        if before is not None:
            files.write_bytes(run.out_dir / plans.FILE, before)
        else:
            (run.out_dir / plans.FILE).unlink(missing_ok=True)
        raise
    if scheduled is None:
        plans.finish(run.out_dir, plan, "submitted")
    return scheduled


def _interrupted(out_dir: pathlib.Path, plan: plans.Plan, e: BaseException) -> int:
    """An interrupted run: the plan says so, the finished runs are counted; the exit code."""
    from ..running import runner

    code = e.exit_code if isinstance(e, runner.Interrupted) else 130
    plans.finish(out_dir, plan, "interrupted")
    # every finished run in the folder, those of earlier commands into it too (a bisect's steps)
    kept = sum(1 for p in out_dir.glob("*.json") if p.name not in results.NOT_CELLS and not p.name.startswith("."))
    print(f"\ngcbench: interrupted; {kept} finished runs kept in {out_dir}", file=sys.stderr)
    return code


def write_report(source: pathlib.Path, out: str | None, spike_factor: float, out_fn=print, **extra) -> dict:
    try:
        from ..publishing.report import build_report, default_out
    except ImportError as e:
        raise UsageError(f"the report needs matplotlib and markdown-it-py ({e.name} missing): "
                         "pip install 'gcbench[report]'") from None
    if not spike_factor > 1:
        raise UsageError(f"{option('spike_factor')} must be greater than 1, got {spike_factor:g}")
    out_dir = pathlib.Path(out) if out else default_out(source)
    paths = build_report(source, out_dir, spike_factor, **extra)
    plots = [p for p in paths.values() if isinstance(p, pathlib.Path) and p.suffix == ".png"]
    out_fn(f"report: {paths['markdown']} and {paths['html']} ({len(plots)} plots; raw results in "
           f"{paths['archive'].name})")
    for warning in paths.get("warnings", []):
        out_fn(f"gcbench: warning: {warning}")
    return paths
