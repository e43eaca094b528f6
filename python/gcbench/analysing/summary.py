"""From result documents to what a cell measured: its repeats combined, with intervals.

How it works, and why: docs/internals.md, `gcbench.analysing.summary`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from ..core import machineload, metadata, wording
from ..core.errors import UsageError
from ..measuring import results
from ..measuring.results import ResultDoc
from . import rates, stats
from .cell_stats import (
    Between,
    CellStats,
    CollectorState,
    ContextFields,
    Explicit,
    GCFields,
    Interval,
    MemoryStats,
    OptionalFields,
    RepeatFields,
    TimeFields,
    Warmup,
    WarmupRepeat,
)
from .explanation_records import CollectorCall
from .rates import MIN_GROWTH_STEPS, collections, full_collections

DEFAULT_SPIKE_FACTOR = 3.0
MIN_STEPS = 100  # fewer timed steps per repeat than this: the cell is flagged
MAX_CI_WIDTH = 0.50  # a median whose 95 % interval is wider than this fraction of it: flagged


def full_after_last(doc: ResultDoc) -> int:
    """Full collections after a repeat's last step (in the loop's own code, before it ended):
    paid for by the loop, in no iteration's gap."""
    if doc.gc_full is not None:
        return 0
    total = between_steps(doc).collections[-1]
    gaps = results.step_array(doc, "gap_collections")
    return max(int(total) - (int(gaps[:, -1].sum()) if gaps is not None else 0), 0)


def pressure_per_step(doc: ResultDoc) -> tuple[float | None, str | None]:
    """The allocation pressure of a repeat's steps and its unit: Python, the net new tracked
    objects a step (what drives its collections); Julia, the bytes allocated a step. The
    mean over the timed steps after the first, leaving out steps that hold a full
    collection: the first step carries the heap the loop started from, and a step with a
    full collection what that collection freed, and both move with the schedule's phase
    (benchmarks/starting_heaps.py: what is left is the same from every starting heap).
    (None, None) where it was not recorded or there are fewer than two steps."""
    allocated = results.step_array(doc, "alloc_bytes", np.float64)
    values, unit = (allocated, "bytes") if allocated is not None else \
        (results.step_array(doc, "gc_pressure", np.float64), "tracked objects")
    if values is None or len(values) < 2:
        return None, None
    values = values[1:]
    keep = full_collections(doc)[1:] == 0
    if not keep.any():
        return None, None
    return float(values[keep].mean()), unit


def _generations(doc: ResultDoc) -> int:
    """How many generations a result counts its collections in (3 where it recorded none):
    the width of its first step's row, read without converting the whole array."""
    colls: Any = doc.gc_collections
    return len(colls[0]) if colls is not None and len(colls) else 3


def collections_by_generation(doc: ResultDoc) -> list[int]:
    """A repeat's collections of each generation: those in its steps and those between them."""
    return (collections(doc).sum(axis=0) + np.asarray(between_steps(doc).collections, np.int64)).tolist()


def explicit_by_generation(doc: ResultDoc) -> list[int]:
    """A repeat's explicit collections (`gc.collect()` calls) of each generation, in its
    steps and between them (zeros where none were told apart)."""
    n = _generations(doc)
    explicit = results.step_array(doc, "gc_explicit")
    inside = explicit.sum(axis=0) if explicit is not None else np.zeros(n, np.int64)
    between = list(results.part(doc, "between_steps").get("explicit") or [0] * n)[:n]
    return (inside + np.asarray(between + [0] * (n - len(between)), np.int64)).tolist()


def explicit_summary(docs: list[ResultDoc]) -> Explicit | None:
    """Explicit collections over `docs`: per generation, per repeat on average, and the
    lines that called them (calls per repeat, most first); None where there were none."""
    if not docs:
        return None
    per_gen = np.sum([explicit_by_generation(d) for d in docs], axis=0)
    if not per_gen.sum():
        return None
    sites: dict[str, int] = {}
    for d in docs:
        for site, k in (results.part(d, "between_steps").get("explicit_sites") or {}).items():
            sites[site] = sites.get(site, 0) + k
    ordered = dict(sorted(sites.items(), key=lambda kv: -kv[1]))
    return Explicit(per_gen.tolist(), (per_gen / len(docs)).tolist(), {k: v / len(docs) for k, v in ordered.items()})


def _steps_off(d: ResultDoc, state: dict) -> int:
    """The steps a repeat ran with its collector off (results before per-step states: all of
    them where it was off from the start)."""
    n = results.step_count(d)
    enabled = results.step_array(d, "gc_enabled")
    if enabled is not None:
        return n - int(enabled.sum())
    return n if state.get("gc_enabled") is False else 0


