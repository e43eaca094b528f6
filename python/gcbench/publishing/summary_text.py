"""A cell's summary (`analysing.summary`) in words: the collector's state where the loop
changed it, its own `gc.collect()` calls, memory that grows, and the one line a user's loop
prints (`Measurement.summary`)."""

from __future__ import annotations

from ..analysing.cell_stats import CellStats, CollectorState, Explicit, MemoryStats
from ..analysing.summary import site_name
from ..core import records, wording

GROWTH_MIB = 1.0  # resident memory growing faster than this per 1,000 steps is a finding


def describe_collector(c: CollectorState) -> str:
    """`the collector was off in 150 of 150 steps (gc.disable() at train.py:12); processes
    forked from it (DataLoader workers) inherit it off`."""
    words = []
    if c.off_steps:
        words.append(f"the collector was off in {c.off_steps:,} of {c.steps:,} steps")
    what = [f"gc.{name}() {k.count:,} time{'s' * (k.count != 1)}" + (f", first at {site_name(k.first_at)}"
                                                                    if k.first_at else "")
            for name, k in c.calls.items()]
    text = "; ".join(words + (["called " + "; ".join(what)] if what else []))
    if c.off_steps:
        text += ("; processes forked from it (DataLoader workers) inherit it off, and with it every cycle they "
                 "make: measure a worker's side (docs/usage.md, \"A worker's side\")")
    return text



def describe_explicit(e: Explicit, shown: int = 3) -> str:
    """`40 explicit (gc.collect()) collections per repeat, 40 of them full, at train.py:88 (20),
    train.py:89 (20)`."""
    per = e.per_repeat
    where = ", ".join(f"{site_name(site)} ({wording.fmt(k)})" for site, k in list(e.sites.items())[:shown])
    more = len(e.sites) - shown
    return (f"{wording.fmt(sum(per))} explicit (`gc.collect()`) collection{'s' * (sum(per) != 1)} per repeat, "
            f"{wording.fmt(per[-1])} of them full" + (f", called at {where}" if where else "")
            + (f" and {more} more lines" if more > 0 else ""))



def _tracked_words(tracked: float | None) -> str:
    """How many more (or fewer) objects the collector tracks every 1,000 steps."""
    if tracked is None:
        return ""
    return (f", and the collector tracks {abs(tracked):,.0f} {'more' if tracked >= 0 else 'fewer'} objects every "
            "1,000 steps")


def memory_growth(s: CellStats) -> str | None:
    """That a cell's memory grows across its loop, in words, or None: its resident set
    grows by more than GROWTH_MIB per 1,000 steps (and, with an interval, surely above 0),
    said with the objects the collector tracks."""
    m = s.memory or MemoryStats()
    g, ci = m.rss_growth_mb_per_1000, m.rss_growth_ci
    if g is None or g <= GROWTH_MIB or (ci is not None and ci[0] <= 0):
        return None
    interval = f" (95 % {wording.fmt_range(ci[0], ci[1])})" if ci else ""
    objects = _tracked_words(m.tracked_growth_per_1000)
    peak = f" to a peak of {m.peak_rss_mb:,.0f} MiB" if m.peak_rss_mb is not None else ""
    return f"its memory grows across the loop: {wording.fmt(g)} MiB per 1,000 steps{interval}{peak}{objects}"



def _memory_parts(row: dict) -> list[str]:
    """The peak resident set, and its growth where it grows faster than GROWTH_MIB."""
    if row.get("peak_rss_mb") is None:
        return []
    growth = row.get("rss_growth_mb_per_1000")
    growing = f" (growing {wording.fmt(growth)} MiB per 1,000 steps)" if growth and growth > GROWTH_MIB else ""
    return [f"peak RSS {row['peak_rss_mb']:,.0f} MiB{growing}"]


def describe_user_loop(row: dict, per_generation: list[int] | None = None) -> str:
    """A user's loop (its `record`) in one line: what `print(m)` shows; counts first (with
    `per_generation`, the collections of each generation in the steps and between them),
    then the promotions a step (what a GC budget bounds), then times."""
    if row.get("median_ms") is None:
        return f"{row['status']}"
    after = row.get("full_collections_after_last") or 0
    parts = [f"{row['steps']:,} timed steps", f"full collections {row['full_collections']}"  # counts first
             + (f" (and {after} after the last step)" if after else "")]
    if per_generation:
        parts.append("collections by generation " + " / ".join(f"{n:,}" for n in per_generation))
    if row.get("promotions_per_step") is not None:
        parts.append(f"promotions {wording.fmt(row['promotions_per_step'])} a step")
    parts += _collector_parts(row)
    parts += [f"median step {wording.fmt(row['median_ms'])} ms", f"mean {wording.fmt(row['mean_ms'])} ms",
              f"GC {100 * row['gc_share']:.2f} %"]
    parts += _memory_parts(row)
    if row.get("loaded_repeats"):
        parts.append("the machine was loaded: times not comparable, counts are")
    if row.get("warmup_gc_ms") is not None:
        parts.append(f"warm-up GC {wording.fmt(row['warmup_gc_ms'])} ms")
    return ", ".join(parts)



def _collector_parts(row: dict) -> list[str]:
    """What a user's loop did beside its steps (its `record`): collections between steps,
    the collector turned off, on or frozen, and its own gc.collect() calls."""
    parts = []
    if row.get("between_steps_collections") and any(row["between_steps_collections"]):
        parts.append(f"{sum(row['between_steps_collections'])} collections between steps")
    if row.get("collector"):
        parts.append(describe_collector(records.from_json(row["collector"], CollectorState, "collector")))
    if row.get("explicit_collections"):
        sites = ", ".join(site_name(site) for site in list(row.get("explicit_sites") or {})[:2])
        parts.append(f"{sum(row['explicit_collections'])} explicit ({row['explicit_collections'][-1]} full"
                     + (f", at {sites}" if sites else "") + ")")
    return parts
