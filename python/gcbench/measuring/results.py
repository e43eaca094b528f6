"""The result schema: one JSON document per repeat of a cell, written atomically,
validated on load.

How it works, and why: docs/internals.md, `gcbench.measuring.results`.
"""

from __future__ import annotations

import datetime
import os
import pathlib
from typing import Any, TypedDict, cast

import numpy as np

from ..core import files, schemas
from ..core.errors import UsageError

SCHEMA_VERSION = 2
FORMAT = "gcbench-result"
STATUSES = ("ok", "failed", "unavailable")
DEFAULT_BATCH_SIZE = 128  # what version-1 documents ran with

# Fields every document has, whatever its status, and their JSON types.

class _Recorded(TypedDict):
    """What every result document holds, whatever its status (REQUIRED checks it on read)."""

    format: str
    schema_version: int
    cell: str
    backend: str
    workload: str
    gc_policy: str
    repeat: int
    status: str  # ok, failed or unavailable
    reason: str
    networks: int | None  # None: a user's loop that did not say
    params_per_network: int
    data: dict[str, Any]
    metadata: dict[str, Any]


class ResultDoc(_Recorded, total=False):
    """One repeat of one cell, as a worker (or `gcbench.measure`) writes it: the per-step
    arrays of an ok result (numpy arrays in memory, lists on disk) and what describes the
    run. schemas.RESULT checks every field on read; docs/results.md, "Result fields", explains them."""

    batch_size: int
    bookkeeping: str
    cell_spec: dict[str, Any]
    variant: str
    environment: dict[str, Any]
    machine_state: dict[str, Any]
    params_counted: int
    gc_state: dict[str, Any]  # a user's loop: the collector's state when it was measured
    probe: dict[str, Any]  # a user's loop: steps that raised (not timed)
    traces: dict[str, Any]
    loss: Any
    warmup: dict[str, Any]
    between_steps: dict[str, Any]
    memory: dict[str, Any]
    gc_events: Any
    wall_ns: Any
    gc_ns: Any
    gc_collections: Any
    gc_collected: Any
    alloc_blocks: Any
    alloc_bytes: Any
    gc_full: Any
    gc_pressure: Any
    host_ns: Any
    cpu_ns: Any
    gc_cpu_ns: Any
    gap_ns: Any
    gap_gc_ns: Any
    gap_cpu_ns: Any
    gap_gc_cpu_ns: Any
    gap_collections: Any
    gc_explicit: Any
    gc_enabled: Any
    # in memory only, never written: an earlier ok result kept in place of this run's failure
    _failed_this_run: bool

REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "schema_version": int,
    "cell": str,
    "backend": str,
    "workload": str,
    "gc_policy": str,
    "repeat": int,
    "status": str,
    "reason": str,
    "networks": (int, type(None)),  # None: a user's loop that did not say
    "params_per_network": int,
    "data": dict,
    "metadata": dict,
}
# Per-step arrays of an `ok` document; `gc_collections` is a list of per-generation lists.
STEP_ARRAYS = ("wall_ns", "gc_ns", "gc_collections")
OPTIONAL_STEP_ARRAYS = ("gc_collected", "alloc_blocks", "alloc_bytes", "gc_full", "gc_pressure", "host_ns", "cpu_ns",
                        "gc_cpu_ns", "gap_ns", "gap_gc_ns", "gap_cpu_ns", "gap_gc_cpu_ns", "gap_collections",
                        "gc_explicit", "gc_enabled")
ROWS = ("gc_collections", "gap_collections", "gc_explicit")  # per step, one count per generation
# Arrays whose values cannot be negative (gc_pressure and alloc_blocks are net changes and can).
NON_NEGATIVE = ("wall_ns", "gc_ns", "gc_collections", "gc_collected", "alloc_bytes", "gc_full", "host_ns", "cpu_ns",
                "gc_cpu_ns", "gap_ns", "gap_gc_ns", "gap_cpu_ns", "gap_gc_cpu_ns", "gap_collections", "gc_explicit",
                "gc_enabled")
