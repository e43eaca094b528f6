"""`gcbench compare A B`: per cell, whether B differs from A, and by how much.

How it works, and why: docs/internals.md, `gcbench.analysing.comparison`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar, TypedDict

import numpy as np

from ..core import metadata, wording
from ..core.errors import UsageError, did_you_mean
from ..measuring import results
from ..measuring.results import ResultDoc
from . import rates, stats, summary

ALPHA = 0.05
MIN_EFFECT = 0.05
PAIRED_MIN_ROUNDS = 5
# The level of one run (an invocation) against another on the same machine, as the standard
# deviation of its log step time: separate runs share a shift that repeats inside one run do
# not see. Measured on this 2-core machine from 22 cells that 5 separate runs held in common
# (four committed reports and a kept run, made 23 minutes to 3.3 days apart; quiet repeats
# only: benchmarks/run_term.py, benchmarks/run_term/estimate.json): 9.6 %, 95 % 3.3-31.7 %.
# It widens every time comparison of two runs apart (and their detectable changes); an
# interleaved A/B in one run (--env BASE --env HEAD, compare --base/--head) needs none.
# tests/test_readme_claims.py holds both numbers to that estimate. Left out one run at a
# time it reads 1.5-20.6 % (benchmarks/run_term.py): one run carries it, so the only gate
# for times is both sides in one run (docs/statistics.md, "Two runs apart").
RUN_SD = 0.096
RUN_DF = 4  # RUN_SD's own degrees of freedom (distinct runs - 1), carried into every interval two runs apart
POWER_TARGET = 0.20  # the change of a median a suite should find with 80 % power
GC_SHARE_FLOOR = 0.001  # 0.1 percentage point: GC shares closer than this are the same
# What a starting heap moves each rate by, as measured (benchmarks/gate_catalogue.py, pairs
# of one loop from heaps 1,000 and 100,000 objects apart, and benchmarks/starting_heaps.py
# for the ViT cells): a difference within its resolution is the same; beyond it, a change.
# Each is objects a step and a share of the larger side: the margin is the larger of the two.
# - allocations (the young count a step): a loop that frees about what it makes reads a
#   fraction of an object a step that depends on where the count stood as the steps began
#   (nnx/vit under `disable`: 0.152 a step on one machine, 0.616 on another), and a busier
#   loop a few hundredths of a percent (0.47 in 1,267);
# - promotions (what survives into the oldest generation a step): what is alive as a
#   collection of generation 1 runs depends on where in a step it falls, which a starting
#   heap moves: up to 0.30 a step on a pure-Python loop that keeps nothing, but 778-1,249 a
#   step (38 % of the larger) for equinox-filter/vit in one run, 995-1,249 in another, whose
#   steps hold thousands of objects in flight (benchmarks/starting_heaps.py; nnx/vit
#   4,284-4,379). So promotions are judged
#   only beyond 45 % and are not in the documented gate: a diagnosis, not a gate;
# - retained (the tracked heap's growth a step): up to 183 objects over a window of 300 steps
#   (0.61 a step), the garbage the older generations hold at the window's two ends: a
#   quantity per window, not per step, so its resolution is RETAINED_PER_WINDOW objects over
#   the shorter side's steps (1 a step at 300 steps, 0.3 at 1,000).
# Measured in three runs of 40 pairs each: none fired, the largest differences pressure 0.61,
# promotions 0.30, retained 0.61 a step (tests/test_gate_catalogue.py holds a fresh run below
# these, tests/test_benchmark_figures.py the run docs/statistics.md quotes).
@dataclasses.dataclass(frozen=True)
class Resolution:
    """What a starting heap moves a rate by: objects a step, or a share of the larger side."""

    objects: float
    share: float

    def margin(self, a: float, b: float) -> float:
        return max(self.objects, self.share * max(abs(a), abs(b)))


PRESSURE_RESOLUTION = Resolution(1.0, 0.002)
PROMOTIONS_RESOLUTION = Resolution(0.5, 0.45)
RETAINED_PER_WINDOW = 300.0
# Bytes kept (the memory in use at two readings: after two listed full collections, else at
# the window's two ends; `rates.bytes_kept`): what the allocator holds in flight at each
# reading, a number of bytes, not a rate: starting heaps moved it by up to 1.5 KiB between
# the closest readings of a pair where the C allocator was read (benchmarks/gate_catalogue.py;
# its resident-set pairs, judged beyond RSS_KIB_PER_WINDOW, by 16.3 KiB here and 68.8 KiB
# on a CI machine), and the phase of the young collections at the window's
# two ends by 15.9 to 25 KiB (benchmarks/user_fixes.py's `server`, whose freeze fix then
# read as keeping more: why the readings after full collections come first, where nothing
# dead is left). It is judged
# beyond KIB_PER_WINDOW between the readings that are closest (80 KiB per 1,000 steps at
# 300 steps: 1 KiB a step is found, where the allocator is read).
KIB_PER_WINDOW = 24.0
# Where a process had not loaded `_ctypes` (a pure-Python program: numpy and jax load it),
# its bytes are its resident set's, which grows only once the allocator has used the free
# memory it held as the steps began: 153 KiB under gcbench's modules read from bytecode,
# 1,267 KiB compiled from source (benchmarks/allocator_free.py: 1 KiB kept a step over
# 300 steps moved the resident set by 240 KiB, and by nothing), said beside the verdict;
# and it grows in steps: glibc extends its heap by 128 KiB beyond what is asked (its
# M_TOP_PAD), so a reading can fall either side of one extension (the catalogue's 1 KiB a
# step read 72 KiB less over 300 steps than the loop keeping nothing, whose heap grew by one
# extension after its first timed step: less memory kept). Judged beyond that too.
RSS_KIB_PER_WINDOW = KIB_PER_WINDOW + 128.0
RSS_BLIND = ("read from the resident set, blind to a leak smaller than the free memory the allocator held as the "
             "steps began; `import _ctypes` before gcbench.measure reads the allocator's own bytes")
# The collector's work (objects its collections examined a step): a heap 100,000 objects
# larger changes how often full collections run and what each one scans, and moved the
# work of the same loop by up to 19.8 % (1,700 against 1,365 a step; benchmarks/
# gate_catalogue.py), and equinox-filter/vit's, whose one or two full collections in 100
# steps leave its rate to the window, by up to 34 % (5,793 against 8,773; benchmarks/
# starting_heaps.py). A freeze that takes 200,000 long-lived objects out of every full
# collection cuts it by over 90 %; a federated client's first round frozen, by 57 %.
GC_WORK_RESOLUTION = Resolution(1.0, 0.40)
# A side with fewer than two full collections a repeat has a period of at least its longest
# stretch without one, but the first full collection after a warm-up does not start the
# period the next ones keep: equinox-filter/vit made one at step 38 of 100 on one machine
# (so a period over 61) and two at 43 and 89 on another (46), with the same heap and
# pressure (DESIGN.md). A bound is trusted to this factor.
CENSORED_SLACK = 1.5
SETTINGS = summary.SETTINGS
VERDICTS = {"median": ("faster", "slower"), "gc_share": ("less GC", "more GC"),
            "full_rate": ("fewer full GCs", "more full GCs"), "mean": ("faster run", "slower run"),
            "peak_rss": ("less memory", "more memory"), "collections": ("fewer collections", "more collections"),
            "pressure": ("fewer allocations", "more allocations"),
            "promotions": ("fewer promotions", "more promotions"), "retained": ("less retained", "more retained"),
            "bytes_kept": ("less memory kept", "more memory kept"), "gc_work": ("less GC work", "more GC work")}
NOT_JUDGED = "not judged"
# Counts whose difference the phase of the collector's schedule explains: the heap a loop
# starts from (a few objects more or less on another machine) sets where the schedule
# starts, not how often it runs (docs/statistics.md, "What travels between machines")
SAME_PHASE = "same (phase)"
# A full collection that falls elsewhere moves what the young counter sees by up to this
# many young thresholds (objects it freed that the counter cannot count below zero;
# measured: 1,402 = 2 x 701 in one step of nnx/vit, benchmarks/starting_heaps.py)
PHASE_YOUNG_PER_FULL = 2
# What load alone moved each timed quantity in A/As on this project's 2-core machine: the
# same cells quiet, and beside one, two and four busy processes and a memory-bandwidth hog
# (benchmarks/load_margins.py, nnx/vit and equinox-partition/vit: the median and the mean
# step by at most x1.46, the GC share in CPU time x0.83-x1.20; in wall time up to x2.73,
# which is why a loaded side's share is read in CPU time). Under load a timed test is
# judged only where its whole interval lies beyond its margin: a change larger than load
# makes. A step's wall time also waits for a CPU at most the share of the time that some
# task waited for one (the CPU pressure p the repeat read): it stretches by at most
# 1 / (1 - p), so the margin of the median and mean step is the larger of the two (a pure
# Python loop beside four busy processes read p = 1.0 and ran 2.5 x longer). The GC share
# in CPU time is judged up to the pressure those A/As read (0.76); beyond, not at all.
LOAD_MARGIN = {"median": 1.5, "mean": 1.5, "gc_share": 1.25}
LOAD_CALIBRATED = {"pressure": 0.80, "others_share": 0.70}  # others' share of the cores: where p is not read
MAX_PRESSURE = 0.95  # a CPU contended nearly all the time: no margin holds
RATIO_METRICS = ("median", "mean", "peak_rss")
RATES = ("pressure", "promotions", "retained", "bytes_kept", "gc_work")  # judged against a resolution (`_test_rate`)
TIMED = ("median", "mean", "gc_share")  # what a loaded machine or another kind of machine changes
NAMES = {"median": "median step", "gc_share": "GC share", "full_rate": "full collections", "mean": "mean step",
         "peak_rss": "peak memory", "collections": "collections", "pressure": "allocations per step",
         "promotions": "promotions per step", "retained": "objects kept per step",
         "bytes_kept": "memory kept per 1,000 steps", "gc_work": "objects examined per step"}
# the order in which a pair's verdicts are said: counts first
SAID_ORDER = ("full_rate", "collections", "gc_work", "pressure", "promotions", "retained", "bytes_kept", "gc_share",
              "median",
              "mean", "peak_rss")


@dataclasses.dataclass
class Test:
    metric: str
    a: float | None
    b: float | None
    effect: float | None  # ratio (median) or difference (gc_share; full_rate: per 1,000 steps)
    ci: tuple[float, float] | None  # interval of the effect at `level`
    p: float | None
    margin: float  # half-width of "the same" around no effect (in the effect's unit; a fraction for ratios)
    note: str = ""
    exact: bool = False  # a fact, not a sample (constant schedules; no GC on either side): not tested
    paired: bool = False
    level: float = 1 - ALPHA
    p_adj: float | None = None
    verdict: str = "inconclusive"
    not_judged: str = ""  # why the machine does not allow this test (a loaded machine, another kind)
    estimate: float | None = None  # the t test's difference, on its own scale (log for the median)
    se: float | None = None
    df: float | None = None  # Satterthwaite's, fractional, two runs apart
    phase: bool = False  # counts that differ by what the schedule's phase makes (SAME_PHASE)
    load_margin: float = 0.0  # under load: judged only beyond this ratio (LOAD_MARGIN)
    load_note: str = ""  # under load: how loaded, said where the test is not judged
    per_repeat: tuple[float, float] | None = None  # a count's mean per repeat, A and B
    ruled: str = ""  # a verdict a rule gave (the full collections' period against the oldest generation)
    traded: str = ""  # a cost this change pays for a gain the row also shows (`mark_trades`): not a failure
    period: str = ""  # the full collections' periods, A -> B, where they were judged (`_period_rule`)

    @property
    def ratio_metric(self) -> bool:
        return self.metric in RATIO_METRICS

    def interval(self, level: float) -> tuple[float, float] | None:
        """The effect's interval at `level`, from the same t test as the p-value."""
        if self.se is None or self.estimate is None:
            return self.ci
        q = 0.0 if self.se == 0 else float(stats.sst().t.ppf(0.5 + level / 2, self.df)) * self.se
        lo, hi = self.estimate - q, self.estimate + q
        return (math.exp(lo), math.exp(hi)) if self.ratio_metric else (lo, hi)

    NOT_WRITTEN: ClassVar[tuple[str, ...]] = ("estimate", "se", "df")  # the test's workings, not its result