def collector_summary(docs: list[ResultDoc]) -> CollectorState | None:
    """Steps that began with the collector off, over `docs`, and the calls that turned it
    off, on or froze the heap while a user's loop ran (first line and count); None where
    the collector was on in every step and nothing called them."""
    steps = off = 0
    calls: dict[str, CollectorCall] = {}
    for d in docs:
        if d.backend != "user" and d.gc_policy.startswith(("disable", "manual")):
            continue  # gcbench's own cell under a policy that turns it off: what it was asked to do
        state = results.part(d, "gc_state")
        steps += results.step_count(d)
        off += _steps_off(d, state)
        for name, c in (state.get("calls") or {}).items():
            seen = calls.get(name) or CollectorCall(0, c.get("first_at"))
            calls[name] = dataclasses.replace(seen, count=seen.count + int(c.get("count", 0)))
    if not off and not calls:
        return None
    return CollectorState(off, steps, calls)


def cpu_gc_share(doc: ResultDoc) -> float | None:
    """The collector's share of the loop's CPU time, in the thread that ran it, where
    recorded: a loaded machine does not stretch it as it stretches wall time. As the
    wall-time share (`gc_share`), every collection the loop paid for counts, those between
    steps too: its pauses' CPU time over the iterations' CPU time (a user's loop: each
    step and the gap before it; gcbench's own cells: each step and the collections in the
    gap), and the pauses after the last step. Results from before gaps were timed in CPU
    time: the steps alone."""
    split = cpu_gc_split(doc)
    if split is None:
        return None
    pauses, cpu = split
    return pauses / cpu if cpu > 0 else 0.0


def cpu_gc_split(doc: ResultDoc) -> tuple[float, float] | None:
    """(the collector's pauses, the loop's time), both in the thread's CPU time, as
    `cpu_gc_share` divides them; None where not recorded. A loop of your own measured by
    0.3 on reads its CPU time in all (`between_steps.loop_cpu_ns`, every step, gap and
    pause after the last step), not step by step."""
    if doc.gc_cpu_ns is None:
        return None
    between = results.part(doc, "between_steps")
    if doc.cpu_ns is None and between.get("loop_cpu_ns"):
        pauses = results.step_total(doc, "gc_cpu_ns") + float(between.get("gc_cpu_ns", 0))
        return pauses, float(between.get("loop_cpu_ns", 0))
    if doc.cpu_ns is None:
        return None
    pauses, cpu = results.step_total(doc, "gc_cpu_ns"), results.step_total(doc, "cpu_ns")
    if doc.gap_gc_cpu_ns is not None:
        in_gaps = results.step_total(doc, "gap_gc_cpu_ns")
        after = max(float(results.part(doc, "between_steps").get("gc_cpu_ns", 0)) - in_gaps, 0.0)
        gaps = results.step_total(doc, "gap_cpu_ns") if doc.backend == "user" and doc.gap_cpu_ns is not None \
            else in_gaps
        pauses += in_gaps + after
        cpu += gaps + after
    return pauses, cpu


def repeat_load(doc: ResultDoc) -> str | None:
    """Why a repeat ran on a loaded machine, in words, or None. Results that read the
    machine's CPU accounting over their timed steps (`core.machineload`) are judged by it
    (one too short to read, under half a second, counts as unloaded); results written before
    gcbench read it, by the load average before and after the repeat."""
    machine = results.part(doc, "machine_state")
    cores = _cores(doc)
    if "others_cores" in machine:
        return machineload.load_reason(machine, cores)
    if doc.cpu_ns is not None or "loop_cpu_ns" in results.part(doc, "between_steps"):
        return None  # read by this gcbench, but too short to read (core.machineload.MIN_SECONDS): unknown
    before, after = machine.get("load_before"), machine.get("load_after")
    # The one-minute load average counts gcbench's own runnable threads: the worker's main
    # thread and XLA's pool of one thread per core, before a repeat (the one that ended
    # moments ago) and after it alike; the runners of those runs read 1.45-1.59 at their
    # median, up to 2.06. Others ran beside it only where the load exceeds those cores + 1
    # by the share that makes a repeat loaded.
    own = (cores or 0) + 1
    for when, load in (("before", before), ("after", after)):
        if cores and isinstance(load, (int, float)) and load - own > machineload.LOADED_SHARE * cores:
            return f"load average {load:.1f} {when} the repeat, above the {own} runnable threads gcbench's own make"
    return None


def _cores(doc: ResultDoc) -> int | None:
    """The machine's cores, as the repeat's load reading counted them, else its metadata."""
    return results.part(doc, "machine_state").get("cpu_count") or results.part(doc, "metadata").get("cpu_count")


def how_loaded(docs: list[ResultDoc]) -> tuple[int, str]:
    """How many of `docs` ran loaded, and how, in words: `other processes used 1.0-1.1 of 2
    cores`, or the first reason for results that read only the load average."""
    loaded = [d for d in docs if repeat_load(d)]
    if not loaded:
        return 0, ""
    others = [state["others_cores"] for d in loaded if "others_cores" in (state := results.part(d, "machine_state"))]
    cores = _cores(loaded[0])
    if not (others and cores):
        return len(loaded), repeat_load(loaded[0]) or ""
    return len(loaded), f"other processes used {_span(others)} of {cores} cores"