# Other documents a results folder may hold.
NOT_CELLS = ("suite.json", "memory.json", "bisect.json", "explain.json", "reproduce.json", "gitbisect.json")


def new(cell, status: str, reason: str = "", **fields) -> ResultDoc:
    """A result document for `cell` (a `cell.Cell`) with the common fields filled in."""
    doc = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "cell": cell.id,
        "backend": cell.backend,
        "workload": cell.workload,
        "gc_policy": cell.policy,
        "repeat": cell.repeat,
        "status": status,
        "reason": reason,
        "networks": cell.networks,
        "params_per_network": cell.params_per_network,
        "batch_size": cell.batch_size,
        "bookkeeping": cell.bookkeeping,
        "cell_spec": cell.to_json(),
        "data": {},
        "metadata": {},
    }
    if cell.env is not None:
        spec = cell.env_spec
        doc["environment"] = {"spec": spec.text, "name": spec.name}
    doc.update(fields)
    return cast(ResultDoc, doc)


def run_id(doc: ResultDoc) -> str | None:
    """The invocation a repeat ran in (None for results that do not record it): repeats of
    one invocation with the same repeat number ran in the same round."""
    return (doc.get("machine_state") or {}).get("run_id")


def started(doc: ResultDoc) -> float | None:
    """When the repeat started (its metadata's date), in seconds since the epoch; None if unknown."""
    stamp = (doc.get("metadata") or {}).get("date")
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None
    except (ValueError, AttributeError):
        return None


def label(doc: ResultDoc) -> str:
    """The repeat's name for people, e.g. `jax/mlp/default #1`."""
    from .cell import cell_label

    return cell_label(doc["backend"], doc["workload"], doc["gc_policy"], doc["repeat"], env_name(doc))


def env_name(doc: ResultDoc) -> str | None:
    """The name of the environment the cell ran in; None for gcbench's own interpreter."""
    env = doc.get("environment")
    return env.get("name") if env else None


def batch_size(doc: ResultDoc) -> int | None:
    """The batch a result trained with; None for a user's loop that did not say (version-1
    documents of gcbench's own cells ran with DEFAULT_BATCH_SIZE)."""
    return doc.get("batch_size", None if doc.get("backend") == "user" else DEFAULT_BATCH_SIZE)


def variant(doc: ResultDoc) -> str | None:
    """The variant of a user's loop (`measure(..., variant=)`), None otherwise."""
    return doc.get("variant")


def write(doc: ResultDoc, path: str | os.PathLike) -> pathlib.Path:
    """Write `doc` to `path` atomically: a reader sees the old file or the whole new one."""
    validate(doc, str(path))
    files.make_folder(pathlib.Path(path).parent, "results folder")
    return files.write_json(path, doc, indent=None)


def _check_array(where: str, key: str, arr, n: int | None) -> int:
    if not isinstance(arr, (list, np.ndarray)):  # numpy: a measurement's own, before it is written
        raise UsageError(f"{where}: ok result without per-step array {key!r}")
    if n is not None and len(arr) != n:
        raise UsageError(f"{where}: per-step array {key!r} has {len(arr)} steps, expected {n}")
    try:
        values = np.asarray(arr)
    except ValueError:
        raise UsageError(f"{where}: per-step array {key!r} is ragged") from None
    if values.size and (values.dtype.kind not in "iu" or (key in ROWS and values.ndim != 2)
                        or (key not in ROWS and values.ndim != 1)):
        what = "rows of integers" if key in ROWS else "integers"
        raise UsageError(f"{where}: per-step array {key!r} must hold {what}")
    if key in NON_NEGATIVE and values.size and values.min() < 0:
        raise UsageError(f"{where}: per-step array {key!r} holds negative values")
    if key == "wall_ns" and values.size and values.min() <= 0:
        raise UsageError(f"{where}: per-step array 'wall_ns' holds a step that took no time")
    if key in ROWS and len(arr) and values.shape[-1] == 0:
        raise UsageError(f"{where}: per-step array {key!r} has empty rows (no generation counted)")
    return len(arr)


