"""The worker: runs one repeat of one cell in a fresh process and writes its result.

How it works, and why: docs/internals.md, `gcbench.measuring.worker`.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import threading
import time
from typing import Any

from ..core import machineload, metadata
from . import diagnose, gcpolicy, mnist, results
from .backends import get_backend
from .cell import Cell
from .probe import StepProbe
from .workloads import get_workload, init_params

PROGRESS_EVERY_NS = 200_000_000
RESULT_WRITTEN = "gcbench-result-written"  # the worker's last line: its result is whole on disk
PARENT_ENV = "GCBENCH_MANAGER_PID"
# how this process was started, recorded in each result's machine_state: "interpreter" (a
# fresh `python -m gcbench.child`), or "forked" by a worker server (gcbench.worker_server)
STARTED_AS = "interpreter"


def progress(phase: str, done: int, total: int) -> None:
    print(f"gcbench-progress {phase} {done} {total}", flush=True)


def die_with_parent(expected_parent: int | None, stdin=None) -> None:
    """Make sure this process ends when the process that started it does."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            _watch_stdin(stdin)
    else:  # pragma: no cover - not Linux
        _watch_stdin(stdin)
    if expected_parent and os.getppid() != expected_parent:  # it died before the line above
        os._exit(1)


def _watch_stdin(stdin) -> None:
    if stdin is None:
        return

    def watch():
        stdin.read()  # returns at end-of-file: the manager is gone (or done with us)
        os._exit(1)

    threading.Thread(target=watch, name="gcbench-parent-watch", daemon=True).start()


class Unavailable(Exception):
    """The cell cannot run in this process; `str()` is the reason."""


def preload(backend: str) -> None:
    """Import a Python backend's module and its libraries (JAX, Equinox, Flax, optax), as a
    training script imports them at its top: before the data, the metadata and the model
    exist. A fresh worker does this as soon as it knows its cell; a worker server
    (`gcbench.worker_server`) once, before it forks the repeats, so that both start the
    cell from the same heap. A backend that cannot load here is left for `prepare` to
    report (`Unavailable`); the Julia backends start their runtime in `prepare`."""
    info = get_backend(backend)
    if info.language != "julia" and info.availability()[0]:
        info.load()


_DATA: dict[tuple, mnist.Dataset] = {}  # the data this process has loaded, by (path, seed)


def preload_data(path: str | None, seed: int) -> mnist.Dataset:
    """The training set of a cell, loaded once in this process: a fresh worker loads it
    right after its backend, a worker server before forking the repeats (which then share
    its pages), and `prepare` takes it from here."""
    if (path, seed) not in _DATA:
        _DATA[path, seed] = mnist.load(path, seed=seed)
    return _DATA[path, seed]


def prepare(cell: Cell, progress=progress):
    """What a cell needs before its first step, in this process: the backend started, the
    metadata, the data, the batch schedule and the built trainer. Raises `Unavailable`."""
    info = get_backend(cell.backend)
    ok, reason = info.availability()
    if ok and info.language == "julia":
        from .backends import julia_bridge

        ok, reason = julia_bridge.start(cell.julia_threads)
    meta = metadata.collect()  # after the bridge set juliacall's variables, so they are recorded
    meta["seed"] = cell.seed
    if not ok:
        raise Unavailable(reason)
    workload = get_workload(cell.workload)
    dataset = preload_data(cell.data_path, cell.seed)
    schedule = mnist.batch_schedule(len(dataset), cell.warmup + cell.steps, cell.seed, cell.batch_size)
    params = init_params(workload, cell.seed, cell.networks)
    progress("build", 0, cell.warmup)
    t0 = time.perf_counter_ns()
    trainer = info.build(workload, params, dataset)
    return trainer, schedule, dataset, meta, time.perf_counter_ns() - t0


def run_cell(cell: Cell, command: list[str] | None = None, progress=progress,
             environment: dict | None = None, machine_state: dict | None = None,
             exiting: bool = False) -> results.ResultDoc:
    """Measure `cell` in this process and return its result document. `environment` is
    the description of the virtual environment this process runs in, if any;
    `machine_state` what the manager saw before starting this process. `exiting`: the
    process ends once the result is written (a worker), and its trainer is left alive to
    that end (`LEFT_TO_EXIT`)."""
    return run_cell_explained(cell, command, progress, environment, machine_state, exiting=exiting)[0]


# A worker's trainer, never freed: the worker leaves with os._exit once its result is written,
# and freeing a trainer (its compiled programs, its buffers) took equinox-partition's 0.1 s.
LEFT_TO_EXIT: list = []