def _span(values: list[float]) -> str:
    """`1.2`, or `0.8-1.9` where the values differ (to one decimal)."""
    lo, hi = f"{min(values):.1f}", f"{max(values):.1f}"
    return lo if lo == hi else f"{lo}-{hi}"


def load_level(doc: ResultDoc) -> tuple[float | None, float | None]:
    """How loaded a repeat was, as its CPU pressure (the share of its time some task waited
    for a CPU) and the others' share of the cores, each None where not recorded."""
    machine = results.part(doc, "machine_state")
    cores = _cores(doc)
    pressure, others = machine.get("cpu_pressure"), machine.get("others_cores")
    share = others / cores if isinstance(others, (int, float)) and cores else None
    return (float(pressure) if isinstance(pressure, (int, float)) else None), share


def describe_load(docs: list[ResultDoc]) -> str:
    """`3 of 3 repeats loaded, other processes used 1.0-1.1 of 2 cores`."""
    n, how = how_loaded(docs)
    return f"{n} of {len(docs)} repeats loaded" + (f", {how}" if n else "")


def site_name(site: str) -> str:
    """`train.py:88`: a `path:line` site as a reader names it, its file's name and line
    (`train.py:45 via dataloader.py:120` where a library's line made the call)."""
    if " via " in site:
        return " via ".join(site_name(part) for part in site.split(" via ", 1))
    path, _, line = site.rpartition(":")
    return f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"


def node_type(doc: ResultDoc) -> str:
    """The kind of machine a result ran on (`metadata.node_type`), "" where none is recorded."""
    return metadata.node_type(results.part(doc, "metadata")) or ""


def node_types(docs: list[ResultDoc]) -> list[str]:
    """The kinds of machine among `docs`, in the order they first appear."""
    return [n for n in dict.fromkeys(node_type(d) for d in docs) if n]


def cell_key(doc: ResultDoc, by_node: bool = False) -> tuple[str, str, str, str, str]:
    """(backend, workload, policy, environment, node type); the node type is "" unless
    results of several kinds of machine are grouped (`by_node`). A user's loop measured as
    a named variant (`measure(..., variant=)`) has the variant where an environment goes:
    it is the version of the code that ran."""
    return (doc.backend, doc.workload, doc.gc_policy, results.env_name(doc) or results.variant(doc) or "",
            node_type(doc) if by_node else "")


def context(key: tuple) -> str:
    """What a cell ran in besides its backend, workload and policy: its environment and,
    where several kinds of machine are in play, its node type."""
    return " on ".join(x for x in key[3:5] if x)


def full_per_repeat(cs: CellSummary) -> str:
    """A cell's full collections per repeat in a few characters: `6`, or `5-7` where the
    repeats differ."""
    counts = cs.measured.full.schedule.counts
    return str(counts[0]) if len(set(counts)) == 1 else f"{min(counts)}-{max(counts)}"


def cell_label(key: tuple) -> str:
    backend, workload, policy, env, node = key
    return f"{backend}/{workload}/{policy}" + (f" [{env}]" if env else "") + (f" on {node}" if node else "")


# What gcbench set for a cell, which its repeats must share to be pooled (a user's loop sets its own steps)
SETTINGS = (("networks", lambda d: d.networks),
            ("steps", lambda d: results.step_count(d) if d.status == "ok" and d.backend != "user" else None),
            ("batch", results.batch_size), ("bookkeeping", lambda d: d.bookkeeping or "none"),
            ("data", lambda d: d.data.get("kind")),
            ("collector generations", lambda d: _generations(d) if d.status == "ok" and
             results.step_count(d) else None))


def cells(docs: list[ResultDoc], by_node: bool | None = None) -> dict[tuple, list[ResultDoc]]:
    """Documents grouped by cell, in the order their cells first appear, repeats sorted.
    Repeats from different kinds of machine are never pooled: where `docs` hold several
    (or `by_node` says so), the node type is part of each cell's key. Repeats of one cell
    whose settings differ (`SETTINGS`: a 20,000-step and a 5-step repeat) are refused in
    one line: pooled, their numbers would describe neither."""
    if by_node is None:
        by_node = len(node_types(docs)) > 1
    out: dict[tuple, list[ResultDoc]] = {}
    for d in docs:
        out.setdefault(cell_key(d, by_node), []).append(d)
    for key, group in out.items():
        group.sort(key=lambda d: d.repeat)
        check_poolable(key, group)
    return out


def check_poolable(key: tuple, group: list[ResultDoc]) -> None:
    """Refuse (`UsageError`) a cell whose ok repeats differ in a setting."""
    ok = results.ok(group)
    for name, get in SETTINGS:
        values: dict[str, list[int]] = {}
        for d in ok:
            v = get(d)
            if v is not None:
                values.setdefault(str(v), []).append(d.repeat)
        if len(values) > 1:
            parts = "; ".join(f"{v} in repeat{'s' * (len(r) > 1)} {', '.join(map(str, r[:4]))}"
                              for v, r in list(values.items())[:3])
            raise UsageError(f"{cell_label(key)}: its repeats differ in {name} ({parts}), so they cannot be pooled; "
                             "keep one setting's results in a folder (rerun with --force, or move the others away)")


