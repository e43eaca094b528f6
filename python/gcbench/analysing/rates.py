"""Rates a starting heap cannot move, per repeat: what compare gates on.

How it works, and why: docs/internals.md, `gcbench.analysing.rates`.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

import numpy as np

from ..measuring import results
from ..measuring.results import ResultDoc

MIN_GROWTH_STEPS = 100  # fewer timed steps than this: no growth is read (a warm-up's tail is not a leak)


def full_collections(doc: ResultDoc) -> np.ndarray:
    """Per step: full (oldest-generation) collections, those in the gap before the step (the
    loop's own code since the previous step) included: every full collection the loop
    pays for. Python results count the last generation's collections; Julia results carry
    `gc_full` (full sweeps)."""
    julia = results.step_array(doc, "gc_full")
    if julia is not None:
        return julia
    gaps = results.step_array(doc, "gap_collections")
    return collections(doc)[:, -1] + (gaps[:, -1] if gaps is not None else 0)


def collections(doc: ResultDoc) -> np.ndarray:
    """(steps, generations) collections per step; Julia: (steps, 2) incremental and full."""
    colls = results.step_array(doc, "gc_collections")
    return colls if colls is not None else np.zeros((results.step_count(doc), 3), np.int64)




def collector_off(doc: ResultDoc) -> bool:
    """Whether the repeat ran its timed steps with the collector off: a policy that turns it
    off (disable, manual:K), or a loop that did (most steps began with it off)."""
    if doc.gc_policy.startswith(("disable", "manual")):
        return True
    if results.part(doc, "gc_state").get("gc_enabled") is False:
        return True
    enabled = results.step_array(doc, "gc_enabled")
    return enabled is not None and 2 * int(enabled.sum()) < len(enabled)


def per_step_collections(doc: ResultDoc) -> np.ndarray:
    """(steps, generations): the collections of each step and of the gap before it."""
    colls = collections(doc)
    gaps = results.step_array(doc, "gap_collections")
    return colls + gaps if gaps is not None and gaps.shape == colls.shape else colls


def promotions_per_step(doc: ResultDoc) -> float | None:
    """Objects that survive into the oldest generation a step: what collections of
    generation 1 promoted, over the steps they closed. Only whole intervals count: from one
    collection of an older generation (1 or 2) to the next collection of generation 1; the
    first one promotes what the warm-up left young, and an interval a full collection closes
    promotes nothing (the full collection takes the young generations in). The mean over
    the window where generation 1 was never collected twice (every object the loop made is
    then either young or was promoted at that one collection). None where not recorded."""
    promoted = results.step_array(doc, "gc_promoted")
    if promoted is None or collections(doc).shape[1] != 3:
        return None
    colls = per_step_collections(doc)
    older = np.flatnonzero(colls[:, 1:].sum(axis=1) > 0)
    closes = older[1:][(colls[older[1:], 2] == 0) & (colls[older[1:], 1] > 0)]
    if not len(closes):
        return float(promoted.sum()) / len(promoted)
    starts = older[np.searchsorted(older, closes) - 1]
    steps = int((closes - starts).sum())
    return float(promoted[closes].sum()) / steps if steps else float(promoted.sum()) / len(promoted)


@dataclasses.dataclass(frozen=True)
class FullPeriod:
    """A repeat's automatic full collections: the steps they fell in, the mean period between
    consecutive ones (None with fewer than two), the longest stretch of steps without one
    (the period is at least that long), and the oldest generation's size when they ran
    (what the quarter rule divides; None where not recorded)."""

    at: list[int]
    period: float | None
    at_least: int
    heap: float | None


def automatic_full_steps(doc: ResultDoc) -> np.ndarray | None:
    """The steps (with the gap before each) of the collector's own full collections, once per
    collection; None where the loop's gc.collect() calls between steps cannot be told apart
    from them step by step."""
    full = full_collections(doc)
    explicit = results.step_array(doc, "gc_explicit")
    if explicit is not None and explicit.shape[1] == 3:
        full = np.maximum(full - explicit[:, 2], 0)
    between = results.part(doc, "between_steps").get("explicit") or []
    if len(between) == 3 and between[2]:
        return None
    return np.repeat(np.arange(len(full)), full)


def full_period(doc: ResultDoc) -> FullPeriod | None:
    """The period of a repeat's automatic full collections (`FullPeriod`); None where the
    loop's own full collections between steps hide it."""
    at = automatic_full_steps(doc)
    if at is None:
        return None
    n = results.step_count(doc)
    period = float(at[-1] - at[0]) / (len(at) - 1) if len(at) >= 2 else None
    edges = np.concatenate([[-1], at, [n]])
    at_least = int(np.diff(edges).max()) - 1 if len(edges) > 1 else n
    return FullPeriod(at.tolist(), period, max(at_least, 0), oldest_heap(doc))


def _full_events(doc: ResultDoc) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(step, examined, collected) of every full collection in the event log that recorded
    what it examined; None where it did not."""
    log = results.events(doc)
    if log is None or log.examined is None:
        return None
    keep = log.generation == 2
    return log.step[keep], log.examined[keep], log.collected[keep]


def oldest_heap(doc: ResultDoc) -> float | None:
    """The objects a full collection examined, the median over the repeat's (the oldest
    generation and the young ones it takes in: what the quarter rule divides); where no
    full collection ran, the older generations' objects as the timed steps began."""
    events = _full_events(doc)
    if events is not None and len(events[1]):
        return float(np.median(events[1]))
    old = results.part(doc, "memory").get("old_start")
    return float(old) if old is not None else None


