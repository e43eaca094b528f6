"""The seed reports' cases, reproduced end to end (`gcbench reproduce`): the ViT's batch
calibrated on this machine (equinox-spikes), the cells of every case as one plan through
the pipeline, the gather programs' memory (gather-memory), and the reproductions' table
beside the results. What the numbers are compared with, and how, is `analysing.seed_cases`.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ..analysing import seed_cases
from ..core import files
from ..core.errors import UsageError, option
from ..measuring import results
from ..measuring.results import ResultDoc
from ..running import config
from . import pipeline
from .options import FlowOutcome, ReproduceOptions, RunOptions


def calibrate(data: str | None, out_fn) -> dict:
    """The ViT's median step (equinox-filter, collector off) at decreasing batch sizes, until
    one is at most 8 ms; then `seed_cases.calibration_choice`."""
    from ..running import runner

    medians = {}
    with tempfile.TemporaryDirectory(prefix="gcbench-calibrate-") as tmp:
        for batch in seed_cases.CALIBRATION_BATCHES:
            suite = config.Suite(name="calibrate", backends=["equinox-filter"], workloads=["vit"], gc=["disable"],
                                 steps=40, warmup=3, repeats=1, batch_size=batch).validate()
            cell = suite.cells(data)[0]
            try:
                doc = runner.run_worker(cell, pathlib.Path(tmp) / f"{batch}.json", ["gcbench", "reproduce"], 900, None)
            except runner.CellFailed as e:
                raise UsageError(f"calibration at batch {batch} failed: {str(e).splitlines()[0]}") from None
            if doc.status != "ok":
                raise UsageError(f"calibration needs equinox: {doc.reason}")
            medians[batch] = float(np.median(doc.wall_ns)) / 1e6
            out_fn(f"calibration: batch {batch}: median step {medians[batch]:.3g} ms")
            if medians[batch] <= seed_cases.TARGET_MS:
                break
    chosen = seed_cases.calibration_choice(medians)
    out_fn(f"calibration: batch {chosen} (median step nearest {seed_cases.TARGET_MS:g} ms, at most "
           f"{seed_cases.MAX_MS:g})")
    return {"medians_ms": {str(b): m for b, m in medians.items()}, "chosen": chosen}


def _calibration(opts: ReproduceOptions, only: list[str], out_fn: Callable[..., None]) -> dict:
    """The batch of the Equinox case: given, kept from the run being resumed, or calibrated
    here (never for a scheduler: that would time this machine, not the nodes)."""
    run = opts.run
    earlier = seed_cases.load(run.out) if run.resume and run.out and pathlib.Path(run.out).is_dir() else None
    if opts.batch_size:
        return {"chosen": opts.batch_size, "medians_ms": {}, "given": True}
    if earlier and earlier.calibration.get("chosen"):  # a resumed run keeps its batch
        out_fn(f"calibration: batch {earlier.calibration.get('chosen')}, as the run being resumed chose")
        return earlier.calibration
    if run.executor == "slurm":
        raise UsageError(f"{option('executor')} {run.executor} needs {option('batch_size')} for equinox-spikes: the "
                         "calibration would time this machine, not the nodes (calibrate on a node, reproducing "
                         f"{option('only')} equinox-spikes there, or give the batch)")
    return calibrate(run.data, out_fn)


def _settings(suites: dict, cells: list) -> dict[str, dict[str, Any]]:
    """What each case ran with, and why, as its rows say."""
    settings: dict[str, dict[str, Any]] = {
        name: {"backends": s.backends, "workloads": s.workloads, "gc": s.gc, "steps": s.steps, "repeats": s.repeats,
               "batch_size": s.batch_size,
               "networks": {w: next(c.networks for c in cells if c.workload == w) for w in s.workloads}}
        for name, s in suites.items()}
    settings.setdefault("equinox-spikes", {})["why"] = (
        "the deep module tree of a 12-block ViT makes the collections; the pause stands out only when the step is "
        "short, so the batch is the one whose median step comes nearest the seed's 8 ms on this machine")
    settings.setdefault("flux-many-small", {})["why"] = (
        "the seed's sizes: 200 networks of 4,992 parameters, and the model zoo's 5 LeNet-5s (Julia threads: "
        "the machine's cores, as the MWE's threads option); the JAX family trains the same networks beside them")
    return settings


def _run_cells(cells: list, suites: dict, run: RunOptions, out_fn: Callable[..., None],
               data: tuple, present: pipeline.Present | None) -> pipeline.RunOutcome:
    """The cases' cells as one plan (`pipeline.run_plan`); `data` is `check_data`'s answer."""
    # the seed's MWE trains its 5 LeNet-5s on Julia threads, one per core
    cells = [dataclasses.replace(c, julia_threads=os.cpu_count() or 1)
             if c.backend in seed_cases.JULIA and c.workload == "lenet5" else c for c in cells]
    plan_suite = config.Suite(name="reproduce", backends=sorted({c.backend for c in cells}), repeats=1,
                              timeout=max(s.timeout for s in suites.values()))
    kind, data_note, samples = data
    return pipeline.run_plan(cells, plan_suite, run, out_fn, kind, data_note, samples, present)


def _suites(opts: ReproduceOptions, only: list[str], batch: int) -> dict:
    """The suites of the cases in `only`, at the Equinox case's `batch`, with the timeout given."""
    suites = seed_cases.suites(only, batch, opts.steps, opts.repeats)
    if opts.timeout is not None:
        for s in suites.values():
            s.timeout = opts.timeout
    return suites


def _gather_memory(out_dir: pathlib.Path, command: list[str], settings: dict):
    """The gather case: the seed's sizes compiled on abstract shapes (XLA's memory analysis,
    nothing allocated), its settings noted in `settings`."""
    from ..measuring import program_memory

    files.make_folder(out_dir, "results folder")
    settings["gather-memory"] = {"sizes": "the seed's: x 128^3 float32, idx 2048^3 x 3", "index": "int32, int16",
                                 "why": "compiled on abstract shapes: XLA's memory analysis, nothing allocated"}
    return program_memory.run(["seed"], ["int32", "int16"], [], [], False, out_dir, command)


def run(opts: ReproduceOptions, only: list[str], out_fn: Callable[..., None],
        present: pipeline.Present | None = None) -> FlowOutcome:
    """The cases in `only` into the results folder (`opts.run.out`, or a new one): (the
    reproductions' document, the folder, exit code); the document is None when the run was
    interrupted."""
    from ..measuring.backends import julia_bridge

    run: RunOptions = opts.run
    kind, data_note, samples = pipeline.check_data(run.data)
    calibration = _calibration(opts, only, out_fn) if "equinox-spikes" in only else {}
    suites = _suites(opts, only, calibration.get("chosen") or 8)
    cells = [c for s in suites.values() for c in s.cells(run.data)]
    settings = _settings(suites, cells)
    out = run.out or config.default_out("reproduce")
    docs: list[ResultDoc] = []
    out_dir, code = pathlib.Path(out), 0
    if cells:
        outcome = _run_cells(cells, suites, run.replace(out=out), out_fn, (kind, data_note, samples), present)
        out_dir, code = outcome.folder, outcome.code
        if outcome.docs is None:
            return FlowOutcome(None, out_dir, code)
        docs = outcome.docs
    memory_doc = _gather_memory(out_dir, run.command, settings) if "gather-memory" in only else None
    ok, why = julia_bridge.status()
    doc = seed_cases.build(only, docs or [], calibration, memory_doc, None if ok else why, settings)
    seed_cases.save(out_dir, doc)
    return FlowOutcome(doc, out_dir, 0 if code == 0 or results.ok(docs) else code)