def repeat_flags(doc: ResultDoc) -> list[str]:
    """Why a repeat's numbers should be left out: drift within it, or a loaded machine."""
    flags = []
    d = stats.drift(results.step_array(doc, "wall_ns", np.float64))
    if d is not None:
        flags.append(f"drift: last third {100 * d.change:+.0f} % against the first (p={d.p:.1g})")
    load = repeat_load(doc)
    if load:
        flags.append(load)
    return flags


def used_repeats(ok: list[ResultDoc]) -> tuple[list[ResultDoc], dict[int, list[str]]]:
    """The ok repeats a cell's times rest on, and every repeat's flags: flagged repeats are
    left out where at least `stats.MIN_PROCESSES` unflagged ones remain (a run measures a
    replacement for a flagged repeat: `replacements`); otherwise every repeat is kept,
    flagged, since fewer processes would give no interval at all. Collections are counted
    over every ok repeat whatever this says (a schedule is exact)."""
    flags = {d.repeat: repeat_flags(d) for d in ok}
    clean = [d for d in ok if not flags[d.repeat]]
    return (clean if len(clean) >= min(stats.MIN_PROCESSES, len(ok)) else ok), flags


MAX_REPLACEMENTS = 1  # replacement repeats a run measures per cell that had a repeat flagged


def replacements(cells: list, docs: list[ResultDoc], planned: int) -> list:
    """One more repeat (a `cell.Cell`, numbered after the cell's last) of every cell of
    `cells` that had an ok repeat flagged, so that it keeps the unflagged repeats it was
    planned with (`planned` a cell): at most MAX_REPLACEMENTS a cell, counting those that
    `cells` already holds (repeats numbered from `planned` on). Only where a replacement can
    matter: a plan of at least `stats.MIN_PROCESSES` repeats of at least MIN_STEPS steps
    (shorter or fewer give no interval to protect)."""
    import dataclasses as dc

    if planned < stats.MIN_PROCESSES or not cells or min(c.steps for c in cells) < MIN_STEPS:
        return []

    by_cell: dict[tuple, list] = {}
    for c in cells:
        by_cell.setdefault((c.backend, c.workload, c.policy, c.env), []).append(c)
    done = {d.cell: d for d in docs}
    out = []
    for group in by_cell.values():
        if _wants_replacement(group, done, planned):
            last = max(group, key=lambda c: c.repeat)
            out.append(dc.replace(last, repeat=last.repeat + 1))
    return out


def _wants_replacement(group: list, done: dict[str, ResultDoc], planned: int) -> bool:
    """Whether one cell's repeats (`group`) had an ok repeat flagged, keep fewer clean ones
    than planned, and have room for another replacement."""
    ok = results.ok([done[c.id] for c in group if c.id in done])
    clean = sum(1 for d in ok if not repeat_flags(d))
    extra = sum(1 for c in group if c.repeat >= planned)
    return clean < len(ok) and clean < planned and extra < MAX_REPLACEMENTS


@dataclasses.dataclass
class CellSummary:
    """One cell: its key, every repeat's document, and its statistics (`measured`)."""

    key: tuple[str, str, str, str, str]  # summary.cell_key
    docs: list[ResultDoc]  # every repeat's document, whatever its status
    stats: CellStats | None  # None when no repeat ran ok

    @property
    def measured(self) -> CellStats:
        """The statistics of a cell that ran ok (a cell with none is a caller's mistake)."""
        if self.stats is None:
            raise ValueError(f"{self.label}: no repeat ran ok")
        return self.stats

    @property
    def used_docs(self) -> list[ResultDoc]:
        """The documents of the repeats the cell's times rest on (flagged ones left out where
        3 remain), in the order they are numbered."""
        used = set(self.measured.used)
        return [d for d in results.ok(self.docs) if d.repeat in used]

    @property
    def label(self) -> str:
        return cell_label(self.key)

    @property
    def ok(self) -> bool:
        return self.stats is not None


def summarize(docs: list[ResultDoc], spike_factor: float = DEFAULT_SPIKE_FACTOR,
              key: tuple | None = None) -> CellSummary:
    """Combine the repeats (documents) of one cell (`key`, as `cells` made it)."""
    key = key or cell_key(docs[0])
    ok = results.ok(docs)
    if not ok:
        return CellSummary(key, docs, None)
    used, flags = used_repeats(ok)
    walls = [np.asarray(d.wall_ns, np.float64) for d in used]
    s = CellStats(**_repeat_fields(ok, used, flags, walls), **_time_fields(used, walls),
                  **_gc_fields(ok, used, walls, spike_factor), **_context_fields(ok, used),
                  **_optional_fields(used, walls))
    return CellSummary(key, docs, dataclasses.replace(s, warnings=warnings(s)))