def _after_full(doc: ResultDoc, key: Literal["objects", "malloc_bytes", "rss_bytes"]) -> tuple[float, int] | None:
    """What the probe read at the end of the steps that held a listed full collection (the
    1st, 2nd, 4th, ...: `between_steps.old_after_full`), where the collector had just freed
    everything dead and the step's objects in flight were gone: (the last reading less the
    first, the steps between them), the first of three or more left out (it can still hold
    what the warm-up left: nnx/vit, 292 objects). None with fewer than two readings."""
    after: results.OldAfterFull | dict = results.part(doc, "between_steps").get("old_after_full") or {}
    at, value = after.get("step") or [], after.get(key) or []
    if len(at) >= 3 and len(at) == len(value):
        at, value = at[1:], value[1:]
    if len(at) >= 2 and len(at) == len(value) and at[-1] > at[0]:
        return float(value[-1] - value[0]), int(at[-1] - at[0])
    return None


def growth_per_step(doc: ResultDoc) -> float | None:
    """Tracked objects the loop keeps a step. Where the probe listed the oldest generation at
    the end of two or more steps that held a full collection (the 1st, 2nd, 4th, ...), the
    slope of those sizes: a full collection leaves only live objects, and at the step's end
    those the step held in flight are gone (what survived a full collection inside a step
    counts them: nnx/vit read -21 to 65 a step from starting heaps that way); the first
    of three or more left out (it can still hold what the warm-up left). Otherwise the
    change of the older generations from the first timed step to the end (young garbage
    left out: it is not yet collected, not kept), and with the
    collector off the change of every generation (garbage is then kept). None where neither
    was recorded or the window is shorter than MIN_GROWTH_STEPS."""
    n = results.step_count(doc)
    if n < MIN_GROWTH_STEPS:
        return None
    listed = _after_full(doc, "objects")
    if listed is not None:
        return listed[0] / listed[1]
    memory = results.part(doc, "memory")
    start, end = memory.get("old_start"), memory.get("old_end")
    if collector_off(doc):  # nothing is collected or promoted: what it keeps, garbage too, stays young
        start, end = memory.get("tracked_start"), memory.get("tracked_end")
    if start is None or end is None:
        return None
    return float(end - start) / n


