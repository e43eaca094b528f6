"""The records a cell's repeats combine into (`summary.summarize`): typed, immutable, read
by attribute. docs/results.md, "Result fields", names each for users; `summary.record`
flattens them for `--json`, export and `m.summary()`. `summarize` assembles `CellStats`
from the parts below, each typed, so that a field it names wrongly is an error mypy sees."""

from __future__ import annotations

import dataclasses
from typing import TypedDict

from .explanation_records import CollectorCall
from .stats import Estimate, EventSummary

Interval = tuple[float, float] | None  # a 95 % interval, or None where the repeats give none


@dataclasses.dataclass(frozen=True)
class Between:
    """The collections outside every step, over the repeats used."""

    collections: list[int]  # per generation, summed
    gc_ms: float


@dataclasses.dataclass(frozen=True)
class WarmupRepeat:
    steps: int
    wall_ms: float
    gc_ms: float
    collections: list[int]  # per generation
    collected: int


@dataclasses.dataclass(frozen=True)
class Warmup:
    """The warm-up (compilation) of the repeats that recorded one: means over them."""

    repeats: int
    steps: int
    wall_ms: float
    gc_ms: float
    full_per_repeat: list[int]
    collections: list[float]  # per generation, mean over the repeats
    collected: float
    per_repeat: list[WarmupRepeat]


@dataclasses.dataclass(frozen=True)
class MemoryStats:
    """Memory beside time: the peak resident set, its growth and the tracked objects'
    growth per 1,000 steps (each None unless every repeat recorded it)."""

    peak_rss_mb: float | None = None
    peak_rss_ci_mb: Interval = None
    repeat_peak_rss_mb: list[float] | None = None
    rss_growth_mb_per_1000: float | None = None
    rss_growth_ci: Interval = None
    repeat_rss_growth: list[float] | None = None
    tracked_growth_per_1000: float | None = None
    tracked_growth_ci: Interval = None
    repeat_tracked_growth: list[float] | None = None


@dataclasses.dataclass(frozen=True)
class Explicit:
    """Explicit (`gc.collect()`) collections: per generation over the repeats, per repeat
    on average, and the lines that called them (calls per repeat, most first)."""

    collections: list[int]
    per_repeat: list[float]
    sites: dict[str, float]


@dataclasses.dataclass(frozen=True)
class CollectorState:
    """Steps begun with the collector off, and the calls that turned it off, on or froze
    the heap while a user's loop ran."""

    off_steps: int
    steps: int
    calls: dict[str, CollectorCall]


@dataclasses.dataclass(frozen=True)
class CellStats:
    """A cell's repeats combined. Times are over the repeats used (flagged ones left out
    where 3 remain); counts over every ok repeat. The fields after `warnings` are recorded
    by some results only (None elsewhere)."""

    repeats: int  # ok repeats
    used: list[int]  # the repeat numbers whose times are combined
    flagged: dict[int, list[str]]  # repeat number: why its times were left out
    all_flagged: bool  # flagged, but kept (fewer than 3 would remain)
    steps: int
    steps_per_repeat: list[int]
    median_ms: float
    median_ci_ms: Interval
    repeat_medians_ms: list[float]
    mean_ms: float
    mean_ci_ms: Interval
    repeat_means_ms: list[float]
    p90_ms: float
    p99_ms: float
    max_ms: float
    max_over_median: float
    gc_share: float
    gc_share_ci: Interval
    repeat_gc_shares: list[float]
    gc_ms_per_step: float
    collections: list[int]  # in the steps, per generation
    between: Between  # outside every step
    full: EventSummary  # the full collections
    spike_factor: float
    spikes: int
    spikes_at_full: int
    language: str  # python or julia
    warmup: Warmup | None
    memory: MemoryStats | None
    explicit: Explicit | None
    collector: CollectorState | None
    full_after_last: int  # full collections after the last step, over every ok repeat
    loaded: int  # repeats used that ran on a loaded machine
    load: str | None
    warnings: list[str]
    alloc_bytes_per_step: float | None = None
    pressure_per_step: float | None = None
    examined_per_step: float | None = None  # the collector's work: objects its collections examined a step
    promotions_per_step: float | None = None
    retained_per_step: float | None = None  # tracked objects kept a step
    gc_share_cpu: float | None = None
    gc_share_cpu_ci: Interval = None
    repeat_gc_shares_cpu: list[float] | None = None
    host_share: float | None = None
    host_share_ci: Interval = None

    def share(self, cpu: bool) -> Estimate:
        """The GC share of CPU time (`cpu`; a caller's mistake where it was not recorded) or of
        the loop's wall time, with its interval and per-repeat values."""
        if not cpu:
            return Estimate(self.gc_share, self.gc_share_ci, self.repeat_gc_shares)
        if self.gc_share_cpu is None:
            raise ValueError("no GC share of CPU time was recorded")
        return Estimate(self.gc_share_cpu, self.gc_share_cpu_ci, self.repeat_gc_shares_cpu or [])


class RepeatFields(TypedDict):
    """`CellStats`' repeats: which there are, which its times rest on, why any was flagged."""

    repeats: int
    used: list[int]
    flagged: dict[int, list[str]]
    all_flagged: bool
    steps: int
    steps_per_repeat: list[int]


class TimeFields(TypedDict):
    """Its step times: median, mean and the tail."""

    median_ms: float
    median_ci_ms: Interval
    repeat_medians_ms: list[float]
    mean_ms: float
    mean_ci_ms: Interval
    repeat_means_ms: list[float]
    p90_ms: float
    p99_ms: float
    max_ms: float
    max_over_median: float


class GCFields(TypedDict):
    """Its collector: the share, the collections in and between steps, the full ones' schedule."""

    gc_share: float
    gc_share_ci: Interval
    repeat_gc_shares: list[float]
    gc_ms_per_step: float
    collections: list[int]
    between: Between
    full: EventSummary
    full_after_last: int
    spike_factor: float
    spikes: int
    spikes_at_full: int


class ContextFields(TypedDict):
    """What its steps ran beside: the language, the warm-up, memory, the loop's own calls, load."""

    language: str
    warmup: Warmup | None
    memory: MemoryStats | None
    explicit: Explicit | None
    collector: CollectorState | None
    loaded: int
    load: str | None
    warnings: list[str]


class OptionalFields(TypedDict, total=False):
    """What only some results record (left out, as None, where any repeat did not)."""

    alloc_bytes_per_step: float
    pressure_per_step: float
    examined_per_step: float
    promotions_per_step: float
    retained_per_step: float
    gc_share_cpu: float
    gc_share_cpu_ci: Interval
    repeat_gc_shares_cpu: list[float]
    host_share: float
    host_share_ci: Interval