def _repeat_fields(ok: list[ResultDoc], used: list[ResultDoc], flags: dict, walls: list[np.ndarray]) -> RepeatFields:
    """Which repeats there are, which the times rest on, and why any was flagged."""
    return {
        "repeats": len(ok),
        "used": [d.repeat for d in used],
        "flagged": {r: f for r, f in flags.items() if f},
        "all_flagged": len(used) == len(ok) and any(flags.values()),  # flagged, but kept
        "steps": sum(len(w) for w in walls),
        "steps_per_repeat": [len(w) for w in walls],
    }


def _ms(value: float) -> float:
    return value / 1e6


def _ci_ms(ci: Interval) -> Interval:
    return None if ci is None else (ci[0] / 1e6, ci[1] / 1e6)


def _time_fields(used: list[ResultDoc], walls: list[np.ndarray]) -> TimeFields:
    """The step's times: median, mean (the time a run takes per step) and the tail."""
    median = stats.geometric([float(np.median(w)) for w in walls])
    mean = stats.geometric([float(iterations(d).mean()) for d in used])  # the time a run takes, per step
    return {
        "median_ms": _ms(median.value),
        "median_ci_ms": _ci_ms(median.ci),
        "repeat_medians_ms": [_ms(m) for m in median.per_repeat],
        "mean_ms": _ms(mean.value),
        "mean_ci_ms": _ci_ms(mean.ci),
        "repeat_means_ms": [_ms(m) for m in mean.per_repeat],
        "p90_ms": _ms(float(np.median([np.percentile(w, 90) for w in walls]))),
        "p99_ms": _ms(float(np.median([np.percentile(w, 99) for w in walls]))),
        "max_ms": _ms(float(max(w.max() for w in walls))),
        "max_over_median": float(np.median([w.max() / np.median(w) for w in walls])),
    }


def _gc_fields(ok: list[ResultDoc], used: list[ResultDoc], walls: list[np.ndarray], spike_factor: float) -> GCFields:
    """The collector: its share, its collections (in steps and between them), the full
    collections' schedule and spikes."""
    gc_ns = sum(results.step_total(d, "gc_ns") for d in used)
    colls = [collections(d) for d in used]
    # A flag says a repeat's level moved, not that its collector did: full collections are a
    # schedule (exact), so every ok repeat counts there, flagged or not. Their cost shows in
    # the iterations (a full collection before a step, in the loop's own code, is that
    # iteration's).
    all_walls = [iterations(d) for d in ok]
    fulls = [full_collections(d) for d in ok]
    share = stats.arithmetic([gc_share(d) for d in used], bounds=(0.0, 1.0))
    spike_idx = [stats.spikes(w, spike_factor) for w in walls]
    return {
        "gc_share": share.value,
        "gc_share_ci": share.ci,
        "repeat_gc_shares": share.per_repeat,
        "gc_ms_per_step": _ms(gc_ns / sum(len(w) for w in walls)),
        "collections": np.sum([c.sum(axis=0) for c in colls], axis=0).tolist(),
        "between": _between(used),
        "full": stats.event_summary(all_walls, fulls),
        "full_after_last": sum(full_after_last(d) for d in ok),  # in no iteration: counted apart
        "spike_factor": spike_factor,
        "spikes": int(sum(len(i) for i in spike_idx)),
        "spikes_at_full": _spikes_at_full(used, spike_idx),
    }


def _between(used: list[ResultDoc]) -> Between:
    """The collections outside every step, by generation, and their pauses in ms."""
    between = [between_steps(d) for d in used]
    return Between(np.sum([b.collections for b in between], axis=0).tolist(), sum(b.gc_ns for b in between) / 1e6)


def _spikes_at_full(used: list[ResultDoc], spike_idx: list[np.ndarray]) -> int:
    """The spikes that fell on a step holding a full collection."""
    return int(sum(int((full_collections(d)[i] > 0).sum()) for d, i in zip(used, spike_idx, strict=True)))


def _context_fields(ok: list[ResultDoc], used: list[ResultDoc]) -> ContextFields:
    """What the steps ran beside: the language, the warm-up, memory, the loop's own calls
    to the collector, and the machine's load."""
    loaded = sum(1 for d in used if repeat_load(d))
    return {
        "language": "julia" if used[0].gc_full is not None else "python",
        "warmup": warmup_summary(used),
        "memory": memory_summary(used),
        "explicit": explicit_summary(ok),  # counts: every ok repeat, as the schedule
        "collector": collector_summary(ok),
        "loaded": loaded,  # repeats its times rest on that ran on a loaded machine
        "load": describe_load(used) if loaded else None,
        "warnings": [],
    }