def examined_per_step(doc: ResultDoc) -> float | None:
    """The collector's work a step, as a count: the objects its collections examined (the
    generations each scanned, frozen objects excluded), every collection the loop paid for.
    The young generations' part is the mean over the steps without a full collection; the
    full collections' part what each of them examined beyond that, times their rate: from
    their period where one can be read (a window's count moves with the phase), else from
    the window's count. None where the steps did not record what collections examined."""
    examined = results.step_array(doc, "gc_examined", np.float64)
    if examined is None:
        return None
    full = full_collections(doc)
    quiet = full == 0
    if not quiet.any():
        return float(examined.mean())
    young = float(examined[quiet].mean())
    if not full.any():
        return young
    per_full = max(float(examined[~quiet].sum()) - young * int((~quiet).sum()), 0.0) / float(full.sum())
    period = full_period(doc)
    rate = 1.0 / period.period if period is not None and period.period else float(full.sum()) / len(full)
    return young + per_full * rate


class BytesKept(NamedTuple):
    """Bytes kept per 1,000 steps (`bytes_kept`), the steps between the two readings they
    come from, and whether those read the C allocator (else the resident set)."""

    per_1000: float
    span: int
    from_allocator: bool


def bytes_kept_reading(doc: ResultDoc) -> BytesKept | None:
    """Bytes the loop keeps per 1,000 steps, tracked or not, the steps between the two
    readings they come from (a reading's noise is a number of bytes, not a rate: the gate
    judges it over that span, `comparison.test_bytes_kept`), and where they were read. The
    memory in use is the C allocator's bytes (objects too large for Python's own
    allocator: bytes, buffers, arrays' data), or in a process without ctypes the resident
    set's, which grows only once the allocator's free memory is used up: a pure-Python
    loop's leak shows only past what it held free as the steps began
    (benchmarks/allocator_free.py). Where two or more full collections were listed, its
    change between the ends of those steps (`_after_full`), where nothing dead is left:
    read at the first timed step and at the end instead, the garbage each end held moved a
    freeze fix's reading by 25 KiB over 300 steps, past the resolution
    (benchmarks/user_fixes.py, server). Otherwise the C allocator's bytes at the end less
    at the first timed step, else the resident set's slope over the window
    (`rss_growth_per_1000`). None where none was read, or over fewer than
    MIN_GROWTH_STEPS steps."""
    n = results.step_count(doc)
    if n < MIN_GROWTH_STEPS:
        return None
    listed = _after_full(doc, "malloc_bytes")
    allocator = listed is not None
    listed = listed or _after_full(doc, "rss_bytes")
    if listed is not None:
        return BytesKept(listed[0] * 1000 / listed[1], listed[1], allocator)
    memory = results.part(doc, "memory")
    start, end = memory.get("malloc_start"), memory.get("malloc_end")
    if start is not None and end is not None:
        return BytesKept(float(end - start) * 1000 / n, n, True)
    rss = rss_growth_per_1000(doc)
    return None if rss is None else BytesKept(rss, n, False)


def bytes_kept(doc: ResultDoc) -> tuple[float, int] | None:
    """Bytes the loop keeps per 1,000 steps, tracked or not, and the steps between the two
    readings they come from (`bytes_kept_reading`)."""
    reading = bytes_kept_reading(doc)
    return None if reading is None else (reading.per_1000, reading.span)


def bytes_kept_per_1000(doc: ResultDoc) -> float | None:
    """Bytes the loop keeps per 1,000 steps, tracked or not (`bytes_kept`)."""
    kept = bytes_kept(doc)
    return None if kept is None else kept[0]


def rss_growth_per_1000(doc: ResultDoc) -> float | None:
    """Bytes of resident memory gained per 1,000 steps: the least-squares slope of the RSS
    samples of the timed steps. None with fewer than three samples or MIN_GROWTH_STEPS steps."""
    memory = results.part(doc, "memory")
    at, rss = memory.get("rss_step") or [], memory.get("rss_bytes") or []
    if len(at) < 3 or len(at) != len(rss) or results.step_count(doc) < MIN_GROWTH_STEPS:
        return None
    x, y = np.asarray(at, np.float64), np.asarray(rss, np.float64)
    if np.ptp(x) == 0:
        return None
    return float(np.polyfit(x, y, 1)[0]) * 1000
