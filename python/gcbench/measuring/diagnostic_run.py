"""The diagnostic run of a cell, in the worker: what `gcbench explain` starts instead of a
measurement. The collector's work is recorded step by step (`diagnose` for the Python
backends; Julia's `Profile.Allocs` for the Julia ones) into a raw document, which
`analysing.gc_causes` turns into an explanation. Its timings are disturbed and are never
reported as measurements.
"""

from __future__ import annotations

from ..core import files
from ..core.errors import UsageError

RAW_FORMAT = "gcbench-explain-raw"
DEFAULT_STEPS = 200
SITE_STEPS = 25  # allocation sites are traced over the last this many steps (tracemalloc is slow)
JULIA_SAMPLE_RATE = 0.01
DISTURBED = ("diagnostic run: timings are disturbed (every collection lists the generations, tracemalloc "
             "records every allocation) and are not measurements of the loop")


def diagnose_cell(cell, options: dict, command=None, environment=None) -> dict:
    """The diagnostic run of `cell` in this process (called by the worker)."""
    from ..core import metadata
    from . import worker

    if worker.get_backend(cell.backend).language == "julia":
        return _diagnose_julia(cell, options, command, environment)
    # the loop a measurement runs, warm-up, probe and bookkeeping included, watched: the same
    # heap, so the same collections, as the measured loop (worker.measure_python)
    explain = {"sites": options.get("sites", True), "site_steps": options.get("site_steps", SITE_STEPS)}
    doc, diagnosis = worker.run_cell_explained(cell, command, environment=environment, explain=explain)
    if diagnosis is None:
        raise UsageError(f"{cell.label} cannot run here: {doc.reason or 'it did not run'}")
    raw = {"format": RAW_FORMAT, "cell": cell.to_json(), "label": cell.label, "metadata": doc.metadata,
           "environment": environment, "data": doc.data, "python": diagnosis.to_json()}
    raw["python"]["interpreter"] = metadata.collect()["python"]
    return raw


def _diagnose_julia(cell, options: dict, command, environment) -> dict:
    """Julia: sampled allocations by type and frame (`Profile.Allocs`)."""
    from . import worker

    try:
        trainer, schedule, dataset, meta, _ = worker.prepare(cell)
    except worker.Unavailable as e:
        raise UsageError(f"{cell.label} cannot run here: {e}") from None
    meta["command"] = command or []
    raw = {"format": RAW_FORMAT, "cell": cell.to_json(), "label": cell.label, "metadata": meta,
           "environment": environment, "data": dataset.describe()}
    trainer.prepare(schedule)
    trainer.explain_allocs(1, cell.warmup, 0.0, cell.bookkeeping)  # warm-up: compilation, nothing sampled
    # the loop that `run` measures, its bookkeeping included, as Python's explanation does
    raw["julia"] = trainer.explain_allocs(cell.warmup + 1, cell.steps, options.get("sample_rate", JULIA_SAMPLE_RATE),
                                          cell.bookkeeping)
    raw["metadata"].update(trainer.metadata())
    return raw


def write_raw(doc: dict, path) -> None:
    files.write_json(path, doc, indent=None)


def load_raw(path) -> dict:
    doc = files.check_header(files.read_json(path, "diagnostic run"), str(path), RAW_FORMAT, "diagnostic run")
    if not ("python" in doc or "julia" in doc):
        raise UsageError(f"{path}: not a gcbench diagnostic run (neither a Python nor a Julia diagnosis)")
    return doc
