"""The records an explanation is made of (`gc_causes`): what a diagnostic run recorded and
what is derived from it, typed and read by attribute. They are explain.json's one
description: `core.records.from_json` (re-exported here with `to_json`) checks a stored
document against their types and constraints as it reads it."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import field
from typing import Any, ClassVar

from ..core import schemas
from ..core.records import from_json, to_json

# the names of an explained cell that reach a report's headings and links: plain names only
_CELL_NAMES = {"backend": schemas.NAME, "workload": schemas.NAME, "policy": schemas.POLICY}


@dataclasses.dataclass
class Census:
    """Objects counted by type, by the package that defines the type and by allocation
    site (most first); `traced`: how many carry a site (None: not recorded)."""

    total: int = 0
    traced: int | None = None
    by_type: dict[str, int] = field(default_factory=dict)
    by_package: dict[str, int] = field(default_factory=dict)
    by_site: dict[str, int] = field(default_factory=dict)
    by_user_site: dict[str, int] = field(default_factory=dict)  # a user's loop: the line of theirs each came from
    by_site_type: dict[str, int] = field(default_factory=dict)  # "site (type)", where sites are traced


@dataclasses.dataclass
class Promoted(Census):
    """What reached the oldest generation during the steps, and the one-off before them."""

    made_before_the_steps: int = 0
    # sites sampled: the objects promoted by the collections that closed a traced interval (what
    # `traced` is a share of); None where sites were traced throughout or not at all
    sampled: int | None = None


@dataclasses.dataclass
class Scanned(Census):
    """What the full collections scanned: over `collections` of them, where it came from
    (`origin`: before or during the timed steps), and what was frozen out of every scan."""

    collections: int = 0
    origin: dict[str, int] = field(default_factory=dict)
    frozen: int = 0


@dataclasses.dataclass
class Collection:
    """One collection a diagnosis watched: its step (-1: between steps), generation, and
    what it found; `objects_at_start` per generation (-1: not counted)."""

    step: int
    generation: int
    explicit: int = 0  # 1: a gc.collect() call
    pause_ns: int = 0
    collected: int = 0
    uncollectable: int = 0
    before_step: int | None = None  # between steps: the step it came before
    objects_at_start: list[int] = field(default_factory=lambda: [-1, -1, -1])


@dataclasses.dataclass
class CollectorModel:
    model: str = "generational"
    generations: int = 3
    note: str = ""


@dataclasses.dataclass(frozen=True)
class CollectorCall:
    """Calls of one `gc` function while a loop ran: how many, the first one's line and (where
    one loop's calls are told) its step."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("first_step",)

    count: int = 0
    first_at: str | None = None
    first_step: int | None = None


@dataclasses.dataclass
class LoopCollector:
    """What a user's loop did to the collector (Measurement.collector_state)."""

    off_steps: int = 0
    calls: dict[str, CollectorCall] = field(default_factory=dict)


@dataclasses.dataclass
class PythonDiagnosis:
    """What `measuring.diagnose` recorded over a Python cell's steps."""

    steps: int
    promoted: Promoted
    promoted_per_step: list[float]
    scanned: Scanned
    garbage: Census
    oldest: list[list[int]]  # (step, objects in the oldest generation) samples
    full_steps: list[int]
    gen1_collections: int
    thresholds: list[int]
    collections: list[Collection] = field(default_factory=list)
    collector: CollectorModel = field(default_factory=CollectorModel)
    sites_traced: bool = False
    sites_from_step: int | None = None
    site_intervals: int | None = None  # sites traced over one interval between middle collections in this many
    own_time_s: float | None = None
    analysed_until_step: int | None = None  # None: every collection was analysed
    interpreter: str | None = None
    collector_state: LoopCollector | None = None

    def __post_init__(self) -> None:
        if any(len(sample) != 2 for sample in self.oldest):
            raise ValueError("python.oldest: each sample is a pair (step, objects in the oldest generation)")


@dataclasses.dataclass
class JuliaAllocs:
    """Julia's sampled allocations (`Profile.Allocs`): [count, bytes] by type, package, site."""

    samples: int = 0
    sample_rate: float = 0.0
    steps: int = 0
    by_type: dict[str, list[float]] = field(default_factory=dict)
    by_package: dict[str, list[float]] = field(default_factory=dict)
    by_site: dict[str, list[float]] = field(default_factory=dict)


@dataclasses.dataclass
class FullInterval:
    """The interval between full collections CPython's rule predicts from what the run
    promoted (None: the rule never fires at this rate), against the interval observed."""

    promoted_per_step: float
    gen1_per_step: float
    oldest_objects: float
    threshold2: int
    by_count: float | None
    by_promotion: float | None
    predicted: float | None
    observed: float | None
    full_collections: int


@dataclasses.dataclass
class Recommendation:
    """What to do, with its effect where the results folder measured it (`measured`);
    one that is not measured is said as a hypothesis."""

    kind: str
    text: str
    effect: str | None = None
    measured: bool = False


@dataclasses.dataclass
class Explanation:
    """One cell's explanation, as explain.json keeps it and the report and terminal show it."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("python", "julia", "full_interval", "user_file")  # absent, not null

    label: str
    cell: dict[str, Any]  # the cell's spec (backend, workload, policy, bookkeeping, ...)
    note: str = ""
    python_version: str | None = None
    packages: dict[str, str | None] = field(default_factory=dict)
    environment: str | None = None  # a user's loop: its variant
    python: PythonDiagnosis | None = None
    julia: JuliaAllocs | None = None
    julia_versions: dict[str, Any] = field(default_factory=dict)
    user_file: str | None = None
    # derived from the diagnosis (`gc_causes.derive`)
    full_interval: FullInterval | None = None
    counts: list[int] = field(default_factory=list)  # collections per generation, in the steps and between them
    between: list[int] = field(default_factory=list)  # of those, between steps
    explicit: list[int] = field(default_factory=list)  # of those, gc.collect() calls
    collected: int = 0
    uncollectable: int = 0
    recommendations: list[Recommendation] = field(default_factory=list)

    def __post_init__(self) -> None:
        """The cell's names are plain names (they become a report's headings and links), and
        its bookkeeping a text where given."""
        for key, pattern in _CELL_NAMES.items():
            value = self.cell.get(key)
            if not isinstance(value, str) or not re.match(pattern, value):
                raise ValueError(f"cell.{key}: {value!r} is not a plain name")
        if not isinstance(self.cell.get("bookkeeping") or "", str):
            raise ValueError(f"cell.bookkeeping: {self.cell.get('bookkeeping')!r} is not a text")

    @property
    def backend(self) -> str:
        return str(self.cell.get("backend", ""))

    @property
    def workload(self) -> str:
        return str(self.cell.get("workload", ""))

    @property
    def policy(self) -> str:
        return str(self.cell.get("policy", ""))

    @property
    def bookkeeping(self) -> str:
        return self.cell.get("bookkeeping") or "none"


__all__ = ["Census", "Collection", "CollectorCall", "CollectorModel", "Explanation", "FullInterval", "JuliaAllocs",
           "LoopCollector", "Promoted", "PythonDiagnosis", "Recommendation", "Scanned", "from_json", "to_json"]
