"""The result schema: one JSON document per repeat of a cell, written atomically,
validated on load.

How it works, and why: docs/internals.md, `gcbench.measuring.results`.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import pathlib
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, TypeAlias, TypedDict, get_args, overload

import numpy as np

from ..core import files, records, schemas
from ..core.errors import UsageError

if TYPE_CHECKING:  # read where the schema is generated, never at run time
    from msgspec import Meta
    from typing_extensions import NotRequired  # typing's own from Python 3.11

SCHEMA_VERSION = 2
FORMAT: Final = "gcbench-result"
Status = Literal["ok", "failed", "unavailable"]
STATUSES: tuple[str, ...] = get_args(Status)
DEFAULT_BATCH_SIZE = 128  # what version-1 documents ran with

# The result document, described once: the `ResultDoc` record and the TypedDicts of its
# parts are its types, their `Meta` annotations its constraints. msgspec checks every
# document read or written against them (`_check`), and result.schema.json (published for
# other tools) is generated from them (`result_schema.generate`). The annotations are
# evaluated only in these two (`in_scope`), so a worker that keeps its result in memory imports no
# more than before. The per-step arrays are checked with numpy (`_check_array`).
# (strings: evaluated where a document is checked or the schema generated, with msgspec's Meta in scope)
Name: TypeAlias = "Annotated[str, Meta(pattern=schemas.NAME)]"
Count: TypeAlias = "Annotated[int, Meta(ge=0)]"
Share: TypeAlias = "Annotated[float, Meta(ge=0)]"  # NaN and infinity never get this far: files.read_json
Fraction: TypeAlias = "Annotated[float, Meta(ge=0, le=1)]"
Cores: TypeAlias = "Annotated[int, Meta(ge=1)]"
MaybeCount: TypeAlias = "Annotated[int, Meta(ge=0)] | None"
MaybeName: TypeAlias = "Annotated[str, Meta(pattern=schemas.NAME)] | None"
MaybeShare: TypeAlias = "Annotated[float, Meta(ge=0)] | None"
MaybeCores: TypeAlias = "Annotated[int, Meta(ge=1)] | None"
# a per-step array: one integer per timed step (a row of integers per step for ROWS)
Steps: TypeAlias = "Annotated[Any, Meta(extra_json_schema={'type': 'array', 'items': {'type': 'integer'}})]"
StepRows: TypeAlias = ("Annotated[Any, Meta(extra_json_schema={'type': 'array', 'items': {'type': 'array', "
                       "'items': {'type': 'integer'}}})]")


class GcbenchVersion(TypedDict, total=False):
    version: str
    commit: str | None


class Metadata(TypedDict, total=False):
    """Where and how the repeat ran (core.metadata.collect)."""

    python: str
    python_implementation: str
    python_executable: str
    packages: dict[str, str | None]
    platform: str
    machine: str
    cpu: str
    cpu_count: MaybeCores
    hostname: str
    gc_thresholds: list[int]
    env: dict[str, Any]
    date: str
    seed: int | None
    command: list[str]
    jax_backend: str | None
    devices: list[str]
    device_kinds: list[str]
    gcbench: GcbenchVersion


class Data(TypedDict, total=False):
    kind: Name
    source: str
    samples: Count


class Scheduler(TypedDict):
    """The job that ran the repeat, where a scheduler did (`--executor slurm`): cluster.job_facts."""

    executor: schemas.Executor
    job_id: NotRequired[str | None]
    array_job_id: NotRequired[str | None]
    array_task_id: NotRequired[str | None]
    node: NotRequired[str | None]
    partition: NotRequired[str | None]


class MachineState(TypedDict, total=False):
    """The machine before, after and over the timed steps (core.machineload.between)."""

    load_before: MaybeShare
    load_after: MaybeShare
    cpu_count: MaybeCores
    cpu_mhz_before: float | None
    cpu_mhz_after: float | None
    run_id: str
    others_cores: Share
    steal: Fraction
    cpu_pressure: Fraction
    process_cpu_s: Share
    gcbench_cpu_s: Share
    load_seconds: Share
    load_doubt: str
    # a loop shorter than MIN_SECONDS: "short", read over the time before it too, without waiting
    # (down to SHORT_SECONDS); "after", over the half second after it (0.2.x)
    load_window: Literal["short", "after"]
    scheduler: Scheduler
    # how the repeat's process started: "forked" from a server that had imported its backend
    # (running.warm_workers, 0.4), or a fresh "interpreter"; absent before 0.4: an interpreter
    worker: Literal["forked", "interpreter"]


class Environment(TypedDict):
    """The virtual environment the cell ran in (absent: gcbench's own interpreter)."""

    spec: str
    name: str
    python: NotRequired[str | None]
    packages: NotRequired[dict[str, str | None]]
    pins: NotRequired[list[str]]


class Loss(TypedDict):
    step: list[int]
    value: list[float | None]


class GcEvents(TypedDict):
    """One entry per collection: the step it fell in, its generation, pause and objects collected."""

    step: list[int]
    generation: list[Count]
    pause_ns: list[Count]
    collected: list[Count]
    examined: NotRequired[list[Count]]  # objects in the generations it scanned, frozen ones excluded
    dropped: NotRequired[Count]


class OldAfterFull(TypedDict):
    """The oldest generation at the end of the steps that held a listed full collection, and
    the memory in use there: the C allocator's bytes (where they were read as the timed
    steps began), else the resident set's."""

    step: list[int]
    objects: list[Count]
    malloc_bytes: NotRequired[list[Count]]
    rss_bytes: NotRequired[list[Count]]


class BetweenSteps(TypedDict):
    """Collections outside every step, and the loop's span (probe.between_steps)."""

    gc_ns: Count
    collections: list[Count]
    gc_cpu_ns: NotRequired[Count]
    collected: NotRequired[Count]
    span_ns: NotRequired[Count]
    # a loop of your own (0.3 on): the thread's CPU time from its first timed step's clock to
    # the block's end, in place of each step's and gap's (`cpu_ns`, `gap_cpu_ns`: not read)
    loop_cpu_ns: NotRequired[Count]
    explicit: NotRequired[list[Count]]
    explicit_sites: NotRequired[dict[str, Count]]
    examined: NotRequired[Count]  # every collection's, steps and gaps alike (totals of the loop)
    promoted: NotRequired[Count]
    old_after_full: NotRequired[OldAfterFull]


class Memory(TypedDict, total=False):
    """Sampled resident set size, and tracked objects at the start and end (probe.memory)."""

    every: Count
    rss_step: list[int]
    rss_bytes: list[Count]
    tracked_start: MaybeCount
    tracked_end: MaybeCount
    old_start: MaybeCount  # objects in the older generations (1 and 2) as the timed steps began, and at the end
    old_end: MaybeCount
    malloc_start: MaybeCount  # the C allocator's bytes in use as the timed steps began, and at the end
    malloc_end: MaybeCount


@dataclasses.dataclass(eq=False)
class ResultDoc:
    """One repeat of one cell, as a worker (or `gcbench.measure`) writes it: what every result
    holds whatever its status (the fields up to `metadata`), then what an ok result adds (the
    per-step arrays: numpy in memory, lists as read) and what describes the run. A field
    left None is absent from the file (`to_doc`); docs/results.md, "Result fields", explains
    each. Equality is identity, as the per-step arrays have no single truth value."""

    NOT_WRITTEN: ClassVar[tuple[str, ...]] = ("superseded", "unknown")

    format: Literal["gcbench-result"]
    schema_version: int
    cell: Annotated[str, Meta(pattern=schemas.CELL_ID)]
    backend: Name
    workload: Name
    gc_policy: Annotated[str, Meta(pattern=schemas.POLICY)]
    repeat: Count
    status: Status
    reason: str
    networks: Annotated[int, Meta(ge=1)] | None  # None: a user's loop that did not say
    params_per_network: Count
    data: Data
    metadata: Metadata
    batch_size: Annotated[int, Meta(ge=1)] | None = None
    bookkeeping: MaybeName = None
    cell_spec: dict[str, Any] | None = None
    variant: MaybeName = None
    environment: Environment | None = None
    machine_state: MachineState | None = None
    params_counted: MaybeCount = None
    gc_state: dict[str, Any] | None = None  # a user's loop: the collector's state when it was measured
    probe: dict[str, Any] | None = None  # a user's loop: steps that raised (not timed)
    traces: dict[str, Any] | None = None
    loss: Loss | None = None
    warmup: dict[str, Any] | None = None
    between_steps: BetweenSteps | None = None
    memory: Memory | None = None
    gc_events: GcEvents | None = None
    wall_ns: Steps = None
    gc_ns: Steps = None
    gc_collections: StepRows = None
    gc_collected: Steps = None
    alloc_blocks: Steps = None
    alloc_bytes: Steps = None
    gc_full: Steps = None
    gc_pressure: Steps = None
    gc_examined: Steps = None
    gc_promoted: Steps = None
    host_ns: Steps = None
    cpu_ns: Steps = None
    gc_cpu_ns: Steps = None
    gap_ns: Steps = None
    gap_gc_ns: Steps = None
    gap_cpu_ns: Steps = None
    gap_gc_cpu_ns: Steps = None
    gap_collections: StepRows = None
    gc_explicit: StepRows = None
    gc_enabled: Steps = None
    # in memory only, never written (NOT_WRITTEN): an earlier ok result kept in place of this
    # run's failure, which the run counts as failed
    superseded: bool = False
    # what a document held that this gcbench does not know (a newer one's fields): written back as read
    unknown: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_doc(self) -> dict[str, Any]:
        """The document as JSON values go: the fields not None (`networks` always), in order."""
        doc = {f.name: v for f in dataclasses.fields(self) if f.name not in self.NOT_WRITTEN
               and ((v := getattr(self, f.name)) is not None or f.name in REQUIRED)}
        return {**doc, **self.unknown}

    # -- 0.2's dictionary access, deprecated (removed in 0.4) ------------------------------
    # 0.2's `gcbench.load`, `load_dir` and `Measurement.result()` gave the document as a dict;
    # code that reads it so keeps working, warned, with the values the attributes hold.
    def __getitem__(self, key: str) -> Any:
        _subscript_warning(f"result[{key!r}]", f"result.{key}" if key in _FIELDS else f"result.unknown[{key!r}]")
        return self._lookup(key)

    def get(self, key: str, default: Any = None) -> Any:
        _subscript_warning(f"result.get({key!r})", f"result.{key}" if key in _FIELDS else "result.unknown.get(...)")
        try:
            return self._lookup(key)
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        _subscript_warning(f"{key!r} in result", f"result.{key} is not None")
        return isinstance(key, str) and key in self.to_doc()

    def keys(self):
        _subscript_warning("result.keys()", "result.to_doc().keys()")
        return self.to_doc().keys()

    def _lookup(self, key: str) -> Any:
        """A key of the document as 0.2's dict had it: absent (None here) is a KeyError."""
        value = getattr(self, key) if key in _FIELDS else self.unknown.get(key)
        if value is None and key not in REQUIRED:
            raise KeyError(key)
        return value

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> ResultDoc:
        """The record of a checked document (`validate`)."""
        return cls(**{k: v for k, v in doc.items() if k in _FIELDS},
                   unknown={k: v for k, v in doc.items() if k not in _FIELDS})


def _subscript_warning(old: str, new: str) -> None:
    warnings.warn(f"{old}: a result is a record since gcbench 0.3 (gcbench.measuring.results.ResultDoc); "
                  f"read {new} (its dictionary access goes in 0.4; result.to_doc() is the document as JSON holds "
                  "it)", DeprecationWarning, stacklevel=3)


_FIELDS = frozenset(f.name for f in dataclasses.fields(ResultDoc)) - set(ResultDoc.NOT_WRITTEN)
# what every result holds, whatever its status: the fields without a default
REQUIRED = tuple(f.name for f in dataclasses.fields(ResultDoc) if f.default is f.default_factory is dataclasses.MISSING)
# Per-step arrays of an `ok` document; `gc_collections` is a list of per-generation lists.
STEP_ARRAYS = ("wall_ns", "gc_ns", "gc_collections")
OPTIONAL_STEP_ARRAYS = ("gc_collected", "alloc_blocks", "alloc_bytes", "gc_full", "gc_pressure", "gc_examined",
                        "gc_promoted", "host_ns", "cpu_ns",
                        "gc_cpu_ns", "gap_ns", "gap_gc_ns", "gap_cpu_ns", "gap_gc_cpu_ns", "gap_collections",
                        "gc_explicit", "gc_enabled")
ROWS = ("gc_collections", "gap_collections", "gc_explicit")  # per step, one count per generation
# a row's width: Python's three generations, or Julia's two kinds (incremental, full); the
# loop's own gc.collect() calls are Python's only
ROW_WIDTHS = {"gc_collections": (2, 3), "gap_collections": (2, 3), "gc_explicit": (3,)}
# Arrays whose values cannot be negative (gc_pressure and alloc_blocks are net changes and can).
NON_NEGATIVE = ("wall_ns", "gc_ns", "gc_collections", "gc_collected", "alloc_bytes", "gc_full", "gc_examined",
                "gc_promoted", "host_ns", "cpu_ns",
                "gc_cpu_ns", "gap_ns", "gap_gc_ns", "gap_cpu_ns", "gap_gc_cpu_ns", "gap_collections", "gc_explicit",
                "gc_enabled")
# Other documents a results folder may hold.
NOT_CELLS = ("suite.json", "memory.json", "bisect.json", "explain.json", "reproduce.json", "gitbisect.json")


def new(cell, status: Status, reason: str = "", **fields) -> ResultDoc:
    """A result document for `cell` (a `cell.Cell`) with the common fields filled in."""
    environment = None
    if cell.env is not None:
        spec = cell.env_spec
        environment = {"spec": spec.text, "name": spec.name}
    common: dict[str, Any] = {"data": {}, "metadata": {}, "batch_size": cell.batch_size,
                              "bookkeeping": cell.bookkeeping, "cell_spec": cell.to_json(), "environment": environment}
    return ResultDoc(FORMAT, SCHEMA_VERSION, cell.id, cell.backend, cell.workload, cell.policy, cell.repeat, status,
                     reason, cell.networks, cell.params_per_network, **{**common, **fields})


@dataclasses.dataclass(frozen=True)
class EventLog:
    """A repeat's collection log as arrays, one entry per collection (`events`): the step it
    fell in (-1: between steps), its generation, pause, objects collected and, where
    recorded, objects examined (None where the log predates them)."""

    step: np.ndarray
    generation: np.ndarray
    pause_ns: np.ndarray
    collected: np.ndarray
    examined: np.ndarray | None


def events(doc: ResultDoc) -> EventLog | None:
    """The collection log of `doc` as arrays; None where it has none."""
    log = doc.gc_events
    if not log:
        return None
    arrays = {k: np.asarray(v, np.int64) for k, v in log.items() if k != "dropped"}
    examined = arrays.get("examined")
    generation = arrays.get("generation", np.zeros(0, np.int64))
    return EventLog(arrays.get("step", np.zeros(0, np.int64)), generation,
                    arrays.get("pause_ns", np.zeros(0, np.int64)), arrays.get("collected", np.zeros(0, np.int64)),
                    examined if examined is not None and len(examined) == len(generation) else None)


@overload
def part(doc: ResultDoc, key: Literal["memory"]) -> Memory: ...
@overload
def part(doc: ResultDoc, key: Literal["between_steps"]) -> BetweenSteps: ...
@overload
def part(doc: ResultDoc, key: Literal["machine_state"]) -> MachineState: ...
@overload
def part(doc: ResultDoc, key: Literal["metadata"]) -> Metadata: ...
@overload
def part(doc: ResultDoc, key: Literal["environment"]) -> Environment: ...
@overload
def part(doc: ResultDoc, key: Literal["gc_state", "warmup", "probe", "traces", "cell_spec"]) -> dict[str, Any]: ...


def part(doc: ResultDoc, key: str) -> Mapping[str, Any]:
    """A part of the document (`between_steps`, `machine_state`, `environment`, ...), empty
    where the document has none; typed as the part's own record (its TypedDict), so that a
    field name mistyped where it is read is an error mypy sees."""
    return getattr(doc, key) or {}


def run_id(doc: ResultDoc) -> str | None:
    """The invocation a repeat ran in (None for results that do not record it): repeats of
    one invocation with the same repeat number ran in the same round."""
    return part(doc, "machine_state").get("run_id")


def started(doc: ResultDoc) -> float | None:
    """When the repeat started (its metadata's date), in seconds since the epoch; None if unknown."""
    stamp = part(doc, "metadata").get("date")
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None
    except (ValueError, AttributeError):
        return None


def label(doc: ResultDoc) -> str:
    """The repeat's name for people, e.g. `jax/mlp/default #1`."""
    from .cell import cell_label

    return cell_label(doc.backend, doc.workload, doc.gc_policy, doc.repeat, env_name(doc))


def env_name(doc: ResultDoc) -> str | None:
    """The name of the environment the cell ran in; None for gcbench's own interpreter."""
    return doc.environment.get("name") if doc.environment else None


def batch_size(doc: ResultDoc) -> int | None:
    """The batch a result trained with; None for a user's loop that did not say (version-1
    documents of gcbench's own cells ran with DEFAULT_BATCH_SIZE)."""
    if doc.batch_size is not None:
        return doc.batch_size
    return None if doc.backend == "user" else DEFAULT_BATCH_SIZE


def ok(docs: list[ResultDoc]) -> list[ResultDoc]:
    """The repeats of `docs` that ran ok (those with per-step arrays)."""
    return [d for d in docs if d.status == "ok"]


def step_count(doc: ResultDoc) -> int:
    """How many timed steps an ok result holds."""
    return 0 if doc.wall_ns is None else len(doc.wall_ns)


def step_array(doc: ResultDoc, key: str, dtype: type = np.int64) -> np.ndarray | None:
    """The per-step array `key` of `doc` as numpy (ROWS as (steps, generations)); None
    where the result did not record it, or recorded no step."""
    values = getattr(doc, key)
    if values is None or len(values) == 0:
        return None
    out: np.ndarray = np.asarray(values, dtype)
    return out.reshape(step_count(doc), -1) if key in ROWS else out


def step_total(doc: ResultDoc, key: str) -> float:
    """The per-step array `key` summed over the steps (0 where it was not recorded)."""
    values = step_array(doc, key, np.float64)
    return float(values.sum()) if values is not None else 0.0


def variant(doc: ResultDoc) -> str | None:
    """The variant of a user's loop (`measure(..., variant=)`), None otherwise."""
    return doc.variant


def write(doc: ResultDoc, path: str | os.PathLike, check: bool = True) -> pathlib.Path:
    """Write `doc` to `path` atomically: a reader sees the old file or the whole new one.
    `check=False` only where the reader checks it (a worker's result, which the runner
    loads with `load`): the check imports msgspec, 20 to 50 ms of every repeat."""
    stored = doc.to_doc()
    if check:
        _check(stored, str(path))
    files.make_folder(pathlib.Path(path).parent, "results folder")
    return files.write_json(path, stored, indent=None)


def _check_array(where: str, key: str, arr, n: int | None) -> np.ndarray:
    """A per-step array checked (`n` steps, where given), as numpy."""
    if not isinstance(arr, (list, np.ndarray)):  # numpy: a measurement's own, before it is written
        raise UsageError(f"{where}: ok result without per-step array {key!r}")
    if n is not None and len(arr) != n:
        raise UsageError(f"{where}: per-step array {key!r} has {len(arr)} steps, expected {n}")
    try:
        values = np.asarray(arr)
    except ValueError:
        raise UsageError(f"{where}: per-step array {key!r} is ragged") from None
    if values.size:
        _check_values(where, key, values)
    if key in ROWS and len(arr):
        _check_rows(where, key, values.shape[-1])
    if isinstance(arr, list) and _holds_booleans(arr, key in ROWS):
        raise UsageError(f"{where}: per-step array {key!r} holds true or false where numbers belong")
    return values


def _check_rows(where: str, key: str, width: int) -> None:
    """A per-step array of rows: one count per generation in each (Python's three, or
    Julia's two kinds)."""
    if width == 0:
        raise UsageError(f"{where}: per-step array {key!r} has empty rows (no generation counted)")
    if width not in ROW_WIDTHS[key]:
        raise UsageError(f"{where}: per-step array {key!r} has rows of {width}; they hold one count per "
                         f"generation ({' or '.join(map(str, ROW_WIDTHS[key]))})")


def _holds_booleans(arr: list, rows: bool) -> bool:
    import itertools

    items = itertools.chain.from_iterable(arr) if rows else arr
    return bool in set(map(type, items))


def _check_pauses(where: str, wall: np.ndarray, gc_ns: np.ndarray) -> None:
    """No step's collector pauses outlast the step."""
    over = np.flatnonzero(gc_ns > wall)
    if over.size:
        i = int(over[0])
        raise UsageError(f"{where}: step {i} spent {int(gc_ns[i]):,} ns in collections, longer than the step "
                         f"({int(wall[i]):,} ns)" + (f", and {over.size - 1} more steps" if over.size > 1 else ""))


def _check_consistent(doc, where: str, arrays: dict[str, np.ndarray]) -> None:
    """What the parts of an ok result say of each other: its cell id names its backend and
    workload; no step's collector pauses outlast the step; the spec's step count is the
    steps' (where one is given); the warm-up's arrays are as long as each other."""
    cell, backend, workload = doc.get("cell", ""), doc.get("backend"), doc.get("workload")
    if not cell.startswith(f"{backend}__{workload}__"):
        raise UsageError(f"{where}: cell {cell!r} does not belong to backend {backend!r} and workload {workload!r}")
    wall, gc_ns = (arrays[key] for key in ("wall_ns", "gc_ns"))  # as `_check_array` read them
    n = len(wall)
    _check_pauses(where, wall, gc_ns)
    spec = doc.get("cell_spec") or {}
    steps = spec.get("steps")
    if isinstance(steps, int) and not isinstance(steps, bool) and steps != n:
        raise UsageError(f"{where}: cell_spec.steps is {steps:,}, but the result holds {n:,} steps")
    _check_warmup(doc.get("warmup") or {}, where)


def _check_warmup(warm: dict, where: str) -> None:
    """The warm-up's per-step arrays: as long as each other, each as a timed one is."""
    arrays = {k: v for k, v in warm.items() if k in STEP_ARRAYS + OPTIONAL_STEP_ARRAYS}
    if not arrays:
        return
    lengths = {k: len(v) if isinstance(v, list) else -1 for k, v in arrays.items()}
    if min(lengths.values()) < 0 or len(set(lengths.values())) > 1:
        raise UsageError(f"{where}: the warm-up's per-step arrays differ in length ("
                         + ", ".join(f"{k} {v}" for k, v in lengths.items()) + ")")
    for k, v in arrays.items():
        if v:
            _check_array(f"{where} (warm-up)", k, v, None)


def _check_values(where: str, key: str, values: np.ndarray) -> None:
    """A per-step array's values: integers (rows of them for ROWS), none negative where
    none can be, and no step that took no time."""
    if values.dtype.kind not in "iu" or values.ndim != (2 if key in ROWS else 1):
        what = "rows of integers" if key in ROWS else "integers"
        raise UsageError(f"{where}: per-step array {key!r} must hold {what}")
    if key in NON_NEGATIVE and values.min() < 0:
        raise UsageError(f"{where}: per-step array {key!r} holds negative values")
    if key == "wall_ns" and values.min() <= 0:
        raise UsageError(f"{where}: per-step array 'wall_ns' holds a step that took no time")


def in_scope() -> None:
    """Put what the types' string annotations name (msgspec's `Meta`, `NotRequired`) in this
    module's scope, where msgspec evaluates them: when a document is first checked, or the
    schema generated; a result only measured and kept in memory never imports msgspec."""
    if "Meta" not in globals():
        import msgspec

        globals().update(Meta=msgspec.Meta, NotRequired=_not_required())


def _not_required() -> Any:
    import typing

    if hasattr(typing, "NotRequired"):  # Python 3.11 and later
        return typing.NotRequired
    import typing_extensions  # Python 3.10: msgspec reads typing_extensions' NotRequired too

    return typing_extensions.NotRequired


def validate(doc: ResultDoc | Mapping[str, Any], where: str = "result") -> ResultDoc:
    """Check that `doc` (a record, or a document as read) is a gcbench result this version
    understands; return it as a record."""
    if isinstance(doc, ResultDoc):
        _check(doc.to_doc(), where)
        return doc
    _check(doc, where)
    return ResultDoc.from_doc(doc)


def _check(doc, where: str) -> None:
    files.check_header(doc, where, FORMAT, "result", SCHEMA_VERSION)
    in_scope()
    records.from_json(doc, ResultDoc, where)  # the types and constraints; the step arrays (Any) are numpy's
    if doc["status"] == "ok":
        n = None
        arrays = {}
        for key in STEP_ARRAYS + tuple(k for k in OPTIONAL_STEP_ARRAYS if k in doc):
            arrays[key] = _check_array(where, key, doc.get(key), n)
            n = len(arrays[key])
        if not n:
            raise UsageError(f"{where}: ok result with no timed steps")
        if not isinstance(doc.get("loss"), dict):
            raise UsageError(f"{where}: ok result without sampled 'loss'")
        _check_consistent(doc, where, arrays)


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
        key = (doc.cell, doc.repeat)
        if key in seen:
            raise UsageError(f"{folder}: {seen[key]} and {path.name} hold the same result ({label(doc)}); "
                             "remove one of them")
        seen[key] = path.name
        docs.append(doc)
    if not docs and not allow_empty:
        raise UsageError(f"{folder}: no gcbench results there")
    return docs