def _optional_fields(used: list[ResultDoc], walls: list[np.ndarray]) -> OptionalFields:
    """What only some results record: allocated bytes, allocation pressure, the rates per
    step, CPU time, host time."""
    out: OptionalFields = {}
    if all(d.alloc_bytes is not None for d in used):
        out.update({"alloc_bytes_per_step": float(np.mean([results.step_total(d, "alloc_bytes") /
                                                            results.step_count(d) for d in used]))})
    if all(d.gc_pressure is not None for d in used):
        pressures = [results.step_array(d, "gc_pressure", np.float64) for d in used]
        out.update({"pressure_per_step": float(np.median([np.median(p) for p in pressures if p is not None]))})
    out.update(_rate_fields(used))
    out.update(_share_fields(used, walls))
    return out


def _rate_fields(used: list[ResultDoc]) -> OptionalFields:
    """What a starting heap cannot move, each the mean over the repeats where every one read it."""
    examined, promotions, retained = (stats.all_known([rate(d) for d in used]) for rate in (
        rates.examined_per_step, rates.promotions_per_step, rates.growth_per_step))
    out: OptionalFields = {}
    if examined:
        out.update({"examined_per_step": float(np.mean(examined))})
    if promotions:
        out.update({"promotions_per_step": float(np.mean(promotions))})
    if retained:
        out.update({"retained_per_step": float(np.mean(retained))})
    return out


def _share_fields(used: list[ResultDoc], walls: list[np.ndarray]) -> OptionalFields:
    """The collector's share of CPU time, which load does not stretch, and the share of the
    step spent before waiting for the results (host time), where every repeat read them."""
    out: OptionalFields = {}
    cpu_shares = [cpu_gc_share(d) for d in used]
    if None not in cpu_shares:
        cpu = stats.arithmetic(cpu_shares, bounds=(0.0, 1.0))
        out.update({"gc_share_cpu": cpu.value, "gc_share_cpu_ci": cpu.ci, "repeat_gc_shares_cpu": cpu.per_repeat})
    if all(d.host_ns is not None for d in used):
        host = stats.arithmetic(
            [results.step_total(d, "host_ns") / w.sum() for d, w in zip(used, walls, strict=True)], bounds=(0.0, 1.0)
        )
        out.update({"host_share": host.value, "host_share_ci": host.ci})
    return out


class RepeatBetween(NamedTuple):
    """The collections of one result that fell outside every step: their pause and their
    count per generation."""

    gc_ns: int
    collections: list[int]


def between_steps(doc: ResultDoc) -> RepeatBetween:
    """The collections of a result that fell outside every step (zero where none is recorded)."""
    b = results.part(doc, "between_steps")
    n = _generations(doc)
    colls = list(b.get("collections") or [0] * n)[:n]
    return RepeatBetween(int(b.get("gc_ns", 0)), colls + [0] * (n - len(colls)))


def iterations(doc: ResultDoc) -> np.ndarray:
    """Per step, the iteration of the loop it ends, in ns: the step and the gap before it.
    A user's loop (`gcbench.measure`) counts the whole gap (its own code between steps: a
    data loader, and the collections there); gcbench's own cells count only the gap's
    collections (the rest of their gap is gcbench's bookkeeping, not the loop's). Results
    that recorded no gaps: the steps alone."""
    wall = np.asarray(doc.wall_ns, np.float64)
    gap = results.step_array(doc, "gap_ns" if doc.backend == "user" and doc.gap_ns is not None else "gap_gc_ns",
                             np.float64)
    return wall + gap if gap is not None else wall


def gc_share(doc: ResultDoc) -> float:
    """Time in GC pauses over the run's time: the steps' pauses and those between steps,
    over the loop's iterations (`iterations`) and the pauses between steps that no
    iteration holds (after the last step; in results without gaps, all of them)."""
    between = between_steps(doc).gc_ns
    in_gaps = results.step_total(doc, "gap_gc_ns")
    total = float(iterations(doc).sum()) + between - in_gaps
    return (results.step_total(doc, "gc_ns") + between) / total if total > 0 else 0.0


def _warmup_repeat(w: dict) -> WarmupRepeat | None:
    """One repeat's warm-up: its steps, time, pauses, collections by generation and objects
    collected; None where it recorded none."""
    wall = w.get("wall_ns") or []
    if not wall or "gc_ns" not in w:
        return None
    colls = np.asarray(w.get("gc_collections") or [[0]], np.int64).reshape(len(wall), -1).sum(axis=0)
    return WarmupRepeat(len(wall), float(np.sum(wall)) / 1e6, float(np.sum(w["gc_ns"])) / 1e6, colls.tolist(),
                        int(np.sum(w.get("gc_collected") or [0])))


def warmup_summary(docs: list[ResultDoc]) -> Warmup | None:
    """The warm-up (compilation) of each repeat: steps, GC pause time, collections per
    generation and objects collected, per repeat (None where no repeat recorded one)."""
    rows = [r for d in docs if (r := _warmup_repeat(results.part(d, "warmup"))) is not None]
    if not rows:
        return None
    return Warmup(len(rows), rows[0].steps, float(np.mean([r.wall_ms for r in rows])),
                  float(np.mean([r.gc_ms for r in rows])), [r.collections[-1] for r in rows],
                  np.mean([r.collections for r in rows], axis=0).tolist(),
                  float(np.mean([r.collected for r in rows])), rows)