def validate(doc, where: str = "result") -> ResultDoc:
    """Check that `doc` is a gcbench result this version understands; return it."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"{where}: not a gcbench result (no \"format\": \"{FORMAT}\")")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UsageError(f"{where}: gcbench result without an integer schema_version")
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"{where}: result schema_version {version} is newer than this gcbench reads "
            f"({SCHEMA_VERSION}); upgrade gcbench to read it"
        )
    for key, typ in REQUIRED.items():
        value = doc.get(key)
        if not isinstance(value, typ) or (isinstance(value, bool) and typ is not bool):
            kind = typ.__name__ if isinstance(typ, type) else f"{typ[0].__name__} or null"
            raise UsageError(f"{where}: field {key!r} missing or not a {kind}")
    schemas.check(doc, schemas.RESULT, where)
    env = doc.get("environment")
    if env is not None and not (isinstance(env, dict) and isinstance(env.get("spec"), str)
                                and isinstance(env.get("name"), str)):
        raise UsageError(f"{where}: field 'environment' must be an object with 'spec' and 'name'")
    if doc["status"] not in STATUSES:
        raise UsageError(f"{where}: status {doc['status']!r} is not one of {', '.join(STATUSES)}")
    if "batch_size" in doc and not (isinstance(doc["batch_size"], int) and doc["batch_size"] > 0):
        raise UsageError(f"{where}: field 'batch_size' must be a positive integer")
    if doc["status"] == "ok":
        n = None
        for key in STEP_ARRAYS + tuple(k for k in OPTIONAL_STEP_ARRAYS if k in doc):
            n = _check_array(where, key, doc.get(key), n)
        if not n:
            raise UsageError(f"{where}: ok result with no timed steps")
        if not isinstance(doc.get("loss"), dict):
            raise UsageError(f"{where}: ok result without sampled 'loss'")
    return cast(ResultDoc, doc)  # every field checked above


def load(path: str | os.PathLike) -> ResultDoc:
    """Read and validate one result file."""
    path = pathlib.Path(path)
    doc = files.read_json(path, "gcbench result")
    return validate(doc, str(path))


def load_dir(folder: str | os.PathLike, allow_empty: bool = False) -> list[ResultDoc]:
    """Every result in `folder` (not recursive), sorted by file name; other JSON is an
    error, and so are two files holding the same repeat of the same cell."""
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such results folder")
    docs: list[ResultDoc] = []
    seen: dict[tuple, str] = {}
    for path in sorted(folder.glob("*.json")):
        if path.name in NOT_CELLS or path.name.startswith("."):  # dot files: partial results, temporaries
            continue
        doc = load(path)
        key = (doc["cell"], doc["repeat"])
        if key in seen:
            raise UsageError(f"{folder}: {seen[key]} and {path.name} hold the same result ({label(doc)}); "
                             "remove one of them")
        seen[key] = path.name
        docs.append(doc)
    if not docs and not allow_empty:
        raise UsageError(f"{folder}: no gcbench results there")
    return docs


def finish_plan(out_dir: pathlib.Path, plan: dict, state: str) -> None:
    """Write `plan` back to suite.json in `state`, its latest run ended now in that state."""
    plan = dict(plan, state=state)
    if plan.get("runs"):
        plan["runs"] = [*plan["runs"][:-1], dict(plan["runs"][-1], state=state, finished=datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec="seconds"))]
    files.write_json(out_dir / "suite.json", plan)


def read_plan(out_dir: pathlib.Path) -> dict:
    """A results folder's suite.json (the plan `gcbench run` writes), or {} when there is none;
    a one-line error when malformed."""
    path = out_dir / "suite.json"
    if not path.is_file():
        return {}
    plan = files.read_json(path, "suite.json")
    schemas.check(plan, schemas.SUITE, str(path))
    if not isinstance(plan, dict) or not isinstance(plan.get("cells", []), list) \
            or not all(isinstance(c, str) for c in plan.get("cells", [])):
        raise UsageError(f"{path}: not a gcbench suite.json (expected an object with a list of cell names)")
    return plan