def _t_test(a: np.ndarray, b: np.ndarray, paired: bool) -> tuple[float, float, float, float]:
    """p, difference mean(b) - mean(a), its standard error and degrees of freedom: Student's
    pooled test (the spread between processes is the machine's, the same on both sides;
    a pooled estimate keeps its degrees of freedom when a flagged repeat leaves one side
    with two), or the one-sample test of the per-round differences when `paired`."""
    if paired:
        d = b - a
        diff, se, df = float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))), len(d) - 1
    else:
        diff = float(b.mean() - a.mean())
        na, nb = len(a), len(b)
        pooled = ((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / (na + nb - 2)
        se, df = math.sqrt(pooled * (1 / na + 1 / nb)), na + nb - 2
    if se == 0:  # no spread at all: the difference is exact
        return (1.0 if diff == 0 else 0.0), diff, 0.0, df
    return float(2 * stats.sst().t.sf(abs(diff / se), df)), diff, se, df


def _tested(metric, a, b, effect, xa, xb, paired, margin, alpha, note: str = "", run_sd: float = 0.0,
            run_df: float = math.inf) -> Test:
    """The t test of B against A; with `run_sd` (two runs apart), the difference's standard
    error also carries each run's own level: a shift shared by every cell of a run, which
    repeats inside one run cannot see (docs/statistics.md, "Two runs apart"). `run_df`: the degrees of
    freedom of `run_sd`'s own estimate, which the interval carries too."""
    p, diff, se, df = _t_test(xa, xb, paired)
    if run_sd > 0:
        # two variances, each estimated: Satterthwaite's degrees of freedom for their sum (the
        # repeats' part alone made the interval cover 98.7 %, not 95; the run term's own few
        # runs make it wider again)
        sampled, runs = se * se, 2 * run_sd * run_sd
        se = math.sqrt(sampled + runs)
        parts = (sampled ** 2 / df if sampled > 0 else 0.0) + (runs ** 2 / run_df if math.isfinite(run_df) else 0.0)
        df = se ** 4 / parts if parts > 0 else 10 ** 6
        p = float(2 * stats.sst().t.sf(abs(diff / se), df))
        note = (
            note + "; " if note else ""
        ) + f"two runs apart: widened by their own level ({100 * run_sd:.0f} % per run)"
    t = Test(metric, a, b, effect, None, p, margin, note, paired=paired, estimate=diff, se=se, df=df)
    t.ci = t.interval(1 - alpha)
    return t


def runs_apart(va: RepeatValues, vb: RepeatValues) -> bool | None:
    """Whether two cells were measured in different invocations (True), in the same one
    (False: repeats of both share a run id), or it cannot be told (None: a side records none).
    Where run ids cannot tell (a user's loops, each repeat its own process), sides whose
    repeats interleave in time (each side's first repeat started before the other's last)
    were measured over one period, as rounds of one run are: not apart. The run term is a
    level shared by a run's repeats over its moment (measured between runs 20 minutes to
    days apart), which interleaved repeats share too."""
    rounds_a, rounds_b = va.rounds or [], vb.rounds or []
    if not _known(rounds_a) or not _known(rounds_b):
        return False if _interleaved(va.started or [], vb.started or []) else None
    return not ({r[0] for r in rounds_a} & {r[0] for r in rounds_b})


def _interleaved(sa: list, sb: list) -> bool:
    """Both sides' start times known, each side's first repeat started before the other's last."""
    return _known(sa) and _known(sb) and min(sa) < max(sb) and min(sb) < max(sa)


def _known(values: list) -> bool:
    """Every repeat recorded it (and there is at least one)."""
    return bool(values) and None not in values


def _too_few(va: RepeatValues, vb: RepeatValues, paired: bool) -> str | None:
    if paired:
        return None
    if len(va.medians) < stats.MIN_PROCESSES or len(vb.medians) < stats.MIN_PROCESSES:
        return (f"needs {stats.MIN_PROCESSES} or more repeats on each side (A: {len(va.medians)}, "
                f"B: {len(vb.medians)}); no verdict from fewer processes")
    return None


def common_rounds(va: RepeatValues, vb: RepeatValues) -> list[tuple[int, int]]:
    """(index in A, index in B) of the rounds both cells used in one invocation (empty
    when either does not record its invocation, or they ran in different ones)."""
    ra, rb = va.rounds or [], vb.rounds or []
    if not ra or not rb or None in ra or None in rb or len({r[0] for r in ra + rb}) != 1:
        return []
    where = {r: i for i, r in enumerate(rb)}
    return [(i, where[r]) for i, r in enumerate(ra) if r in where]


def paired_rounds(va: RepeatValues, vb: RepeatValues) -> bool:
    """Whether two cells ran in the same invocation with at least PAIRED_MIN_ROUNDS rounds
    that both used: then their tests are paired by round, on those rounds."""
    return len(common_rounds(va, vb)) >= PAIRED_MIN_ROUNDS


def _sides(va: RepeatValues, vb: RepeatValues, key: str, paired: bool, f=np.asarray) -> tuple[np.ndarray, np.ndarray]:
    """A's and B's per-repeat `key`, on the common rounds when paired."""
    a, b = f(va.per_repeat(key)), f(vb.per_repeat(key))
    if paired:
        ia, ib = zip(*common_rounds(va, vb), strict=True)
        return a[list(ia)], b[list(ib)]
    return a, b


def untimed(va: RepeatValues, vb: RepeatValues) -> tuple[str, str] | None:
    """Why times of A and B cannot be compared: ("load", words) where either side's repeats
    ran on a loaded machine, ("machine", words) where the sides ran on different kinds of
    machine; None where they can."""
    if va.machine and vb.machine and va.machine != vb.machine:
        return "machine", f"other machine: A ran on {va.node}, B on {vb.node}"
    loaded = [f"{side} {v.load}" for side, v in (("A", va), ("B", vb)) if v.loaded]
    return ("load", "loaded machine: " + "; ".join(loaded)) if loaded else None


def _not_judged(metric: str, a, b, effect, margin: float, why: str) -> Test:
    return Test(metric, a, b, effect, None, None, margin, why, not_judged=why, verdict=NOT_JUDGED)


def _loaded_most(va: RepeatValues, vb: RepeatValues, key: str) -> float | None:
    """The larger `key` (load_pressure, load_others) of the two sides' loaded repeats; None
    where a loaded side did not read it."""
    values: list[float] = []
    for v in (va, vb):
        if v.loaded:
            if v.per_repeat(key) is None:
                return None
            values.append(float(v.per_repeat(key)))
    return max(values) if values else None


def load_margin(metric: str, va: RepeatValues, vb: RepeatValues) -> tuple[float, str]:
    """The ratio beyond which a timed test of two sides, one or both loaded, is judged
    (LOAD_MARGIN), or (0, why it cannot be judged at all)."""
    pressure = _loaded_most(va, vb, "load_pressure")
    if pressure is None:  # no pressure reading: the others' share of the cores, as measured
        others = _loaded_most(va, vb, "load_others")
        if others is None or others > LOAD_CALIBRATED["others_share"]:
            return 0.0, "more load than the A/As behind the load margin measured, or none read over the steps"
        return LOAD_MARGIN[metric], ""
    if metric == "gc_share":
        if pressure > LOAD_CALIBRATED["pressure"]:
            return 0.0, (f"CPU pressure {pressure:.2f}, beyond the {LOAD_CALIBRATED['pressure']:.2f} of the A/As "
                         "that measured what load alone moves the GC share")
        return LOAD_MARGIN[metric], ""
    if pressure >= MAX_PRESSURE:
        return 0.0, f"CPU pressure {pressure:.2f}: a CPU was contended nearly all the time"
    return max(LOAD_MARGIN[metric], 1 / (1 - pressure)), ""


def _under_load(metric: str, why_not: tuple[str, str] | None, va: RepeatValues,
                vb: RepeatValues) -> tuple[tuple[str, str] | None, float]:
    """(what keeps the test from being judged, the load margin it is judged beyond): a loaded
    side is judged beyond `load_margin`, or not at all."""
    if not why_not or why_not[0] != "load" or metric not in LOAD_MARGIN:
        return why_not, 0.0
    margin, why = load_margin(metric, va, vb)
    if not margin:
        return ("load", f"{why_not[1]}; {why}"), 0.0
    return None, margin


def _test_ratio(metric: str, key: str, va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float,
                run_term: tuple[float, float] | None = None) -> Test:
    """B's per-repeat `key` against A's, as a ratio of geometric means: the t test of
    their logarithms (paired by round where both ran in the same rounds); two runs apart,
    widened by the level of each run (RUN_SD) where time is compared; not judged where
    the machine does not allow a time to be compared (`untimed`), except a change beyond
    what load alone moves (LOAD_MARGIN) on a loaded machine."""
    a, b = np.log(va.per_repeat(key)), np.log(vb.per_repeat(key))
    ga, gb = float(np.exp(a.mean())), float(np.exp(b.mean()))
    untimed_why = untimed(va, vb) if metric in TIMED else None
    why_not, load_margin = _under_load(metric, untimed_why, va, vb)
    if why_not:
        return _not_judged(metric, ga, gb, gb / ga, min_effect, why_not[1])
    paired = paired_rounds(va, vb)
    why = _too_few(va, vb, paired)
    if why:
        def values(v):
            return ", ".join(wording.fmt(x) for x in v.per_repeat(key))
        if load_margin:
            return _not_judged(metric, ga, gb, gb / ga, min_effect, f"{untimed_why[1]}; {why}")  # type: ignore[index]
        return Test(metric, ga, gb, gb / ga, None, None, min_effect, f"{why}: A {values(va)}, B {values(vb)}")
    xa, xb = _sides(va, vb, key, paired, lambda v: np.log(v))
    apart = va.apart or vb.apart
    run_sd, run_df = run_term or (RUN_SD, RUN_DF)
    timed_apart = apart and metric in ("median", "mean")
    t = _tested(metric, ga, gb, gb / ga, xa, xb, paired, min_effect, alpha,
                run_sd=run_sd if timed_apart else 0.0, run_df=run_df)
    if load_margin:
        t.load_margin, t.load_note = load_margin, untimed_why[1]  # type: ignore[index]
    return t


def test_median(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float,
                run_term: tuple[float, float] | None = None) -> Test:
    """The typical step: per-repeat medians. `run_term`: the run term's sd and degrees of
    freedom two runs apart (default RUN_SD, RUN_DF)."""
    return _test_ratio("median", "medians", va, vb, min_effect, alpha, run_term)


def test_mean(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test:
    """The time a run takes: per-repeat mean steps (what GC spikes cost)."""
    return _test_ratio("mean", "means", va, vb, min_effect, alpha)


def test_memory(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test | None:
    """Peak resident set size over the timed steps, where both sides sampled it."""
    if not va.peak_rss or not vb.peak_rss:
        return None
    return _test_ratio("peak_rss", "peak_rss", va, vb, min_effect, alpha)


def _share_under_load(va: RepeatValues, vb: RepeatValues, untimed_why: tuple[str, str] | None
                      ) -> tuple[tuple[str, str] | None, float, str, str]:
    """How the GC share is read: on a loaded machine in CPU time (where both sides recorded
    it), judged beyond the load's margin; else as measured, or not at all. (why not judged,
    the load's margin, the values' key, the note)."""
    if not untimed_why or untimed_why[0] != "load":
        return untimed_why, 0.0, "shares", ""
    if not (va.cpu_shares and vb.cpu_shares):
        return ("load", f"{untimed_why[1]}; a side did not record the collector's CPU time"), 0.0, "shares", ""
    why_not, load_margin = _under_load("gc_share", untimed_why, va, vb)
    return why_not, load_margin, "cpu_shares", f"in CPU time ({untimed_why[1]})"


def test_gc_share(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test:
    """The collector's share of the run's time. Where a side ran on a loaded machine, the
    share in CPU time (pauses' CPU time over the steps'), which load moves less than the
    wall-time share, judged only beyond what load alone moved it (LOAD_MARGIN); otherwise,
    and across kinds of machine, not judged."""
    untimed_why = untimed(va, vb)
    why_not, load_margin, key, note = _share_under_load(va, vb, untimed_why)
    a, b = np.asarray(va.per_repeat(key)), np.asarray(vb.per_repeat(key))
    ma, mb = float(a.mean()), float(b.mean())
    margin = max(min_effect * max(ma, mb), GC_SHARE_FLOOR)
    if why_not:
        return _not_judged("gc_share", ma, mb, mb - ma, margin, why_not[1])
    if not a.any() and not b.any():
        return Test("gc_share", 0.0, 0.0, 0.0, (0.0, 0.0), None, margin, "no GC time on either side", True)
    paired = paired_rounds(va, vb)
    why = _too_few(va, vb, paired)
    if why:
        if load_margin:
            return _not_judged("gc_share", ma, mb, mb - ma, margin, f"{untimed_why[1]}; {why}")  # type: ignore[index]
        return Test("gc_share", ma, mb, mb - ma, None, None, margin, f"{note}; {why}" if note else why)
    xa, xb = _sides(va, vb, key, paired)
    t = _tested("gc_share", ma, mb, mb - ma, xa, xb, paired, margin, alpha, note)
    if load_margin:
        t.load_margin, t.load_note = load_margin, untimed_why[1]  # type: ignore[index]
    return t


def within_phase(sa: stats.Schedule, sb: stats.Schedule, allowance: tuple[list[int], list[int]] | None = None,
                 explicit: tuple[list[int], list[int]] | None = None) -> bool:
    """Whether every repeat of both schedules (`counts` in `steps`) fits one rate: a schedule
    of period P over N steps holds floor(N/P) or ceil(N/P) events in a window, whichever
    phase it starts in, so repeats of one program started from different heaps give counts
    c with c - 1 < N/P < c + 1. `allowance` widens that by what else a phase moves, per
    repeat of each side. The collections a loop asks for (`explicit`, per repeat of each
    side: `gc.collect()` calls) have no phase: they must be the same in every repeat, and
    only the collector's own are fitted. True when some rate fits every repeat of A and B."""
    lo, hi = 0.0, math.inf
    extra = allowance or ([0] * len(sa.counts), [0] * len(sb.counts))
    asked = explicit or ([0] * len(sa.counts), [0] * len(sb.counts))
    if len(set(asked[0]) | set(asked[1])) > 1:
        return False
    for sched, more, own in ((sa, extra[0], asked[0]), (sb, extra[1], asked[1])):
        for c, n, a, e in zip(sched.counts, sched.steps, more, own, strict=True):
            if n <= 0:
                return False
            lo, hi = max(lo, (c - e - 1 - a) / n), min(hi, (c - e + 1 + a) / n)
    return lo < hi


def _differ_within_phase(sa: stats.Schedule, sb: stats.Schedule, allowance, explicit) -> bool:
    """Schedules that differ (in counts, or a side not fixed) only as much as their phase moves."""
    return (sa.counts != sb.counts or not (sa.constant and sb.constant)) and within_phase(sa, sb, allowance, explicit)


def _test_count(metric: str, sa: stats.Schedule, sb: stats.Schedule, va: RepeatValues, vb: RepeatValues, key: str,
                note: str, min_effect: float, alpha: float, allowance: tuple[list[int], list[int]] | None = None,
                explicit: tuple[list[int], list[int]] | None = None, phase: bool = True) -> Test:
    """A count, A against B. `same (phase)` when one rate fits every repeat of both sides
    (`within_phase`): the difference is what the schedule's phase makes, which the heap a
    loop starts from moves. Otherwise exact when each side's schedule (`sa`, `sb`) has the
    same count per step in every repeat; else a t test of the per-repeat counts per 1,000
    steps (`key` of the repeat values). Counts do not depend on load: always judged."""
    ra, rb = np.asarray(va.per_repeat(key)), np.asarray(vb.per_repeat(key))
    ma, mb = float(ra.mean()), float(rb.mean())
    margin = min_effect * max(ma, mb)
    per_repeat = (float(np.mean(sa.counts)), float(np.mean(sb.counts)))
    # a side whose collector was off collected only when asked: its counts have no phase
    scheduled = phase and not (va.collector_off or vb.collector_off)
    if scheduled and _differ_within_phase(sa, sb, allowance, explicit):
        return Test(metric, ma, mb, mb - ma, (mb - ma, mb - ma), None, margin,
                    f"{note}; within what the schedule's phase moves (the heap a loop starts from sets it)", True,
                    phase=True, per_repeat=per_repeat)
    if sa.constant and sb.constant:
        return Test(metric, ma, mb, mb - ma, (mb - ma, mb - ma), None, margin, note, True, per_repeat=per_repeat)
    paired = paired_rounds(va, vb)
    why = _too_few(va, vb, paired)
    if why:
        return Test(metric, ma, mb, mb - ma, None, None, margin, f"{note}; {why}")
    xa, xb = _sides(va, vb, key, paired)
    return _tested(metric, ma, mb, mb - ma, xa, xb, paired, margin, alpha, note)


def young_alike(va: RepeatValues, vb: RepeatValues) -> bool:
    """Whether the two sides' collections of every generation are within what a phase moves
    (one, and two per full collection, per repeat): then a difference of their full
    collections can be the phase; otherwise the loop collects differently, and its full
    collections differ with it."""
    allowance = tuple([PHASE_YOUNG_PER_FULL * f for f in v.schedule.counts] for v in (va, vb))
    return within_phase(va.all_collections, vb.all_collections, allowance,  # type: ignore[arg-type]
                        (va.explicit_all, vb.explicit_all))


def test_full(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test:
    """Full collections: judged on their period, not on how many fell in the window. A
    starting heap moves where the schedule starts (a window then holds one more or one
    fewer), and where the quarter rule decides, how long the period is, in proportion to
    the oldest generation: B has more full collections only where its period is shorter
    than A's by more than two intervals between collections of generation 1 (the grain a
    full collection waits on, which rounds each side's period) and by more than the ratio
    of their oldest generations
    explains (`_period_rule`), where each side has two or more repeats (one cannot show its
    schedule is the program's). A side whose repeats hold fewer than two has a period of at
    least its longest stretch without one, known only within CENSORED_SLACK. Where neither
    side has a period to read, where the collector was off on a side, the periods are hidden
    by the loop's gc.collect() calls between steps, or the sides make different numbers of
    those calls, the window counts are compared (`_test_count`, within the phase); what
    moved them is then judged by the rates behind them (promotions, objects kept)."""
    sa, sb = va.schedule, vb.schedule
    note = f"{wording.format_schedule(sa)}, against {wording.format_schedule(sb)}"
    ea, eb = va.explicit, vb.explicit
    if ea or eb:  # gc.collect() calls, told apart from the collector's own
        def full(e):
            return wording.fmt(e.per_repeat[-1]) if e else "0"
        note += f"; explicit (gc.collect()) full collections per repeat {full(ea)} against {full(eb)}"
    if not _periods_apply(va, vb):
        return _test_count("full_rate", sa, sb, va, vb, "full_per_1000", note, min_effect, alpha,
                           explicit=(va.explicit_full, vb.explicit_full), phase=young_alike(va, vb))
    ma, mb = float(np.mean(va.full_per_1000)), float(np.mean(vb.full_per_1000))
    per_repeat = (float(np.mean(sa.counts)), float(np.mean(sb.counts)))
    ruled, words, period = _period_rule(va, vb)
    same = "same" if sa.counts == sb.counts and sa.constant and sb.constant else SAME_PHASE
    return Test("full_rate", ma, mb, mb - ma, (mb - ma, mb - ma), None, min_effect * max(ma, mb),
                f"{note}; {words}", True, phase=not ruled and same == SAME_PHASE, per_repeat=per_repeat,
                ruled=ruled or same, period=period)


def _periods_read(va: RepeatValues, vb: RepeatValues) -> bool:
    """Both sides' collectors on, two or more repeats a side, each with its period read, and
    the loop's own collections between steps as many on both sides."""
    periods = va.periods + vb.periods
    return not (va.collector_off or vb.collector_off or min(len(va.periods), len(vb.periods)) < 2
                or None in periods or len(set(va.explicit_full) | set(vb.explicit_full)) > 1)


def _periods_apply(va: RepeatValues, vb: RepeatValues) -> bool:
    """Whether the full collections' periods decide (`test_full`): the collector on, two or
    more repeats a side (one cannot show its schedule is the program's), the loop's own
    collections between steps told apart and as many on both sides, a period read on at
    least one side, and each side's repeats agreeing on theirs within the grain (repeats
    that disagree are samples: their counts are tested)."""
    if not _periods_read(va, vb):
        return False
    grain = max(va.older_interval + vb.older_interval, default=0.0)
    sides = [_side_period(v) for v in (va, vb)]
    return any(known for _, _, known, _ in sides) and all(hi - lo <= grain for lo, hi, known, _ in sides if known)


def _side_period(v: RepeatValues) -> tuple[float, float, bool, float | None]:
    """(shortest, longest, known, oldest generation): a side's period over its repeats; where
    a repeat held fewer than two full collections, the side's period is at least the longest
    stretch without one (shortest = longest = that bound, known False)."""
    known = [p.period for p in v.periods if p is not None and p.period is not None]
    heaps = [p.heap for p in v.periods if p is not None and p.heap is not None]
    heap = float(np.median(heaps)) if heaps else None
    if len(known) == len(v.periods):
        return min(known), max(known), True, heap
    bound = float(max(p.at_least for p in v.periods if p is not None))
    return bound, bound, False, heap


def _period_words(lo: float, hi: float, known: bool) -> str:
    """A side's period in steps: `120`, `118-124`, or `at least 300` where no two full
    collections bound it."""
    if not known:
        return f"at least {wording.fmt(lo)}"
    return f"{wording.fmt(lo)}" if lo == hi else f"{wording.fmt(lo)}-{wording.fmt(hi)}"


def _period_rule(va: RepeatValues, vb: RepeatValues) -> tuple[str, str, str]:
    """('more full GCs' | 'fewer full GCs' | '', the periods in words, the periods alone). B's period is shorter
    than A's when its longest, plus two intervals between collections of generation 1 (the
    larger of the two sides': each period is read to within one), is below A's shortest (or
    A's bound) scaled by the ratio of
    the oldest generations where B's is the smaller (a full collection waits for a quarter
    of it: a smaller heap alone makes the period shorter in proportion)."""
    lo_a, hi_a, known_a, heap_a = _side_period(va)
    lo_b, hi_b, known_b, heap_b = _side_period(vb)
    grain = max(va.older_interval + vb.older_interval, default=0.0)
    ratio = heap_b / heap_a if heap_a and heap_b else 1.0
    heaps = f" (oldest generation {wording.fmt(heap_a)} -> {wording.fmt(heap_b)} objects)" if heap_a and heap_b else ""
    period = (f"a full collection every {_period_words(lo_a, hi_a, known_a)} -> "
              f"{_period_words(lo_b, hi_b, known_b)} steps")
    words = f"{period}{heaps}, grain {wording.fmt(grain)} steps"
    bound_a = lo_a if known_a else lo_a / CENSORED_SLACK
    bound_b = lo_b if known_b else lo_b / CENSORED_SLACK
    # each side's period is read to within one grain (where its phase rounds it), so two
    # periods differ only beyond two grains
    if known_b and hi_b + 2 * grain < bound_a * min(1.0, ratio):
        return "more full GCs", words, period
    if known_a and hi_a + 2 * grain < bound_b * min(1.0, 1 / ratio):
        return "fewer full GCs", words, period
    return "", words + ("; the same period" if known_a and known_b else ""), period


def test_collections(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float,
                     full_alike: bool = False) -> Test:
    """Collections of every generation, those between steps too, per 1,000 steps
    (`_test_count`). With `full_alike` (the full collections are the same, or within their
    phase), each full collection may also have moved the young counter by
    PHASE_YOUNG_PER_FULL collections, wherever it fell."""
    sa, sb = va.all_collections, vb.all_collections
    note = (f"{wording.format_schedule(sa, 'collections')} ({'/'.join(map(str, va.per_generation))} by generation), "
            f"against {wording.format_schedule(sb, 'collections')} "
            f"({'/'.join(map(str, vb.per_generation))})")
    allowance = tuple([PHASE_YOUNG_PER_FULL * f if full_alike else 0 for f in v.schedule.counts]
                      for v in (va, vb))
    return _test_count("collections", sa, sb, va, vb, "collections_per_1000", note, min_effect, alpha,
                       allowance, (va.explicit_all, vb.explicit_all))  # type: ignore[arg-type]


def test_pressure(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test | None:
    """The tracked-allocation pressure per step (Python: net new tracked objects; Julia:
    bytes allocated), per repeat the mean over the timed steps after the first: what a
    different starting heap does not move (`summary.pressure_per_step`). Judged against its
    measured resolution (`PRESSURE_RESOLUTION`) by `_test_rate`. Where the collector was off on a
    side, tracked objects are not judged: nothing resets the young count, and what it reads
    is where the count stood, not the loop's allocations. None where a side did not record it."""
    a, b = va.pressure, vb.pressure
    if not a or not b or va.pressure_unit != vb.pressure_unit:
        return None
    objects = va.pressure_unit == "tracked objects"
    if objects and (va.any_collector_off or vb.any_collector_off):
        ma, mb = float(np.mean(a)), float(np.mean(b))
        return Test("pressure", ma, mb, mb - ma, None, None, 0.0,
                    f"{wording.fmt(ma)} -> {wording.fmt(mb)} tracked objects a step; not judged: the collector was off "
                    "on a side (nothing resets the young count it is read from)")
    return _test_rate("pressure", va, vb, "pressure", f"{va.pressure_unit} a step",
                      PRESSURE_RESOLUTION if objects else Resolution(0.0, PRESSURE_RESOLUTION.share), alpha)


def test_promotions(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test | None:
    """Objects that survive into the oldest generation a step (`rates.promotions_per_step`):
    what brings full collections on, whatever heap the loop started from. None where a
    side did not record it."""
    return _test_rate("promotions", va, vb, "promotions", "promoted objects a step", PROMOTIONS_RESOLUTION, alpha)


def test_retained(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test | None:
    """Tracked objects the loop keeps a step (`rates.growth_per_step`): a leak. None where a
    side did not record it."""
    steps = min(va.schedule.steps + vb.schedule.steps, default=0)
    resolution = Resolution(RETAINED_PER_WINDOW / steps if steps else math.inf, 0.0)
    return _test_rate("retained", va, vb, "retained", "tracked objects kept a step", resolution, alpha)


def test_gc_work(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test | None:
    """The collector's work a step as a count (`rates.examined_per_step`): what a freeze or
    a smaller heap saves, which no count of collections sees. None where a side did not
    record what its collections examined."""
    return _test_rate("gc_work", va, vb, "gc_work", "objects examined a step", GC_WORK_RESOLUTION, alpha)


def test_bytes_kept(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> Test | None:
    """KiB the loop keeps per 1,000 steps, tracked or not (`rates.bytes_kept`), judged
    beyond KIB_PER_WINDOW over the shortest span a repeat's two readings were apart (the
    window, or the steps between two listed full collections). None where a side did not
    read it."""
    steps = min((va.bytes_span or []) + (vb.bytes_span or []), default=0)
    rss = va.bytes_from_rss or vb.bytes_from_rss
    kib = RSS_KIB_PER_WINDOW if rss else KIB_PER_WINDOW
    resolution = Resolution(kib * 1000 / steps if steps else math.inf, 0.0)
    test = _test_rate("bytes_kept", va, vb, "bytes_kept", "KiB kept per 1,000 steps", resolution, alpha)
    if test is not None and rss:
        test.note += f"; {RSS_BLIND}"
    return test


def _test_rate(metric: str, va: RepeatValues, vb: RepeatValues, key: str, unit: str,
               resolution: Resolution, alpha: float) -> Test | None:
    """A rate a step, B against A, against its resolution (objects a step, fraction): exact
    where each side gives the same value in every repeat, else the t test of the per-repeat
    values (paired by round where both ran in the same rounds); a change only beyond the
    resolution. A count: always judged. None where a side did not record it."""
    a, b = va.per_repeat(key), vb.per_repeat(key)
    if not a or not b:
        return None
    xa, xb = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ma, mb = float(xa.mean()), float(xb.mean())
    margin = resolution.margin(ma, mb)
    note = f"{wording.fmt(ma)} -> {wording.fmt(mb)} {unit}"
    if len(set(a)) == 1 and len(set(b)) == 1:  # the same in every repeat: a fact of each side
        return Test(metric, ma, mb, mb - ma, (mb - ma, mb - ma), None, margin, note, True)
    paired = paired_rounds(va, vb)
    why = _too_few(va, vb, paired)
    if why:
        return Test(metric, ma, mb, mb - ma, None, None, margin, f"{note}; {why}")
    xa, xb = _sides(va, vb, key, paired)
    return _tested(metric, ma, mb, mb - ma, xa, xb, paired, margin, alpha, note)


def cell_tests(va: RepeatValues, vb: RepeatValues, min_effect: float, alpha: float) -> list[Test]:
    """The repeat-level tests of cell A against cell B (their `repeat_values`): median step,
    GC share, full collections and mean step, in that order, then collections of every
    generation, then peak memory and the allocations per step where both sides recorded
    them. (`SAID_ORDER` is the order they are said in: counts first.)"""
    full = test_full(va, vb, min_effect, alpha)
    alike = full.phase or (full.exact and full.effect == 0)
    tests = [test_median(va, vb, min_effect, alpha), test_gc_share(va, vb, min_effect, alpha), full,
             test_mean(va, vb, min_effect, alpha), test_collections(va, vb, min_effect, alpha, alike)]
    extra = [test_memory(va, vb, min_effect, alpha), test_pressure(va, vb, min_effect, alpha),
             test_promotions(va, vb, min_effect, alpha), test_retained(va, vb, min_effect, alpha),
             test_bytes_kept(va, vb, min_effect, alpha), test_gc_work(va, vb, min_effect, alpha)]
    return tests + [t for t in extra if t is not None]


def benjamini_hochberg(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (same order as given): a test rejects at false
    discovery rate q when its adjusted p-value is at most q (scipy's
    `false_discovery_control`, method "bh")."""
    if not pvalues:
        return []
    from scipy import stats as sst

    return [float(p) for p in sst.false_discovery_control(np.asarray(pvalues, np.float64), method="bh")]


def _correct(tests: list[Test], alpha: float) -> None:
    """The tests with a p-value: their p corrected together (Benjamini-Hochberg), and their
    intervals at the false-coverage-rate level the rejections give."""
    testable = [t for t in tests if t.p is not None]
    adjusted = benjamini_hochberg([p for t in testable if (p := t.p) is not None])
    m = len(testable)
    rejected = sum(p <= alpha for p in adjusted)
    level = 1 - max(rejected, 1) * alpha / m if m else 1 - alpha
    for t, p in zip(testable, adjusted, strict=True):
        t.p_adj, t.level = p, level
        t.ci = t.interval(level)


def conclude(tests: list[Test], alpha: float) -> None:
    """Correct the tests that have a p-value together (Benjamini-Hochberg), set every
    interval to the false-coverage-rate level that goes with the rejections, and give
    every test its verdict, read off that interval."""
    _correct(tests, alpha)
    for t in tests:
        t.verdict = decide(t, alpha)
        if t.verdict == NOT_JUDGED and t.load_margin and not t.not_judged:
            t.not_judged = (f"{t.load_note}: within what load alone moves it (x{t.load_margin:.2g}), so not "
                            "judged")


def _beyond(t: Test, value: float) -> bool:
    if t.ratio_metric:
        return value in (0, math.inf) or abs(math.log(value)) >= math.log1p(t.margin)
    return abs(value) >= t.margin if t.margin > 0 else value != 0


def _within(t: Test, ci) -> bool:
    if ci is None:
        return False
    if t.ratio_metric:
        return ci[0] >= 1 / (1 + t.margin) and ci[1] <= 1 + t.margin
    return -t.margin <= ci[0] and ci[1] <= t.margin


def beyond_load(t: Test) -> bool:
    """Whether a test under load has its whole interval beyond what load alone moved it."""
    if t.ci is None or t.a is None:
        return False
    m = t.load_margin
    if t.ratio_metric:
        return t.ci[0] > m or t.ci[1] < 1 / m
    return t.ci[0] > t.a * (m - 1) or t.ci[1] < t.a * (1 / m - 1)


def decide(t: Test, alpha: float) -> str:
    """A test's verdict: not judged, ruled (a rule said it), the change, `same`, or
    `inconclusive`; on a loaded machine, a change larger than load makes or none judged."""
    if t.not_judged:
        return NOT_JUDGED
    if t.ruled:
        return t.ruled
    changed = _changed_word(t)
    significant = t.p_adj is not None and t.p_adj <= alpha
    if t.load_margin:
        return changed if significant and beyond_load(t) else NOT_JUDGED
    if t.exact:
        return _decide_exact(t, changed)
    if t.p is None:
        return "inconclusive"
    return _decide_tested(t, changed, significant)


def _changed_word(t: Test) -> str:
    """What the test's metric calls its change in the direction measured ("more full
    collections", "slower")."""
    lower, higher = VERDICTS[t.metric]
    up = t.effect is not None and (t.effect > 1 if t.ratio_metric else t.effect > 0)
    return higher if up else lower


def _decide_tested(t: Test, changed: str, significant: bool) -> str:
    """A tested change: the change where it is significant and beyond the minimum effect,
    `same` where its interval lies within it, else `inconclusive`."""
    if significant and t.effect is not None and _beyond(t, t.effect):
        return changed
    return "same" if _within(t, t.ci) else "inconclusive"


def _decide_exact(t: Test, changed: str) -> str:
    """An exact difference (counts of fixed schedules): the change, `same`, or `same (phase)`."""
    if t.phase:
        return SAME_PHASE
    if t.metric in ("full_rate", "collections"):
        return "same" if t.effect == 0 else changed
    if t.metric in RATES:
        return changed if t.effect is not None and _beyond(t, t.effect) else "same"
    return "same"


def _no_schedule() -> stats.Schedule:
    return stats.count_schedule([], [])


@dataclasses.dataclass
class RepeatValues:
    """What compare tests, per repeat of one cell (`repeat_values`): times over the repeats
    used (flagged ones left out), counts over every ok repeat. Every field has a default, so
    that a simulation gives only what its test reads (`RepeatValues(medians=[...])`)."""

    medians: list[float] = dataclasses.field(default_factory=list)  # median step per repeat, ms
    means: list[float] = dataclasses.field(default_factory=list)  # mean iteration per repeat, ms
    shares: list[float] = dataclasses.field(default_factory=list)  # GC share of the loop's time per repeat
    cpu_shares: list[float] | None = None  # GC share of CPU time per repeat, where every repeat recorded it
    peak_rss: list[float] | None = None
    schedule: stats.Schedule = dataclasses.field(default_factory=_no_schedule)  # the full collections
    full_per_1000: list[float] = dataclasses.field(default_factory=list)
    full: int = 0
    steps: int = 0
    all_collections: stats.Schedule = dataclasses.field(default_factory=_no_schedule)  # collections of every generation
    collections_per_1000: list[float] = dataclasses.field(default_factory=list)
    per_generation: list[int] = dataclasses.field(default_factory=list)
    pressure: list[float] | None = None  # allocations a step per repeat, where every repeat counted them in one unit
    pressure_unit: str | None = None
    explicit: summary.Explicit | None = None  # the loop's own gc.collect() calls
    explicit_full: list[int] = dataclasses.field(default_factory=list)  # per repeat
    explicit_all: list[int] = dataclasses.field(default_factory=list)  # per repeat
    collector_off: bool = False  # every repeat ran with the collector off
    any_collector_off: bool = False  # some repeat ran with it off (a policy, or the loop's gc.disable())
    promotions: list[float] | None = None  # promoted objects a step, per repeat, where every repeat recorded them
    retained: list[float] | None = None  # tracked objects kept a step, per repeat, where every repeat read them
    bytes_kept: list[float] | None = None  # KiB kept per 1,000 steps, where every repeat read it
    bytes_span: list[int] | None = None  # the steps between the two readings each of those comes from
    bytes_from_rss: bool = False  # some repeat read them from its resident set (`rates.bytes_kept_reading`)
    gc_work: list[float] | None = None  # objects examined a step, where every repeat recorded them
    periods: list[Any] = dataclasses.field(default_factory=list)  # rates.FullPeriod per repeat
    older_interval: list[float] = dataclasses.field(default_factory=list)  # steps per collection of gen 1 (1: none)
    loaded: bool = False  # the repeats the times rest on ran loaded
    load_pressure: float | None = None
    load_others: float | None = None
    load: str = ""
    machine: str | None = None  # the kind of machine the first repeat ran on
    node: str | None = None
    # per repeat used: (run id, repeat number), None where the run is not recorded; and when it
    # started (seconds since the epoch), None where unknown
    rounds: list[Any] = dataclasses.field(default_factory=list)
    started: list[Any] = dataclasses.field(default_factory=list)
    repeats: int = 0  # used
    flagged: int = 0
    apart: bool = False  # two runs apart (set by `compare_cells`)

    def per_repeat(self, key: str) -> Any:
        """The per-repeat values a test reads by name (`medians`, `shares`, `full_per_1000`, ...)."""
        return getattr(self, key)


def repeat_values(docs: list[ResultDoc]) -> RepeatValues:
    """What compare tests, from the ok repeats of one cell (flagged repeats left out of the
    times; counts over every ok repeat: a schedule is exact)."""
    ok = results.ok(docs)
    used, flags = summary.used_repeats(ok)
    return RepeatValues(**_time_values(used), **_count_values(ok), **_pressure_values(ok), **_explicit_values(ok),
                        **_rate_values(ok),
                        **_load_values(used), **_machine_values(ok),
                        rounds=[(results.run_id(d), d.repeat) if results.run_id(d) else None for d in used],
                        started=[results.started(d) for d in used], repeats=len(used),
                        flagged=sum(1 for f in flags.values() if f))


class _Times(TypedDict):
    """`RepeatValues`' times, per repeat used."""

    medians: list[float]
    means: list[float]
    shares: list[float]
    cpu_shares: list[float] | None
    peak_rss: list[float] | None


class _Counts(TypedDict):
    """Its counts: the full collections' schedule and every generation's collections."""

    schedule: stats.Schedule
    full_per_1000: list[float]
    full: int
    steps: int
    all_collections: stats.Schedule
    collections_per_1000: list[float]
    per_generation: list[int]


class _Pressure(TypedDict):
    pressure: list[float] | None
    pressure_unit: str | None


class _Rates(TypedDict):
    """What a starting heap cannot move (`rates`)."""

    promotions: list[float] | None
    retained: list[float] | None
    bytes_kept: list[float] | None
    bytes_span: list[int] | None
    bytes_from_rss: bool
    gc_work: list[float] | None
    periods: list[Any]
    older_interval: list[float]
    any_collector_off: bool


class _Calls(TypedDict):
    """The loop's own gc.collect() calls, and the collector off."""

    explicit: summary.Explicit | None
    explicit_full: list[int]
    explicit_all: list[int]
    collector_off: bool


class _Load(TypedDict):
    loaded: bool
    load_pressure: float | None
    load_others: float | None
    load: str


class _Machine(TypedDict):
    machine: str | None
    node: str | None


def _time_values(used: list[ResultDoc]) -> _Times:
    """Per repeat the times rest on: median step, mean iteration, GC shares, peak memory."""
    cpu = [summary.cpu_gc_share(d) for d in used]
    return {"medians": [float(np.median(np.asarray(d.wall_ns, np.float64))) / 1e6 for d in used],
            "means": [float(summary.iterations(d).mean()) / 1e6 for d in used],
            "shares": [summary.gc_share(d) for d in used],
            "cpu_shares": stats.all_known(cpu),
            "peak_rss": (summary.memory_summary(used) or summary.MemoryStats()).repeat_peak_rss_mb}


def _count_values(ok: list[ResultDoc]) -> _Counts:
    """The full collections' schedule, and the collections of every generation, per repeat."""
    sched = stats.schedule([summary.full_collections(d) for d in ok])
    by_generation = [summary.collections_by_generation(d) for d in ok]
    colls = stats.count_schedule([sum(g) for g in by_generation], [results.step_count(d) for d in ok])
    return {"schedule": sched, "full_per_1000": stats.per_1000(sched).per_repeat, "full": sched.total,
            "steps": sched.total_steps, "all_collections": colls,
            "collections_per_1000": stats.per_1000(colls).per_repeat,
            "per_generation": np.sum(by_generation, axis=0).tolist()}


def _pressure_values(ok: list[ResultDoc]) -> _Pressure:
    """Allocations a step, per repeat (flagged repeats too: a count), where every repeat
    counted them in one unit."""
    pressure = [summary.pressure_per_step(d) for d in ok]
    units = {unit for _, unit in pressure}
    return {"pressure": stats.all_known([x for x, _ in pressure]) if len(units) == 1 and None not in units else None,
            "pressure_unit": units.pop() if len(units) == 1 else None}


def _known_rates(ok: list[ResultDoc], rate: Callable[[ResultDoc], float | None]) -> list[float] | None:
    """A rate of every repeat, where every repeat read it (None where any did not, or none ran)."""
    return stats.all_known([rate(d) for d in ok]) if ok else None


def _rate_values(ok: list[ResultDoc]) -> _Rates:
    """What a starting heap cannot move, per repeat (`rates`): promotions and objects kept a
    step, the full collections' period, and the steps between collections of generation 1."""
    kept, span, from_rss = _bytes_values(ok)
    return {"promotions": _known_rates(ok, rates.promotions_per_step),
            "retained": _known_rates(ok, rates.growth_per_step),
            "bytes_kept": kept, "bytes_span": span,
            "bytes_from_rss": from_rss,
            "gc_work": _known_rates(ok, rates.examined_per_step),
            "periods": [rates.full_period(d) for d in ok], "older_interval": [_older_interval(d) for d in ok],
            "any_collector_off": any(rates.collector_off(d) for d in ok)}


def _bytes_values(ok: list[ResultDoc]) -> tuple[list[float] | None, list[int] | None, bool]:
    """KiB kept per 1,000 steps per repeat, the steps between the two readings each comes
    from, and whether some repeat read them from its resident set (`rates.bytes_kept_reading`);
    None, None, False where a repeat read none."""
    kept, span, from_rss = [], [], False
    for d in ok:
        reading = rates.bytes_kept_reading(d)
        if reading is None:
            return None, None, False
        kept.append(reading.per_1000 / 1024)
        span.append(reading.span)
        from_rss = from_rss or not reading.from_allocator
    return (kept, span, from_rss) if ok else (None, None, False)


def _older_interval(doc: ResultDoc) -> float:
    """Steps per collection of generation 1 or 2 (1: none)."""
    by_gen = summary.collections_by_generation(doc)
    return results.step_count(doc) / (by_gen[1] + by_gen[2]) if len(by_gen) == 3 and by_gen[1] else 1.0


def _explicit_values(ok: list[ResultDoc]) -> _Calls:
    """The loop's own gc.collect() calls, and whether it ran with the collector off."""
    return {"explicit": summary.explicit_summary(ok),
            "explicit_full": [summary.explicit_by_generation(d)[-1] for d in ok],  # per repeat: gc.collect() calls
            "explicit_all": [sum(summary.explicit_by_generation(d)) for d in ok],
            "collector_off": bool(ok) and all(results.part(d, "gc_state").get("gc_enabled") is False for d in ok)}


def _load_values(used: list[ResultDoc]) -> _Load:
    """Whether the repeats the times rest on ran loaded, and how much."""
    loaded = [d for d in used if summary.repeat_load(d)]
    return {"loaded": bool(loaded), "load_pressure": _most([summary.load_level(d)[0] for d in loaded]),
            "load_others": _most([summary.load_level(d)[1] for d in loaded]), "load": summary.describe_load(used)}


def _machine_values(ok: list[ResultDoc]) -> _Machine:
    """The kind of machine the first repeat ran on (times are compared within one kind)."""
    meta = results.part(ok[0], "metadata") if ok else {}
    return {"machine": json_key(metadata.machine_identity(meta)) if meta.get("cpu") else None,
            "node": metadata.node_type(meta)}


def _most(values: list) -> float | None:
    """The largest of `values`, None when any is unknown (or there are none)."""
    return None if not values or None in values else float(max(values))


@dataclasses.dataclass(frozen=True)
class Detectable:
    """The smallest change of a median step a comparison detects with 80 % power (`detectable`)."""

    spread: float  # between repeats (log medians), pooled over the cells
    repeats: int  # typical per cell
    single: float | None  # for one test (None: none below 100x)
    needed: int | None  # repeats per cell that would detect POWER_TARGET
    run_sd: float  # each run's own level, two runs apart (0: one run)
    floor: float | None  # two runs apart: what no number of repeats passes
    corrected: float | None  # at the first step of the correction over `tests`
    tests: int


def _repeats_needed(sd: float, n: int, alpha: float, run_sd: float, run_df: float) -> int | None:
    """The fewest repeats a cell (more than `n`, under 100) that detect POWER_TARGET; None
    where none do."""
    return next((r for r in range(n + 1, 100)
                 if (stats.detectable_change(sd, r, r, alpha, run_sd=run_sd, run_df=run_df) or 1e9) <= POWER_TARGET),
                None)


def detectable(cells_values: list[RepeatValues], alpha: float, tests: int = 1,
               run_sd: float = 0.0, run_df: float = RUN_DF) -> Detectable | None:
    """The smallest change of a median step that a comparison of these cells (their
    `repeat_values`) with as many repeats on the other side detects with 80 % power: from
    the spread between repeats pooled over every cell (log medians), at their typical
    number of repeats; for one test at `alpha`, and at the level of the first step of the
    correction over `tests` tests (alpha / tests), which a change alone must pass. With
    `run_sd` (two runs apart), each side also carries its run's own level, as the test
    does: more repeats then approach a floor that no number of them passes."""
    ss, df, sizes = 0.0, 0, []
    for v in cells_values:
        x = np.log(v.medians)
        if len(x) >= 2:
            ss += float(((x - x.mean()) ** 2).sum())
            df += len(x) - 1
        sizes.append(len(x))
    if df == 0 or not sizes:
        return None
    sd = math.sqrt(ss / df)
    n = int(np.median(sizes))
    single = stats.detectable_change(sd, n, n, alpha, run_sd=run_sd, run_df=run_df)
    needed = None if single is not None and single <= POWER_TARGET else \
        _repeats_needed(sd, n, alpha, run_sd, run_df)
    return Detectable(sd, n, single, needed, run_sd,
                      stats.detectable_change(sd, 1000, 1000, alpha, run_sd=run_sd, run_df=run_df) if run_sd else None,
                      stats.detectable_change(sd, n, n, alpha / max(tests, 1), run_sd=run_sd, run_df=run_df), tests)


def settings_differ(docs_a: list[ResultDoc], docs_b: list[ResultDoc]) -> list[str]:
    """The settings two cells differ in, as 'networks 200 in A, 50 in B'."""
    out = []
    for name, get in SETTINGS:
        va = {json_key(get(d)) for d in results.ok(docs_a)}
        vb = {json_key(get(d)) for d in results.ok(docs_b)}
        if va and vb and va != vb:
            out.append(f"{name} {', '.join(sorted(va))} in A, {', '.join(sorted(vb))} in B")
    return out


def json_key(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items() if v is not None) or "?"
    return str(value)


def holds_variants(groups: dict) -> bool:
    """Whether any cell of `groups` is a named variant of a user's loop (not an environment)."""
    return any(results.variant(d) for docs in groups.values() for d in docs)


def pair_cells(a: dict, b: dict) -> tuple[list[tuple[tuple, tuple]], list[str]]:
    """Pairs of cell keys (A's, B's) and notes. Cells pair by backend, workload, policy and
    environment; when no environment is shared but each side has one per cell, the cells
    pair across the environments (the question is then what the environment changed)."""
    pairs = [(k, k) for k in a if k in b]
    notes: list[str] = []
    for across in (_across_environments, _across_collector_states, _across_policies):
        if not pairs:
            pairs, notes = across(a, b)
    paired_a, paired_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    notes += [f"{summary.cell_label(k)}: only in A" for k in a if k not in paired_a]
    notes += [f"{summary.cell_label(k)}: only in B" for k in b if k not in paired_b]
    return pairs, notes


def _paired_by(a: dict, b: dict, key: Callable[[tuple], tuple]) -> list[tuple[tuple, tuple]]:
    """Cells of A and B paired by `key` of their keys, where `key` tells every cell of each
    side apart and the sides share at least one; else no pair."""
    ka, kb = {key(k): k for k in a}, {key(k): k for k in b}
    if not (len(ka) == len(a) and len(kb) == len(b) and set(ka) & set(kb)):
        return []
    return [(ka[k], kb[k]) for k in ka if k in kb]


def _across_environments(a: dict, b: dict) -> tuple[list[tuple[tuple, tuple]], list[str]]:
    """Cells paired by backend, workload and policy where each side ran each in one environment."""
    pairs = _paired_by(a, b, lambda k: k[:3])
    if not pairs:
        return [], []
    envs_a = sorted({summary.context(k) or "(own interpreter)" for k, _ in pairs})
    envs_b = sorted({summary.context(k) or "(own interpreter)" for _, k in pairs})
    what = "environments or variants" if holds_variants(a) or holds_variants(b) else "environments"
    return pairs, [f"no environment or variant is in both folders: cells paired across {what} "
                   f"({', '.join(envs_a)} in A against {', '.join(envs_b)} in B)"]


def _across_collector_states(a: dict, b: dict) -> tuple[list[tuple[tuple, tuple]], list[str]]:
    """Cells paired by backend, workload and variant (or environment) where no policy is
    shared: a loop of one's own is named `disable` or `default` from the collector's state
    (a worker that turned it off), so a fix that turns it back on would share no cell."""
    pairs = _paired_by(a, b, lambda k: (k[0], k[1], k[3], k[4]))
    if not pairs or not all(k[3] for k, _ in pairs):
        return [], []
    return pairs, ["no cell has the same policy in both folders: cells paired by variant or environment, across "
                   "the collector's state (" + "; ".join(f"{summary.cell_label(ka)} in A with "
                                                        f"{summary.cell_label(kb)} in B" for ka, kb in pairs[:4])
                   + (" ..." if len(pairs) > 4 else "") + ")"]


def _across_policies(a: dict, b: dict) -> tuple[list[tuple[tuple, tuple]], list[str]]:
    """One policy (or variant) of each loop per folder: a loop against its own mitigation."""
    pairs = _paired_by(a, b, lambda k: (k[0], k[1], k[4]))
    if not pairs:
        return [], []
    return pairs, ["each folder holds one policy or variant of each cell: paired by backend and workload ("
                   + "; ".join(f"{summary.cell_label(ka)} in A with {summary.cell_label(kb)} in B"
                               for ka, kb in pairs[:4]) + (" ..." if len(pairs) > 4 else "") + ")"]


@dataclasses.dataclass
class PairRow:
    """A pair of cells compared: its tests (corrected with the comparison's others) and verdicts."""

    cell: str
    key_a: list[str]
    key_b: list[str]
    repeats: list[int]  # used, A and B
    runs_apart: bool
    flagged: list[int]
    forced: list[str]  # the settings that differ, where --force compared them anyway
    tests: list[Test]
    verdict: str = ""  # of the first test
    summary: str = ""  # every verdict, in words


@dataclasses.dataclass
class Comparison:
    """Two sets of results compared (`compare_docs`): what `gcbench compare` prints and writes."""

    alpha: float
    min_effect: float
    tests: int  # tests with a p-value, corrected together
    rows: list[PairRow]
    refused: list[str]  # pairs whose settings differ
    notes: list[str]
    detectable: Detectable | None
    a: str = ""  # the sides, as given
    b: str = ""


def _comparable(da: list[ResultDoc], db: list[ResultDoc], force: bool) -> tuple[str, list[str]]:
    """Why two cells are not compared (empty where they are), and how their settings differ:
    a side with no ok repeat is a note; settings that differ refuse the pair unless `force`."""
    sa, sb = {d.status for d in da}, {d.status for d in db}
    if "ok" not in sa or "ok" not in sb:
        return f"not compared ({'/'.join(sorted(sa))} in A, {'/'.join(sorted(sb))} in B)", []
    differ = settings_differ(da, db)
    return ("; ".join(differ) if differ and not force else ""), differ


def compare_docs(docs_a: list[ResultDoc], docs_b: list[ResultDoc], min_effect: float = MIN_EFFECT, alpha: float = ALPHA,
                 force: bool = False) -> Comparison:
    """The comparison of two sets of result documents (docs/internals.md, `gcbench.analysing.comparison`)."""
    _check_levels(min_effect, alpha)
    nodes_a, nodes_b = summary.node_types(docs_a), summary.node_types(docs_b)
    by_node = len(nodes_a) > 1 or len(nodes_b) > 1  # results of several kinds of machine: never pooled
    a, b = summary.cells(docs_a, by_node), summary.cells(docs_b, by_node)
    pairs, notes = pair_cells(a, b)
    if by_node:
        notes.insert(0, f"results of several kinds of machine ({len(nodes_a)} in A, {len(nodes_b)} in B): a cell is "
                        "compared only with the same cell on the same kind of machine, never pooled across them")
    rows: list[PairRow] = []
    refused: list[str] = []
    values: list[RepeatValues] = []
    for ka, kb in pairs:
        label = _pair_label(ka, kb)
        why_not, differ = _comparable(a[ka], b[kb], force)
        if why_not:
            (refused if differ else notes).append(f"{label}: {why_not}")
            continue
        row, pair = _pair_row(label, ka, kb, a[ka], b[kb], differ, min_effect, alpha)
        rows.append(row)
        values += pair
    tests = [t for r in rows for t in r.tests]
    conclude(tests, alpha)
    for r in rows:
        mark_trades(r.tests)
        r.verdict, r.summary = row_verdict(r.tests), overall(r.tests)
    notes += _read_from_resident_sets(rows)
    m = sum(t.p is not None for t in tests)
    return Comparison(alpha, min_effect, m, rows, refused, notes,
                      detectable(values, alpha, m, run_sd=RUN_SD if any(r.runs_apart for r in rows) else 0.0))


def _read_from_resident_sets(rows: list[PairRow]) -> list[str]:
    """A note naming the cells whose memory kept was read from a resident set (`RSS_BLIND`)."""
    blind = [r.cell for r in rows for t in r.tests if t.metric == "bytes_kept" and RSS_BLIND in t.note]
    return [f"memory kept ({', '.join(blind)}): {RSS_BLIND}"] if blind else []


def _check_levels(min_effect: float, alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise UsageError(f"alpha must be between 0 and 0.5, got {alpha:g}")
    if not (math.isfinite(min_effect) and 0 <= min_effect < 1):
        raise UsageError(f"--min-effect must be a fraction from 0 to 1 (0.05 is 5 %), got {min_effect:g}")


def _pair_label(ka: tuple, kb: tuple) -> str:
    if ka == kb:
        return summary.cell_label(ka)
    if ka[2] != kb[2]:
        return f"{summary.cell_label(ka)} vs {summary.cell_label(kb)}"
    return f"{summary.cell_label(ka)} vs [{summary.context(kb) or 'own'}]"


def _pair_row(label: str, ka: tuple, kb: tuple, da: list[ResultDoc], db: list[ResultDoc], differ: list[str],
              min_effect: float, alpha: float) -> tuple[PairRow, tuple[RepeatValues, RepeatValues]]:
    """One pair of cells, tested (not yet corrected with the others), and their values."""
    va, vb = repeat_values(da), repeat_values(db)
    va.apart = vb.apart = runs_apart(va, vb) is not False  # two folders: apart unless they share a run
    return PairRow(label, list(ka), list(kb), [va.repeats, vb.repeats], va.apart, [va.flagged, vb.flagged], differ,
                   cell_tests(va, vb, min_effect, alpha)), (va, vb)


def split_sides(docs: list[ResultDoc], base: str, head: str) -> tuple[list[ResultDoc], list[ResultDoc]]:
    """The two sides of an interleaved A/B in one folder: the documents of environment (or
    a user loop's variant) `base` and those of `head`, each named as the folder names it."""
    def name(d):
        return results.env_name(d) or results.variant(d) or ""
    names = sorted({name(d) for d in docs} - {""})
    sides = [[d for d in docs if name(d) == which] for which in (base, head)]
    for which, side in zip((base, head), sides, strict=True):
        if not side:
            raise UsageError(f"no result of environment {which!r} in the folder; it holds "
                             + (", ".join(repr(n) for n in names) if names else "no environment")
                             + did_you_mean(which, names))
    return sides[0], sides[1]


def compare_dirs(dir_a, dir_b, min_effect: float = MIN_EFFECT, alpha: float = ALPHA,
                 force: bool = False) -> Comparison:
    out = compare_docs(results.load_dir(dir_a), results.load_dir(dir_b), min_effect, alpha, force)
    out.a, out.b = str(dir_a), str(dir_b)
    return out


def _rate_change(t: Test, effect: float) -> str:
    """A rate's change in its note's words, relative only to a base beyond the resolution (a
    leak from nothing is no percentage)."""
    rel = f"{100 * effect / abs(t.a):+.0f} %: " if t.a and abs(t.a) >= t.margin else ""
    return f"{rel}{t.note.split(';')[0]}"


def _short_change(t: Test) -> str:
    if t.effect is None:
        return "no change measured"
    if t.metric == "gc_share":
        return f"{100 * t.effect:+.1f} points"
    if t.metric in RATES:
        return _rate_change(t, t.effect)
    if t.metric == "full_rate" and t.period:
        return t.period
    if t.metric in ("full_rate", "collections"):
        return f"{wording.fmt_signed(t.effect)} per 1,000 steps"
    if t.load_margin:  # a large change on a loaded machine: as a factor
        return f"{t.effect:.2f} x"
    return f"{100 * (t.effect - 1):+.0f} %"


def _phase_words(t: Test) -> str:
    """`full collections 1 -> 2 a repeat` for a count that the schedule's phase explains."""
    if t.per_repeat is None:
        return f"{NAMES[t.metric]} {wording.fmt(t.a)} -> {wording.fmt(t.b)} per 1,000 steps"
    return f"{NAMES[t.metric]} {wording.fmt(t.per_repeat[0])} -> {wording.fmt(t.per_repeat[1])} a repeat"


def _change_said(t: Test) -> str:
    """`slower (+8 %)`; beside a time judged on a loaded machine, the margin it cleared."""
    beyond = f", beyond the x{t.load_margin:.2g} that load alone moves" if t.load_margin else ""
    return f"{t.verdict} ({_short_change(t)}{beyond})"


def overall(tests: list[Test]) -> str:
    """Every verdict of a pair that is not 'same', with its effect, in one phrase, counts
    first: 'fewer full GCs (-20 per 1,000 steps), slower run (+8 %), less memory (-49 %)';
    a change that trades time for memory (or memory for time) says so, so that a memory fix
    is never read as only a regression; times the machine did not allow end it, by name
    ('; median step, GC share not judged'), or as 'times not judged' where nothing else
    was said."""
    ordered = sorted(tests, key=lambda t: SAID_ORDER.index(t.metric))
    quiet_words = ("same", SAME_PHASE, "inconclusive", NOT_JUDGED)
    said = [_change_said(t) for t in ordered if t.verdict not in quiet_words and t.effect is not None]
    phase = [_phase_words(t) for t in ordered if t.verdict == SAME_PHASE]
    phase_text = f"; {SAME_PHASE}: {', '.join(phase)}" if phase else ""
    unjudged = [t for t in ordered if t.verdict == NOT_JUDGED]
    # what the machine kept from a verdict is still shown, as measured: "median step 0.36 x measured"
    measured = ", ".join(_measured_words(t) for t in unjudged)
    if not said:
        return _nothing_said(tests, phase_text, measured if unjudged else None)
    text = ", ".join(said) + _trade(tests)
    # beside a time judged beyond what load moves, the ones that were not are named, with what was measured
    return text + phase_text + (f"; not judged: {measured}" if unjudged else "")


def _nothing_said(tests: list[Test], phase_text: str, measured: str | None) -> str:
    """`overall` where no test found a change: the same, or nothing shown, and what the
    machine did not let be judged (`measured`: None where every time was judged)."""
    if all(t.verdict in ("same", SAME_PHASE, NOT_JUDGED) for t in tests):
        return f"same counts{phase_text}; times not judged ({measured})" if measured is not None else \
            "same" + phase_text
    return "no change shown" + phase_text + (f"; times not judged ({measured})" if measured is not None else "")


def _measured_words(t: Test) -> str:
    """A test the machine kept from a verdict, with the change measured all the same."""
    if t.effect is None or t.a is None:
        return f"{NAMES[t.metric]} (not measured)"
    if t.metric == "gc_share":
        return f"{NAMES[t.metric]} {100 * t.a:.2f} -> {100 * (t.b or 0.0):.2f} % measured"
    if t.ratio_metric:
        return f"{NAMES[t.metric]} {t.effect:.3g} x measured"
    return f"{NAMES[t.metric]} {wording.fmt(t.a)} -> {wording.fmt(t.b)} measured"


# A change that costs the collector work and buys memory (a periodic gc.collect() that
# frees islands of garbage, a collector turned back on in forked workers), or costs full
# collections and buys work (full collections that scan less): the cost is the price of the
# gain, said as a trade, and `--fail-on` does not fail it (`compare.failures`).
COSTS = {"collections": "more collections", "full_rate": "more full GCs", "gc_work": "more GC work"}
GAINS = {"retained": "less retained", "bytes_kept": "less memory kept", "peak_rss": "less memory",
         "gc_work": "less GC work"}


# regressions a count shows (exact, or judged at a resolution a starting heap does not move), and
# those a time shows (which load can leave not judged)
COUNT_REGRESSIONS = ("more full GCs", "more collections", "more allocations", "more promotions", "more retained",
                     "more memory kept", "more GC work")
TIME_REGRESSIONS = ("slower", "slower run", "more GC", "more memory")


def row_verdict(tests: list[Test]) -> str:
    """A pair's one verdict: the most serious of its tests, the first of them where several
    are as serious. A count regression (not paid for by a gain: a trade) outranks a time's,
    which outranks any other judged change (a traded cost after its gain), then
    "inconclusive", "same" and "not judged"; a
    row whose median is not judged (a loaded machine) while it keeps 40 more objects a step
    reads "more retained", never "not judged"."""
    def rank(t: Test) -> int:
        if t.verdict in COUNT_REGRESSIONS and not t.traded:
            return 0
        if t.verdict in TIME_REGRESSIONS and not t.traded:
            return 1
        if t.traded:  # a cost a gain pays for: the gain is the row's verdict
            return 3
        return {"inconclusive": 4, "same": 5, SAME_PHASE: 5, NOT_JUDGED: 6}.get(t.verdict, 2)

    return min(tests, key=rank).verdict if tests else NOT_JUDGED


# the verdicts that say a change keeps more memory: where one holds, no memory gain pays
MEMORY_COSTS = {"retained": "more retained", "bytes_kept": "more memory kept", "peak_rss": "more memory"}


def mark_trades(tests: list[Test]) -> None:
    """Mark each cost verdict of a pair (COSTS) that a gain of the same pair (GAINS) pays
    for: `traded` names the gain ("more collections for less memory kept"). A gain pays only
    where the memory's evidence points one way: a change that keeps more objects and fewer
    bytes (cyclic garbage for arrays, the allocator's arenas moving a few KiB) bought
    nothing, and its costs fail as costs."""
    if any(MEMORY_COSTS.get(t.metric) == t.verdict for t in tests):
        return
    gains = [t for t in tests if GAINS.get(t.metric) == t.verdict]
    for t in tests:
        bought = next((g for g in gains if g.metric != t.metric), None)
        if COSTS.get(t.metric) == t.verdict and bought is not None:
            t.traded = f"{t.verdict} for {bought.verdict}"


def _trade(tests: list[Test]) -> str:
    """': a trade, time for memory' where a change costs time and saves memory (or the
    reverse), so that a memory fix is never read as only a regression; before it, the
    counts a gain paid for (`mark_trades`: 'more full GCs for less memory')."""
    phrases = list(dict.fromkeys(t.traded for t in tests if t.traded))
    memory = next((t.verdict for t in tests if t.metric == "peak_rss"), None)
    verdicts = {t.verdict for t in tests}
    for memory_said, times, phrase in (("less memory", ("slower", "slower run"), "time for memory"),
                                       ("more memory", ("faster", "faster run"), "memory for time")):
        if memory == memory_said and verdicts & set(times):
            phrases.append(phrase)
    return f": a trade, {', '.join(phrases)}" if phrases else ""