def run_cell_explained(cell: Cell, command: list[str] | None = None, progress=progress,
                       environment: dict | None = None, machine_state: dict | None = None,
                       explain: dict | None = None,
                       exiting: bool = False) -> tuple[results.ResultDoc, diagnose.Diagnosis | None]:
    """`run_cell`, and with `explain` (the diagnostic options of `gcbench explain`: `sites`,
    `site_steps`) the same loop watched by a `diagnose.Diagnosis`, which is returned beside
    the document (None when not explaining, or for a backend that measures itself)."""
    extra: dict[str, Any] = {"environment": environment} if environment else {}
    life = machineload.snapshot()  # the load over the worker's life, where its timed steps are too short to read
    try:
        trainer, schedule, dataset, meta, build_ns = prepare(cell, progress)
        if exiting:
            LEFT_TO_EXIT.append(trainer)
    except Unavailable as e:
        meta = metadata.collect()
        meta.update(command=command or [], seed=cell.seed)
        return results.new(cell, "unavailable", str(e), metadata=meta, **extra), None
    meta["command"] = command or []
    policy = gcpolicy.parse(cell.policy)
    state = dict(machine_state or {}, cpu_count=os.cpu_count(), cpu_mhz_before=metadata.cpu_mhz(), worker=STARTED_AS)
    if getattr(trainer, "measures_itself", False):  # the Julia backends: the loop runs in Julia
        machine = machineload.snapshot()  # the warm-up included: Julia runs it in the same call
        measured: dict[str, Any] = trainer.measure(schedule, cell, policy)
        measured["load"] = machineload.between(machine, machineload.snapshot(), os.cpu_count())
        if measured.get("refused"):
            return results.new(cell, "unavailable", measured["refused"], metadata=meta, **extra), None
    else:
        measured = measure_python(trainer, schedule, cell, policy, progress, explain)
    diagnosis = measured.pop("diagnosis", None)
    # a cell too short to read over its timed steps is read over the worker's life: a forked
    # worker's (no imports in it) can be shorter than MIN_SECONDS too, then read as "short"
    state.update(measured.pop("load", None) or machineload.over_window([life], machineload.snapshot(), os.cpu_count()),
                 load_after=metadata.load_average(), cpu_mhz_after=metadata.cpu_mhz())
    measured["warmup"].setdefault("build_ns", build_ns)
    meta.update(trainer.metadata())
    return results.new(cell, "ok", data=dataset.describe(), metadata=meta, machine_state=state,
                       params_counted=trainer.param_count(), traces=trainer.trace_counts(), **measured,
                       **extra), diagnosis


def keep_metrics_of(history: list, trainer, i: int) -> None:
    """The loop's bookkeeping, `--bookkeeping metrics`: one record per network per step,
    `{"step", "network", "metrics": {"loss"}}`, kept in `history` for the whole run."""
    for k, loss in enumerate(trainer.network_losses()):
        history.append({"step": i, "network": k, "metrics": {"loss": loss}})


def measure_python(trainer, schedule, cell: Cell, policy: gcpolicy.GCPolicy, progress=progress,
                   explain: dict | None = None) -> dict:
    """Warm-up, then the timed steps under `policy`, measured by the `StepProbe`; with
    `explain` (`gcbench explain`'s options), watched by a `diagnose.Diagnosis` too, returned
    as `diagnosis`. Explained or not, the loop is the same and starts from the same heap:
    the diagnosis is made and started in both cases, watching only when explaining
    (`diagnose.Diagnosis.start`), so that explaining does not move the collector's schedule
    it explains.

    With `cell.bookkeeping == "metrics"` the loop does what many training loops do: after
    each step it appends, per network, a record (`keep_metrics_of`, the loss a Python
    float) to a history kept for the whole run; that is part of the timed step. The
    nested dict matters: CPython does not track a dict that holds only numbers and
    strings, so a flat record costs the collector nothing, while a record holding a dict
    (or a list) is tracked, survives, and is promoted.
    """
    diag = diagnose.Diagnosis(cell.steps if explain is not None else 0, sites=(explain or {}).get("sites", True),
                              site_steps=(explain or {}).get("site_steps"))
    warm = StepProbe(cell.warmup)
    with warm:
        for i in range(cell.warmup):
            warm.begin()
            trainer.step(schedule[i])
            warm.end(i)
            progress("warmup", i + 1, cell.warmup)
    warmup = {**warm.arrays(), "loss": trainer.loss(), "traces": trainer.trace_counts()}

    probe = StepProbe(cell.steps, alloc_blocks=cell.alloc_blocks)
    keep_metrics = cell.bookkeeping == "metrics"
    history: list[dict] = []
    loss_steps, loss_values = [], []
    policy.before_timed()
    gc_state = {"frozen_objects": gc.get_freeze_count(), "gc_enabled": gc.isenabled(),
                "gc_thresholds": list(gc.get_threshold())}
    try:
        probe.install()
        machine = machineload.snapshot()
        diag.start(watch=explain is not None)
        next_report = 0
        for i in range(cell.steps):
            diag.begin_step(i)
            probe.begin()
            trainer.dispatch(schedule[cell.warmup + i])
            probe.dispatched()
            trainer.wait()
            if keep_metrics:
                keep_metrics_of(history, trainer, i)
            if policy.collects_after(i):
                gc.collect()
            probe.end(i)
            diag.end_step(i)
            if i % cell.loss_every == 0 or i == cell.steps - 1:
                loss_steps.append(i)
                loss_values.append(trainer.loss())
            if time.perf_counter_ns() >= next_report:
                progress("timed", i + 1, cell.steps)
                next_report = time.perf_counter_ns() + PROGRESS_EVERY_NS
        bracket_ok = probe.bracket_ok()
        load = machineload.between(machine, machineload.snapshot(), os.cpu_count())
    finally:
        diag.stop()
        probe.uninstall()
        policy.after_timed()
    progress("timed", cell.steps, cell.steps)
    return {
        "warmup": warmup,
        **probe.arrays(),
        "gc_events": probe.event_log(),
        "between_steps": probe.between_steps(),
        "loss": {"step": loss_steps, "value": loss_values},
        "probe": {"bracket_ok": bracket_ok,
                  "gc_outside_steps_ns": probe.total_gc_ns - int(probe.column("gc_ns").sum()),
                  "bookkeeping_entries": len(history)},
        "gc_state": gc_state,
        "load": load,
        **({"diagnosis": diag} if explain is not None else {}),
    }