def memory_summary(docs: list[ResultDoc]) -> MemoryStats | None:
    """Memory beside time, where the repeats recorded it: the peak resident set size over
    the timed steps (geometric mean over repeats, with its interval), its growth per 1,000
    steps (least squares over the samples of each repeat; mean with its interval), and the
    growth of the objects the collector tracks per 1,000 steps."""
    readings = [_memory_readings(d) for d in docs]
    peaks, slopes, tracked = ([r[i] for r in readings if r[i] is not None] for i in range(3))
    if not peaks and not tracked:
        return None
    out: dict[str, Any] = {}  # MemoryStats' fields
    if len(peaks) == len(docs):
        peak = stats.geometric(peaks)
        out.update(peak_rss_mb=peak.value, peak_rss_ci_mb=peak.ci, repeat_peak_rss_mb=peak.per_repeat)
    if len(slopes) == len(docs):
        g = stats.arithmetic(slopes)
        out.update(rss_growth_mb_per_1000=g.value, rss_growth_ci=g.ci, repeat_rss_growth=g.per_repeat)
    if len(tracked) == len(docs):
        t = stats.arithmetic(tracked)
        out.update(tracked_growth_per_1000=t.value, tracked_growth_ci=t.ci, repeat_tracked_growth=t.per_repeat)
    return MemoryStats(**out) if out else None


def _rss_growth(at: list[int], rss: list[int]) -> float | None:
    """The resident set's growth in MiB per 1,000 steps, least squares over its samples
    (three or more, at two steps or more)."""
    if len(rss) < 3 or len(set(at)) < 2:
        return None
    return float(np.polyfit(np.asarray(at, np.float64), np.asarray(rss, np.float64) / 2**20, 1)[0]) * 1000


def _memory_readings(d: ResultDoc) -> tuple[float | None, float | None, float | None]:
    """One repeat's peak resident set (MiB), its growth and the tracked objects' growth per
    1,000 steps, each None where not recorded; a growth is read over MIN_GROWTH_STEPS timed
    steps or more (a warm-up's tail is not a leak)."""
    m = results.part(d, "memory")
    rss, at = m.get("rss_bytes") or [], m.get("rss_step") or []
    n = results.step_count(d)
    peak = max(rss) / 2**20 if rss and max(rss) > 0 else None
    slope = _rss_growth(at, rss) if n >= MIN_GROWTH_STEPS else None
    start, end = m.get("tracked_start"), m.get("tracked_end")
    tracked = (end - start) * 1000 / n if start is not None and end is not None and n >= MIN_GROWTH_STEPS else None
    return peak, slope, tracked


def warnings(s: CellStats) -> list[str]:
    """Why a cell's numbers should be read with care (empty when they look solid)."""
    out = []
    short = min(s.steps_per_repeat)
    if short < MIN_STEPS:
        out.append(f"only {short} timed steps per repeat (< {MIN_STEPS})")
    used = len(s.used)
    out += _too_few_repeats(used)
    ci = s.median_ci_ms
    if ci is not None and used > 2 and s.median_ms > 0 and (ci[1] - ci[0]) / s.median_ms > MAX_CI_WIDTH:
        out.append(f"wide 95 % interval of the median ({wording.fmt(ci[0])}-{wording.fmt(ci[1])} ms)")
    if any(s.between.collections):
        n = sum(s.between.collections)
        out.append(f"{n} collection{'s' * (n != 1)} ({wording.fmt(s.between.gc_ms)} ms) fell between steps, in the "
                   "loop's own code outside `m.step()`: counted in the GC share, not in any step")
    return out + [_flagged(repeat, flags, s.all_flagged) for repeat, flags in s.flagged.items()]


def _too_few_repeats(used: int) -> list[str]:
    """Fewer repeats than an interval needs."""
    if used < 2:
        return ["one repeat: no interval (one process says nothing about a second one's luck)"]
    if used < stats.MIN_PROCESSES:
        return [f"{used} repeats: no interval or test from fewer than {stats.MIN_PROCESSES} processes (their "
                f"values are shown instead); run {stats.MIN_PROCESSES} or more"]
    return []


def _flagged(repeat: int, flags: list[str], all_flagged: bool) -> str:
    """A flagged repeat: why, and whether its times were left out (its collections never are)."""
    if not all_flagged:  # left out of the times; its collections are still counted
        flags = [*flags, "its full collections are counted with the others'"]
    kept = " (kept: too few unflagged repeats to leave it out)" if all_flagged else " (left out)"
    return f"repeat {repeat}: {'; '.join(flags)}{kept}"


POLICY_ORDER = ("default", "freeze", "disable")


