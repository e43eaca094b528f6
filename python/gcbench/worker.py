"""The worker: runs one cell in a fresh process and writes its result.

Invoked by the runner as `python -m gcbench.worker OUT_FILE` with the cell (and the
manager's command line) as JSON on standard input. It prints progress lines
`gcbench-progress PHASE DONE TOTAL` on standard output; everything else it has to say
goes to standard error, whose tail the runner keeps when the worker fails.
"""

from __future__ import annotations

import gc
import json
import sys
import time

from . import data as datamod
from . import gcpolicy, metadata, results
from .backends import get_backend
from .config import Cell
from .errors import UsageError
from .probe import StepProbe
from .workloads import get_workload, init_params

PROGRESS_EVERY_NS = 200_000_000


def _progress(phase: str, done: int, total: int) -> None:
    print(f"gcbench-progress {phase} {done} {total}", flush=True)


def run_cell(cell: Cell, command: list[str] | None = None, progress=_progress,
             environment: dict | None = None) -> dict:
    """Measure `cell` in this process and return its result document. `environment` is
    the description of the virtual environment this process runs in, if any."""
    info = get_backend(cell.backend)
    extra = {"environment": environment} if environment else {}
    meta = metadata.collect()
    meta["command"] = command or []
    meta["seed"] = cell.seed
    ok, reason = info.availability()
    if ok and info.language == "julia":
        from .backends import julia_bridge

        ok, reason = julia_bridge.start(cell.julia_threads)
    if not ok:
        return results.new(cell, "unavailable", reason, metadata=meta, **extra)
    workload = get_workload(cell.workload)
    policy = gcpolicy.parse(cell.policy)

    dataset = datamod.load(cell.data_path, seed=cell.seed)
    schedule = datamod.batch_schedule(len(dataset), cell.warmup + cell.steps, cell.seed)
    params = init_params(workload, cell.seed, cell.networks)

    progress("build", 0, cell.warmup)
    t0 = time.perf_counter_ns()
    trainer = info.build(workload, params, dataset)
    build_ns = time.perf_counter_ns() - t0
    if getattr(trainer, "measures_itself", False):  # the Julia backends: the loop runs in Julia
        measured = trainer.measure(schedule, cell.warmup, cell.steps, policy, cell.loss_every)
    else:
        measured = measure_python(trainer, schedule, cell, policy, progress)
    measured["warmup"]["build_ns"] = build_ns
    meta.update(trainer.metadata())
    return results.new(cell, "ok", data=dataset.describe(), metadata=meta,
                       params_counted=trainer.param_count(), traces=trainer.trace_counts(), **measured, **extra)


def measure_python(trainer, schedule, cell: Cell, policy: gcpolicy.GCPolicy, progress=_progress) -> dict:
    """Warm-up, then the timed steps under `policy`, measured by the `StepProbe`."""
    warm = StepProbe(cell.warmup)
    with warm:
        for i in range(cell.warmup):
            warm.begin()
            trainer.step(schedule[i])
            warm.end(i)
            progress("warmup", i + 1, cell.warmup)
    warmup = {**warm.arrays(), "loss": trainer.loss(), "traces": trainer.trace_counts()}

    probe = StepProbe(cell.steps)
    loss_steps, loss_values = [], []
    policy.before_timed()
    gc_state = {"frozen_objects": gc.get_freeze_count(), "gc_enabled": gc.isenabled()}
    try:
        probe.install()
        next_report = 0
        for i in range(cell.steps):
            probe.begin()
            trainer.step(schedule[cell.warmup + i])
            if policy.collects_after(i):
                gc.collect()
            probe.end(i)
            if i % cell.loss_every == 0 or i == cell.steps - 1:
                loss_steps.append(i)
                loss_values.append(trainer.loss())
            if time.perf_counter_ns() >= next_report:
                progress("timed", i + 1, cell.steps)
                next_report = time.perf_counter_ns() + PROGRESS_EVERY_NS
        bracket_ok = probe.bracket_ok()
    finally:
        probe.uninstall()
        policy.after_timed()
    progress("timed", cell.steps, cell.steps)
    return {
        "warmup": warmup,
        **probe.arrays(),
        "loss": {"step": loss_steps, "value": loss_values},
        "probe": {"bracket_ok": bracket_ok,
                  "gc_outside_steps_ns": probe.total_gc_ns - int(probe.gc_ns[: probe.steps].sum())},
        "gc_state": gc_state,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m gcbench.worker OUT_FILE < cell.json", file=sys.stderr)
        return 2
    spec = json.load(sys.stdin)
    cell = Cell(**spec["cell"])
    try:
        doc = run_cell(cell, spec.get("command"), environment=spec.get("environment"))
    except UsageError as e:
        print(f"gcbench: {e}", file=sys.stderr)
        return 2
    results.write(doc, argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
