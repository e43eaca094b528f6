"""`gcbench explain CELL`: where the collector's work comes from.

How it works, and why: docs/internals.md, `gcbench.analysing.gc_causes`.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from typing import TYPE_CHECKING

import numpy as np

from ..core import files, wording
from ..core.errors import UsageError, printable
from ..measuring import results, site_names
from ..measuring.diagnostic_run import DISTURBED, RAW_FORMAT
from ..measuring.results import ResultDoc
from . import explanation_records as records
from .explanation_records import (
    Census,
    Collection,
    Explanation,
    FullInterval,
    JuliaAllocs,
    PythonDiagnosis,
    Recommendation,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from .comparison import RepeatValues

FILE = "explain.json"
FORMAT = "gcbench-explain"
SCHEMA_VERSION = 1


# -- what it means -------------------------------------------------------------------------------


def paid_collections(py: PythonDiagnosis) -> list[Collection]:
    """Every collection the loop paid for: in its steps, and between them while it ran (a
    diagnosis watches from the loop's start to its end; results from before the steps
    between were told apart name them step -1 too)."""
    return [c for c in py.collections if c.step < py.steps]


def _median_gap(steps: list[int]) -> float | None:
    """The median number of steps between consecutive ones of `steps`; None for fewer than two."""
    return statistics.median(b - a for a, b in itertools.pairwise(steps)) if len(steps) > 1 else None


def full_interval(py: PythonDiagnosis) -> FullInterval:
    """The interval between full collections that CPython's rule predicts from what the run
    promoted, against the interval observed in the run."""
    steps = py.steps
    promoted = statistics.fmean(py.promoted_per_step) if steps else 0.0
    paid = paid_collections(py)
    gen1_per_step = sum(1 for c in paid if c.generation == 1) / steps if steps else 0.0
    sizes = [size for _, size in py.oldest] or [py.scanned.total // max(py.scanned.collections, 1)]
    oldest = statistics.median(sizes)
    thr2 = py.thresholds[2] if len(py.thresholds) > 2 else 10
    by_count = (thr2 + 1) / gen1_per_step if gen1_per_step else None
    by_promotion = (oldest / 4) / promoted if promoted else None
    full = _full_steps(paid)
    # None: the rule never fires at this rate (no collection of generation 1, or nothing promoted)
    predicted = None if by_count is None or by_promotion is None else max(by_count, by_promotion)
    return FullInterval(promoted, gen1_per_step, oldest, thr2, by_count, by_promotion, predicted, _median_gap(full),
                        len(full))


def _full_steps(paid: list[Collection]) -> list[int]:
    """Every full collection the loop paid for, at its step, or before the step it preceded."""
    return sorted(c.step if c.step >= 0 else (c.before_step or 0) for c in paid if c.generation >= 2)


def _effect(docs: list[ResultDoc] | None, base: tuple, other: tuple, env: str | None = None,
            tests: bool = True) -> str | None:
    """The measured change from cell `base` to cell `other` (backend, workload, policy) in
    environment `env` of `docs`, with its tests (corrected together) and intervals; None
    when the results hold no such pair. Without `tests` (a report, whose Findings test the
    same pair), the figures alone: a report gives one corrected p-value per comparison."""
    if not docs:
        return None
    from . import comparison

    pair = _pair(docs, base, other, env)
    if pair is None:
        return None
    a, b, other = pair
    va, vb = comparison.repeat_values(a), comparison.repeat_values(b)
    return _tested_effect(va, vb, base, other) if tests else _figures(va, vb, base, other)


def _pair(docs: list[ResultDoc], base: tuple, other: tuple, env: str | None) -> tuple | None:
    """The repeats of `base` and `other` in `env` (per kind of machine where there are
    several: the first that holds both), and `other` as it is named; None unless both ran ok."""
    from . import summary

    cells = summary.cells(docs)
    env = env or ""
    node = next((k[4] for k in cells if k[:4] == (*base, env) and (*other, env, k[4]) in cells), "")
    a, b = cells.get((*base, env, node)), cells.get((*other, env, node))
    if b is None and base[0] == "user":  # a user's loop: the remedy measured as a variant of that name
        b, other = _variant_of(cells, base, other)
    return (a, b, other) if a and b and results.ok(a) and results.ok(b) else None


def _variant_of(cells: dict, base: tuple, other: tuple) -> tuple[list[ResultDoc] | None, tuple]:
    """A user's loop's remedy, measured as a variant named after the remedy's policy, and
    the remedy as the report names it (`default [freeze]`)."""
    b = next((ds for k, ds in cells.items() if k[:2] == base[:2] and k[3] == other[2]), None)
    return b, (other if b is None else (*other[:2], f"{base[2]} [{other[2]}]"))


def _figures(va: RepeatValues, vb: RepeatValues, base: tuple, other: tuple) -> str:
    """The change in figures alone (a report's Findings test it)."""
    def gm(v, k):
        return float(np.exp(np.mean(np.log(v.per_repeat(k)))))
    return (f"measured, {'/'.join(base)} → {'/'.join(other)}: GC share {100 * np.mean(va.shares):.2f} % → "
            f"{100 * np.mean(vb.shares):.2f} %; full collections (repeats of {va.schedule.steps[0]:,} "
            f"steps): {wording.short_schedule(va.schedule)} → {wording.short_schedule(vb.schedule)}; median "
            f"step {wording.fmt(gm(va, 'medians'))} → {wording.fmt(gm(vb, 'medians'))} ms, mean step "
            f"{wording.fmt(gm(va, 'means'))} → {wording.fmt(gm(vb, 'means'))} ms (tested in Findings)")


def _tested(t) -> str:
    if t.exact:
        return t.verdict + (", exact: fixed schedules" if t.metric == "full_rate" else "")
    return ("cannot tell" if t.verdict == "inconclusive" else t.verdict) + \
        (f", p = {t.p_adj:.2g} corrected" if t.p_adj is not None else "")


def _level(t) -> str:
    return f"{100 * t.level:.3g} %"


def _ratio_words(t) -> str:
    """A time's ratio with its interval, or nothing where there is none."""
    ci = f" ({_level(t)} {t.ci[0]:.2f}-{t.ci[1]:.2f})" if t.ci else ""
    return f"{t.effect:.2f} x{ci}, " if t.effect is not None else ""


def _tested_effect(va: RepeatValues, vb: RepeatValues, base: tuple, other: tuple) -> str:
    """The change with its tests, corrected together, and their intervals."""
    from . import comparison

    tested_all = comparison.cell_tests(va, vb, comparison.MIN_EFFECT, comparison.ALPHA)
    median, share, full, mean = tested_all[:4]
    comparison.conclude(tested_all, comparison.ALPHA)
    if share.a is None or share.b is None or share.effect is None:
        raise ValueError("a GC share test without the shares it compares")
    share_ci = (f", difference {100 * share.effect:+.2f} points ({_level(share)} {100 * share.ci[0]:+.2f} to "
                f"{100 * share.ci[1]:+.2f})" if share.ci and not share.exact else "")
    return (f"measured, {'/'.join(base)} → {'/'.join(other)}: GC share {100 * share.a:.2f} % → "
            f"{100 * share.b:.2f} %{share_ci} ({_tested(share)}); full collections (repeats of "
            f"{va.schedule.steps[0]:,} steps): {wording.short_schedule(va.schedule)} → "
            f"{wording.short_schedule(vb.schedule)} ({_tested(full)}); the time a run takes (mean step) "
            f"{_ratio_words(mean)}{_tested(mean)}; the typical step (median) {_ratio_words(median)}{_tested(median)}")


HYPOTHESIS = " (a hypothesis: its effect is not measured on this loop)."
FINDINGS = ("none", "own-code", "between", "disabled", "few-sites")  # what the diagnosis shows, not a remedy to measure
# Allocation sites name lines only from a sample that can: at least this many promoted objects
# traced, and this share of them (2 of 44 named a line at 100 %; the Equinox seed's step
# traces 32,311 of 70,187, 46 %: free lists' objects carry no site, made by the same lines)
SITES_MIN_TRACED, SITES_MIN_SHARE = 100, 0.10


def recommendations(expl: Explanation, docs: list[ResultDoc] | None = None,
                    tests: bool = True) -> list[Recommendation]:
    """What to do about it, derived from the diagnosis, with measured effects where `docs`
    (the results folder's cells) hold the cells to show them. A remedy whose effect the
    folder does not hold is said as a hypothesis (`measured` False), never as advice."""
    out = _remedies(expl, docs, tests)
    for r in out:
        r.measured = bool(r.effect)
        if not r.measured and r.kind not in FINDINGS:
            r.text = r.text.rstrip(".") + HYPOTHESIS
    return out


def _remedies(expl: Explanation, docs: list[ResultDoc] | None, tests: bool) -> list[Recommendation]:
    py, interval = expl.python, expl.full_interval
    if py is None or interval is None:
        return []
    backend, workload, policy = expl.backend, expl.workload, expl.policy
    env = expl.environment
    out = _cycles_advice(py)
    advice = _user_loop_advice(py, interval, docs, (backend, workload, policy), env, tests) \
        if backend == "user" else []
    if interval.promoted_per_step < 1 and not interval.full_collections and not advice:
        out.append(Recommendation("none", "Nothing to fix here: the loop promotes "
                    f"{interval.promoted_per_step:.2g} objects per step and made no full collection."))
        return out
    if backend == "user":  # a loop of the user's: what its own diagnosis shows, not gcbench's cells' advice
        return out + advice
    return out + _cell_advice(expl, py, interval, docs, tests)


def _cycles_advice(py: PythonDiagnosis) -> list[Recommendation]:
    """Break the cycles, where the loop made cyclic garbage."""
    if not py.garbage.total:
        return []
    types = ", ".join(list(py.garbage.by_type)[:4])
    return [Recommendation("cycles", f"Break the reference cycles: {py.garbage.total:,} objects were "
            f"cyclic garbage ({types}); only the collector frees those. A weakref, or clearing the "
            "reference that closes the cycle, lets reference counting free them at once.")]


def _site_shares(promoted: Census) -> Callable[[str], float]:
    """The share of the traced promotions allocated in a package (`loop`: the loop's own)."""
    sites = traced_sites(promoted)
    total_sites = max(sum(sites.values()), 1)
    return lambda pkg: sum(v for k, v in sites.items() if k.split(" ")[0] == pkg) / total_sites


def _cell_advice(expl: Explanation, py: PythonDiagnosis, interval: FullInterval, docs: list[ResultDoc] | None,
                 tests: bool) -> list[Recommendation]:
    """gcbench's own cells: the remedies their backends and policies measure, where the
    diagnosis points at them."""
    out: list[Recommendation] = []
    backend, workload, policy = expl.backend, expl.workload, expl.policy
    env = expl.environment
    site_share = _site_shares(py.promoted)
    origin = py.scanned.origin
    before = origin.get("before the timed steps", 0) / max(sum(origin.values()), 1)
    if site_share("loop") >= 0.2:
        out.append(Recommendation("bookkeeping", "The loop's own bookkeeping drives the collector: "
                    f"{100 * site_share('loop'):.0f} % of what is promoted comes from the metrics history the loop "
                    "keeps. A record holding a dict or a list is tracked and promoted; keep metrics as numbers in "
                    "preallocated arrays, or in flat dicts of numbers, which CPython does not track."))
    if backend == "equinox-filter" and site_share("equinox") + site_share("jax") >= 0.3:
        out.append(Recommendation(
            "partition",
            "Flatten the model once: "
            f"{100 * (site_share('equinox') + site_share('jax')):.0f} % of what is promoted is allocated in "
            "equinox and jax while eqx.filter_jit flattens the module on every call. eqx.partition once, "
            "then plain jax.jit over the arrays (the equinox-partition backend).",
            effect=_effect(docs, (backend, workload, policy), ("equinox-partition", workload, policy), env, tests)))
    if backend == "nnx" and site_share("flax") >= 0.3:
        out.append(Recommendation("split", "Split the model once: "
                    f"{100 * site_share('flax'):.0f} % of what is promoted is allocated in flax while nnx.jit walks "
                    "the module's graph on every call. nnx.split once, then a pure jax.jit over (graphdef, state) "
                    "(the nnx-split backend; Flax's performance guide).",
                    effect=_effect(docs, (backend, workload, policy), ("nnx-split", workload, policy), env, tests)))
    if before >= 0.5 and interval.full_collections:
        out.append(Recommendation("freeze", f"Freeze what setup made: {100 * before:.0f} % of the objects a full "
                    "collection scans existed before the timed steps (imports, the model, compiled functions). "
                    "gc.collect() then gc.freeze() after the first step (the freeze policy) moves them out of "
                    "every later scan.",
                    effect=_effect(docs, (backend, workload, policy), (backend, workload, "freeze"), env, tests)))
    return out


def _user_loop_advice(py: PythonDiagnosis, interval: FullInterval, docs, base: tuple, env,
                      tests: bool = True) -> list[Recommendation]:
    """What to do about a user's loop: its own allocation sites first; then, when full
    collections free almost nothing, that their cost is scanning long-lived objects, with
    `gc.freeze()` after warm-up as the remedy (its effect measured where the folder holds
    the loop measured with policy freeze)."""
    paid = paid_collections(py)
    return [*_disabled_advice(py), *_between_advice(paid), *_site_advice(py),
            *_full_advice(py, interval, paid, docs, base, env, tests)]


def _disabled_advice(py: PythonDiagnosis) -> list[Recommendation]:
    state = py.collector_state
    if state is None or not state.off_steps:
        return []
    disable = state.calls.get("disable")
    where = f" (gc.disable() at {disable.first_at})" if disable and disable.first_at else ""
    return [Recommendation("disabled", f"The collector was off in {state.off_steps:,} of {py.steps:,} "
             f"steps{where}: nothing but an explicit gc.collect() frees the reference cycles the loop makes, "
             "so what is measured here is what the loop allocates, not what the collector costs it. Processes "
             "forked from it (DataLoader workers) inherit the collector off and keep every cycle they make: "
             "measure a worker's side too (docs/usage.md, \"A worker's side\").")]


def _between_advice(paid: list[Collection]) -> list[Recommendation]:
    between = [c for c in paid if c.step < 0]  # between the steps, while the loop ran
    if not between:
        return []
    full = sum(1 for c in between if c.generation >= 2)
    return [Recommendation("between", f"{len(between):,} collection{'s' * (len(between) != 1)} ({full:,} "
             "full) ran between steps, in your loop's own code outside `m.step()` (a data loader, say): "
             "they are the loop's all the same and count in the time a run takes; what allocates there is "
             "what to change, or to move into the step to see it in the step's own time.")]


def _few_sites(known: int, total: int, sampled: str) -> Recommendation:
    """Too few promoted objects carry a site to name the lines that allocate them."""
    return Recommendation("few-sites", f"Only {known:,} of the {total:,} objects promoted to the oldest "
                          f"generation{sampled} carry an allocation site (objects reused from a free list, or made "
                          "before tracing began, carry none): too few to say which lines allocate them.")


def _site_advice(py: PythonDiagnosis) -> list[Recommendation]:
    """The lines that allocate what is promoted: the loop's own, or the loop's calls into
    libraries; too few traced objects to say, said."""
    out: list[Recommendation] = []
    sites = traced_sites(py.promoted)
    traced = max(sum(sites.values()), 1)
    own = {k: v for k, v in sites.items() if k.split(" ")[0] == "user"}
    called = py.promoted.by_user_site
    # sites sampled: the share is of what the traced intervals promoted
    total = py.promoted.total if py.promoted.sampled is None else py.promoted.sampled
    sampled = "" if py.promoted.sampled is None else f" in {sampled_intervals(py)}"
    known = traced if py.promoted.traced is None else py.promoted.traced
    if total and (known < SITES_MIN_TRACED or known < SITES_MIN_SHARE * total):  # too few: said, never guessed
        out.append(_few_sites(known, total, sampled))
        own, called = {}, {}
    # the lines below are those of the traced objects: their share is said where it is not all
    of_traced = f" (of the {known:,} of {total:,} promoted objects{sampled} that carry a site)" \
        if total and known < total else ""
    lines = _lines_to_change(sites, own, called, traced, of_traced)
    return out + ([lines] if lines is not None else [])


def _lines_to_change(sites: dict, own: dict, called: dict, traced: int, of_traced: str) -> Recommendation | None:
    """The loop's own lines that allocate what is promoted, or its lines that call into the
    libraries that do; None where the traced sites name neither."""
    if own:
        top = ", ".join(k.split(" ", 1)[1] for k in list(own)[:3])
        return Recommendation("own-code", f"{100 * sum(own.values()) / traced:.0f} % of what reaches the oldest "
                              f"generation{of_traced} is allocated in your own code, at {top}: objects kept alive "
                              "there (histories, caches, lists of records) are what the collector promotes and later "
                              "scans.")
    if called:
        inner = ", ".join(k for k in list(sites)[:3] if not k.endswith(site_names.OWN))
        top = ", ".join(f"{k} ({100 * v / traced:.0f} %)" for k, v in list(called.items())[:3])
        return Recommendation("own-code", f"What reaches the oldest generation{of_traced} is allocated inside "
                              f"libraries ({inner}), called from your code at {top}: those are the lines of your "
                              "loop to change.")
    return None


def _full_advice(py: PythonDiagnosis, interval: FullInterval, paid: list[Collection], docs, base: tuple, env,
                 tests: bool) -> list[Recommendation]:
    """Full collections that free almost nothing (their cost is scanning: freeze), or none
    at all while cyclic garbage waits in the oldest generation (an occasional collect)."""
    fulls = [c for c in paid if c.generation >= 2]  # between steps too
    if fulls:
        return _scanning_advice(py, fulls, docs, base, env, tests)
    if py.garbage.total and interval.full_collections == 0 and interval.gen1_per_step:
        return [Recommendation("no-full", "No full collection ran, yet the loop makes cyclic garbage that "
                 "survives young collections: it waits in the oldest generation, whose collection the "
                 "collector's rule keeps putting off, so memory grows. An occasional gc.collect() (policy "
                 "manual:K) frees it: compare peak memory with `gcbench compare`, not time alone.")]
    return []


def _asked_or_frozen(py: PythonDiagnosis, fulls: list[Collection], head: str) -> tuple[str, str] | None:
    """Full collections the loop asked for itself (half of them or more: thin them), or made
    after it froze its heap (keep fewer alive); None where neither."""
    asked = sum(1 for c in fulls if c.explicit)
    if 2 * asked >= len(fulls):
        return "thin-collects", (
            f"{head}; {asked} of them were the loop's own gc.collect() calls, which free nothing "
            "here: remove them, or thin them (one every few hundred steps, where memory allows). Each "
            "costs a scan of every long-lived object; a freeze after the warm-up would only make that scan "
            "cheaper.")
    state = py.collector_state
    froze = state.calls.get("freeze") if state is not None else None
    if froze is None or not froze.count:
        return None
    where = f" (gc.freeze() at {froze.first_at})" if froze.first_at else ""
    return "frozen-scan", (f"{head}: the loop froze its heap{where}, and what these collections scan was made after "
                           "it. Keep fewer of those objects alive (the lines above), or freeze once they are made.")


def _scanning_advice(py: PythonDiagnosis, fulls: list[Collection], docs, base: tuple, env,
                     tests: bool) -> list[Recommendation]:
    """Full collections (`fulls`, at least one) that free almost nothing: the loop's own
    gc.collect() calls to thin, a heap frozen already, or a freeze to make; none where they
    free garbage or scan little."""
    freed = sum(c.collected for c in fulls)
    starts = [c.objects_at_start[2] for c in fulls if c.objects_at_start[2] >= 0]
    scanned = statistics.fmean(starts) if starts else 0
    if freed / len(fulls) > max(0.01 * scanned, 100) or scanned < CHEAP_SCAN:
        return []  # each frees garbage, or their scans are cheap (a frozen heap): nothing to prescribe
    head = (f"The {len(fulls)} full collection{'s' * (len(fulls) > 1)} freed {freed:,} objects in all while "
            f"scanning about {scanned:,.0f} each")
    said = _asked_or_frozen(py, fulls, head)
    if said is not None:
        kind, text = said
        return [Recommendation(kind=kind, text=text, effect=_measured_beside(docs, base, env, tests))]
    return [Recommendation(kind="scanning",
             text=f"{head}: the cost is scanning long-lived objects, not garbage. gc.collect() then gc.freeze() "
             "after the warm-up moves them out of every later scan; measure it with policy='freeze' into a "
             "folder of its own and `gcbench compare` the two.",
             effect=_effect(docs, base, (base[0], base[1], "freeze"), env, tests) or
             _measured_beside(docs, base, env, tests))]


CHEAP_SCAN = 10_000  # a full collection scanning fewer objects than this costs little: no remedy for it


def _measured_beside(docs, base: tuple, env, tests: bool) -> str | None:
    """What ran beside a user's loop in the folder (its other policies and variants),
    ranked by the time a run takes, each with its measured change; None where nothing did."""
    if not docs:
        return None
    from . import summary

    cells = summary.cells(docs)
    mine = cells.get((*base, env or "", ""))
    if not mine or not results.ok(mine):
        return None
    effects = (_effect(docs, base, _as_remedy(k, env or ""), env, tests) for k in _beside(cells, base, env or ""))
    return "; ".join(e for e in effects if e) or None


def _as_remedy(k: tuple, env: str) -> tuple:
    """A cell measured beside the explained one, as the remedy it is: its variant (a user's
    loop names the remedy so) where it has one, else its policy."""
    return (k[0], k[1], k[3]) if k[3] and k[3] != env else (k[0], k[1], k[2])


def _beside(cells: dict, base: tuple, env: str) -> list[tuple]:
    """The cells of the same loop under another policy, or as another version of its code
    (a variant), that ran ok: fastest run first."""
    from . import comparison

    others = [k for k in cells if k[:2] == base[:2] and k[:4] != (*base, env) and results.ok(cells[k])]
    means = {k: comparison.repeat_values(cells[k]).means for k in others}
    return sorted((k for k in others if means[k]), key=lambda k: (float(np.exp(np.mean(np.log(means[k])))), k))


def of_user_loop(diagnosis: dict, cell, variant: str | None, user_file: str,
                 collector: dict | None = None) -> Explanation:
    """The explanation of a user's loop measured with `measure(..., explain=True)`;
    `collector`: what the loop did to the collector (Measurement.collector_state)."""
    from ..core import metadata

    meta = metadata.collect()
    diagnosis = dict(diagnosis, interpreter=meta.get("python"))
    if collector and (collector.get("off_steps") or collector.get("calls")):
        diagnosis.update(collector_state=collector)
    raw = {"format": RAW_FORMAT, "cell": {**cell.to_json(), "policy": cell.policy}, "label": cell.label,
           "metadata": meta, "environment": None, "python": diagnosis}
    expl = summarize(raw)
    expl.label = f"user/{cell.workload}/{cell.policy}"
    expl.environment = variant  # a variant of a loop stands where an environment does (summary.cell_key)
    expl.user_file = site_names.site_path(user_file) if user_file else None
    return expl


def summarize(raw: dict, docs: list[ResultDoc] | None = None) -> Explanation:
    """The explanation of one diagnostic run (its raw document: docs/internals.md,
    `gcbench.analysing.gc_causes`)."""
    cell, meta = raw.get("cell") or {}, raw.get("metadata") or {}
    expl = Explanation(label=f"{cell.get('backend')}/{cell.get('workload')}/{cell.get('policy')}", cell=cell,
                       python_version=meta.get("python"),
                       packages={k: v for k, v in (meta.get("packages") or {}).items() if v},
                       environment=(raw.get("environment") or {}).get("name"), note=DISTURBED)
    if "julia" in raw:
        expl.julia = records.from_json(raw.get("julia"), JuliaAllocs, "diagnostic run")
        expl.julia_versions = meta.get("julia_packages", {})
        return expl
    expl.python = records.from_json(raw.get("python"), PythonDiagnosis, "diagnostic run")
    return derive(expl, docs)


def _by_generation(paid: list[Collection], which: Callable[[Collection], bool]) -> list[int]:
    """How many of the collections `which` picks fell in each generation."""
    return [sum(1 for c in paid if c.generation == g and which(c)) for g in range(3)]


def derive(expl: Explanation, docs: list[ResultDoc] | None = None, tests: bool = True) -> Explanation:
    """The figures an explanation derives from its diagnosis (counts, the predicted interval,
    recommendations with the effects measured in `docs`), computed anew: a report refreshes
    a stored explanation with them, so that it follows the code and the folder's results."""
    py = expl.python
    if py is None:
        return expl
    paid = paid_collections(py)
    expl = dataclasses.replace(
        expl, full_interval=full_interval(py), counts=_by_generation(paid, lambda c: True),
        between=_by_generation(paid, lambda c: c.step < 0), explicit=_by_generation(paid, lambda c: c.explicit > 0),
        collected=sum(c.collected for c in paid), uncollectable=sum(c.uncollectable for c in paid))
    expl.recommendations = recommendations(expl, docs, tests)
    return expl


# -- explain.json -----------------------------------------------------------------------------------

# numbers an explanation may hold below zero (-1): a generation's size not counted, a
# collection's step between steps (and a sample's before them), a call's step before the first
_MAY_BE_NEGATIVE = frozenset({"objects_at_start", "step", "first_step", "oldest"})


def _negative(value, where: str = "", unknown: bool = False) -> str | None:
    """The place (`python.promoted.total`) of the first negative number in an explanation
    as read, or None: every count and size in one is at least zero (-1 too under the keys
    of `_MAY_BE_NEGATIVE`: `unknown`)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if (bad := _negative(v, f"{where}.{k}" if where else str(k), k in _MAY_BE_NEGATIVE)) is not None:
                return bad
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if (bad := _negative(v, f"{where}[{i}]", unknown)) is not None:
                return bad
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value < (-1 if unknown else 0):
        return where
    return None


def load(folder) -> list[Explanation] | None:
    """The explanations in a results folder (one per cell, environment and bookkeeping: the
    last saved), or None when it has none."""
    import pathlib

    path = pathlib.Path(folder) / FILE
    if not path.is_file():
        return None
    doc = files.check_header(files.read_json(path, "explain document"), str(path), FORMAT, "explain document",
                             SCHEMA_VERSION, versioned=False)
    explanations: list[Explanation] = records.from_json(_checked_explanations(doc, path), list[Explanation],
                                                        str(path))
    for n, e in enumerate(explanations):
        if e.julia is None and (e.python is None or e.full_interval is None):
            raise UsageError(f"{path}: explanation {n} ({printable(e.label)}) holds neither a Python diagnosis with "
                             "its full-collection interval nor Julia's allocations")
    for e in explanations:  # older files kept the environment in the label too: it is apart
        if e.environment:
            e.label = e.label.removesuffix(f" [{e.environment}]")
    return list({_key(e): e for e in explanations}.values())


def _checked_explanations(doc: dict, path) -> list[dict]:
    """An explain document's explanations as JSON: each a labelled record with no negative
    count, its counts a row per generation (older files kept them by generation's name)."""
    found = doc.get("explanations")
    if not isinstance(found, list) or not all(isinstance(e, dict) and isinstance(e.get("label"), str) for e in found):
        raise UsageError(f"{path}: not a gcbench explain document")
    for n, e in enumerate(found):
        if (bad := _negative(e)) is not None:
            raise UsageError(f"{path}: explanation {n} ({printable(e.get('label'))}) holds a negative count at {bad}")
        if isinstance(e.get("counts"), dict):  # {"0": 730, ...}
            e["counts"] = [e["counts"].get(str(g), 0) for g in range(3)]
    return found


def traced_sites(promoted: Census) -> dict[str, int]:
    """Promotions by allocation site, without those allocated before sites were traced."""
    return {k: v for k, v in promoted.by_site.items() if not k.startswith(site_names.UNTRACED)}


def why_no_sites(py: PythonDiagnosis) -> str | None:
    """Why a Python explanation has no allocation sites to show, in words; None when it has."""
    if traced_sites(py.promoted):
        return None
    if py.sites_from_step is None:
        return "not traced (--no-sites)"
    return (f"no object allocated in the traced steps (from step {py.sites_from_step}) reached the oldest "
            "generation there; trace more steps with --site-steps")


def _key(expl: Explanation) -> tuple[str, str | None, str]:
    """The cell, environment and loop bookkeeping an explanation is of."""
    return expl.label, expl.environment, expl.bookkeeping


def save(folder, expl: Explanation) -> None:
    """Add (or replace) the explanation of its cell in `folder`'s explain.json."""
    import pathlib

    with files.updating(pathlib.Path(folder) / FILE):  # concurrent savers each keep theirs
        kept = [e for e in load(folder) or [] if _key(e) != _key(expl)]
        files.write_json(pathlib.Path(folder) / FILE, {"format": FORMAT, "schema_version": SCHEMA_VERSION,
                                                       "explanations": records.to_json([*kept, expl])})


# -- for people ---------------------------------------------------------------------------------------


def sampled_intervals(py: PythonDiagnosis) -> str:
    """Which intervals sampled sites were traced over, in words."""
    return f"the traced intervals (one between collections of generation 1 in {py.site_intervals or '?'})"