def sort_key(key: tuple, envs: list[str], nodes: list[str]) -> tuple:
    """Cells in reading order: workload, backend (registry order), environment, node type,
    policy."""
    from ..measuring.backends import BACKENDS
    from ..measuring.workloads import WORKLOADS

    backend, workload, policy, env, node = key
    def order(names, x):
        return names.index(x) if x in names else len(names)
    return (order(list(WORKLOADS), workload), workload, order(list(BACKENDS), backend), backend,
            order(envs, env), order(nodes, node), order(list(POLICY_ORDER), policy.partition(":")[0]), policy)


def summarize_all(docs: list[ResultDoc], spike_factor: float = DEFAULT_SPIKE_FACTOR) -> list[CellSummary]:
    """Every cell of `docs`, summarized, in reading order (workload, backend, environment, policy)."""
    groups = cells(docs)
    envs = list(dict.fromkeys(k[3] for k in groups))
    nodes = list(dict.fromkeys(k[4] for k in groups))
    return [summarize(groups[k], spike_factor, key=k) for k in sorted(groups, key=lambda k: sort_key(k, envs, nodes))]


def record(cs: CellSummary) -> dict:
    """A cell as one flat record, with the names that `m.summary()`, `--json` (`cells`),
    `export --per cell` (CSV and JSON) and `to_dataframe(per="cell")` all use (README,
    "Result fields", says what each one means). Times are in ms, shares are fractions from
    0 to 1, intervals are 95 % over the repeats (None with one repeat); a cell that did not
    run has its names, status and reasons only."""
    row: dict[str, Any] = {
        "cell": cs.label,
        "backend": cs.key[0],
        "workload": cs.key[1],
        "gc_policy": cs.key[2],
        "environment": cs.key[3] or None,
        "node_type": cs.key[4] or None,
        "status": "/".join(sorted({d.status for d in cs.docs})),
        "reasons": sorted({d.reason.splitlines()[0] for d in cs.docs if d.reason}),
    }
    s = cs.stats
    if s is None:
        return row
    return {**row, **_times_record(s), **_collections_record(s), **_other_record(s)}


def _low_high(ci: Interval) -> tuple[float | None, float | None]:
    """An interval's two ends, (None, None) without one."""
    return (ci[0], ci[1]) if ci else (None, None)


def _times_record(s: CellStats) -> dict[str, Any]:
    """The record's repeats, times and shares, with their intervals' ends."""
    mci, sci, meci = _low_high(s.median_ci_ms), _low_high(s.gc_share_ci), _low_high(s.mean_ci_ms)
    return {
        "repeats": s.repeats,
        "repeats_used": len(s.used),
        "steps": s.steps,
        "median_ms": s.median_ms,
        "median_ci_low_ms": mci[0],
        "median_ci_high_ms": mci[1],
        "mean_ms": s.mean_ms,
        "mean_ci_low_ms": meci[0],
        "mean_ci_high_ms": meci[1],
        "p99_ms": s.p99_ms,
        "max_over_median": s.max_over_median,
        "gc_share": s.gc_share,
        "gc_share_ci_low": sci[0],
        "gc_share_ci_high": sci[1],
        "host_share": s.host_share,
    }


def _collections_record(s: CellStats) -> dict[str, Any]:
    """The record's full collections (count, rate and interval, schedule, cost) and those
    between steps."""
    f = s.full
    fci = _low_high(f.rate.ci)
    return {
        "full_collections": f.count,
        "full_per_1000": f.rate.value,
        "full_per_1000_ci_low": fci[0],
        "full_per_1000_ci_high": fci[1],
        "full_per_repeat": list(f.schedule.counts),
        "full_schedule_fixed": f.schedule.constant,
        "full_extra_ms": None if f.extra_ns is None else f.extra_ns / 1e6,
        "full_cost_share": f.cost_share,
        "between_steps_collections": s.between.collections,
    }


def _other_record(s: CellStats) -> dict[str, Any]:
    """The record's memory, rates per step, warm-up, collector state, the loop's own
    collections and flags."""
    mem, warm, explicit = s.memory or MemoryStats(), s.warmup, s.explicit
    return {
        "peak_rss_mb": mem.peak_rss_mb,
        "rss_growth_mb_per_1000": mem.rss_growth_mb_per_1000,
        "tracked_growth_per_1000": mem.tracked_growth_per_1000,
        "examined_per_step": s.examined_per_step,
        "promotions_per_step": s.promotions_per_step,
        "retained_per_step": s.retained_per_step,
        "warmup_gc_ms": warm.gc_ms if warm else None,
        "warmup_full_collections": sum(warm.full_per_repeat) if warm else None,
        "gc_share_cpu": s.gc_share_cpu,
        "loaded_repeats": s.loaded,
        "collector": dataclasses.asdict(s.collector) if s.collector else None,
        "full_collections_after_last": s.full_after_last,
        "explicit_collections": explicit.collections if explicit else None,
        "explicit_sites": explicit.sites if explicit else None,
        "flags": list(s.warnings),
    }
