"""Statistics of repeats: what each fresh process measured, and how sure we are.

How it works, and why: docs/internals.md, `gcbench.analysing.stats`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


def sst():
    """scipy.stats, imported when a statistic is first computed: it takes most of a second,
    which every command that computes none (help, list, status, an error) would pay
    (child.py imports it up front, where the worker's heap has always held it)."""
    from scipy import stats

    return stats

LEVEL = 0.95
POWER = 0.80
EVENT_WINDOW = 10  # an event step is compared with the steps up to this far on either side
DRIFT_MIN_EFFECT = 0.10  # first and last thirds of a repeat must differ by more than this ...
DRIFT_P = 0.01  # ... and a long-memory test of their means must reject equality at this level
DRIFT_HURST = 0.90  # the long memory that test assumes (committed repeats: median 0.81, upper quartile 0.86)
MIN_PROCESSES = 3  # no interval or p-value from fewer fresh processes: their values are shown instead


# -- one value per repeat, and its interval ----------------------------------------------------

def t_interval(values, level: float = LEVEL) -> tuple[float, float] | None:
    """Student's t interval of the mean of `values` (one per repeat); None for fewer than
    MIN_PROCESSES values: one process says nothing about a second one's luck, and two give
    one degree of freedom, an interval that is arithmetic rather than information (from
    7.5 and 13.3 ms: 0.27-375 ms). Those values are shown as they are instead."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < MIN_PROCESSES:
        return None
    mean, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))
    q = float(sst().t.ppf(0.5 + level / 2, len(x) - 1))
    return mean - q * se, mean + q * se


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A figure over the repeats: its value, its interval (None from fewer than
    MIN_PROCESSES repeats) and the per-repeat values it rests on."""

    value: float
    ci: tuple[float, float] | None
    per_repeat: list[float]


def geometric(values, level: float = LEVEL) -> Estimate:
    """The geometric mean of positive per-repeat values (medians, ratios) with the t
    interval of their logarithms, mapped back."""
    logs = np.log(np.asarray(values, dtype=np.float64))
    ci = t_interval(logs, level)
    return Estimate(float(np.exp(logs.mean())), None if ci is None else (math.exp(ci[0]), math.exp(ci[1])),
                    [float(v) for v in values])


def arithmetic(values, level: float = LEVEL, bounds: tuple[float, float] = (-math.inf, math.inf)) -> Estimate:
    """The mean of per-repeat values with its t interval, clipped to `bounds` (a share
    lies in [0, 1]: clipping keeps every true value the interval held)."""
    x = np.asarray(values, dtype=np.float64)
    ci = t_interval(x, level)
    if ci is not None:
        ci = (max(ci[0], bounds[0]), min(ci[1], bounds[1]))
    return Estimate(float(x.mean()), ci, [float(v) for v in x])


# -- full collections: a schedule ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Schedule:
    """Where events (full collections, per step) fell in each repeat.

    `counts` per repeat: events, not steps holding one (a step that called `gc.collect()`
    twice holds two); `constant` when every repeat (two or more) has the same count per
    step; `same_steps` when they also fall at the same step indices (None where the steps
    are not known), and then `at` lists the steps. A schedule that is the same in every
    repeat is a property of the program, not a sample: it is compared exactly."""

    counts: list[int]
    steps: list[int]
    repeats: int
    constant: bool
    same_steps: bool | None
    at: list[int] | None
    total: int
    total_steps: int


def schedule(events: list[np.ndarray]) -> Schedule:
    """The schedule of `events`, one array per repeat with the events of each step."""
    steps = [len(e) for e in events]
    at = [np.flatnonzero(np.asarray(e) > 0).tolist() for e in events]
    counts = [int(np.sum(np.clip(np.asarray(e, np.int64), 0, None))) for e in events]
    per_step = {c / n for c, n in zip(counts, steps, strict=True) if n}
    constant = len(events) >= 2 and len(per_step) == 1
    same = constant and all(a == at[0] for a in at)
    return Schedule(counts, steps, len(events), constant, same, at[0] if same else None, sum(counts), sum(steps))


def count_schedule(counts: list[int], steps: list[int]) -> Schedule:
    """Counts per repeat (collections of every generation, say) as a `Schedule` whose steps
    are not known (`same_steps` None): constant when every repeat (two or more) has the
    same count per step."""
    per_step = {c / n for c, n in zip(counts, steps, strict=True) if n}
    return Schedule(list(counts), list(steps), len(counts), len(counts) >= 2 and len(per_step) == 1, None, None,
                    int(sum(counts)), int(sum(steps)))


def all_known(values: list[float | None]) -> list[float] | None:
    """`values`, where every one of them is known (a repeat that did not read one leaves the
    cell without it); None where any is not."""
    known = [v for v in values if v is not None]
    return known if len(known) == len(values) else None


def per_1000(sched: Schedule) -> Estimate:
    """Events per 1,000 steps: the mean of the per-repeat rates, with the t interval of
    the repeats (a constant schedule has no spread: its interval is the value itself)."""
    rates = [1000 * c / n for c, n in zip(sched.counts, sched.steps, strict=True) if n]
    return arithmetic(rates, bounds=(0.0, math.inf)) if rates else Estimate(math.nan, None, [])


def every(sched: Schedule) -> float | None:
    """One event every N steps: steps over events (None without events)."""
    return sched.total_steps / sched.total if sched.total else None


# -- steps with an event against the steps around them ----------------------------------------

def event_effects(wall: np.ndarray, events: np.ndarray, window: int = EVENT_WINDOW,
                  offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """For every step marked in `events` (moved by `offset`: 1 looks at the step after
    each event): how much longer it took than the median of the unmarked steps within
    `window` steps on either side (robust to drift), as extra time and as a ratio. Steps
    with no unmarked neighbour, or outside the series, are skipped."""
    wall = np.asarray(wall, dtype=np.float64)
    events = np.asarray(events, dtype=bool)
    quiet = ~events
    if offset:
        quiet[np.clip(np.flatnonzero(events) + offset, 0, len(wall) - 1)] = False
    extra, ratio = [], []
    for i in np.flatnonzero(events) + offset:
        if not 0 <= i < len(wall):
            continue
        lo, hi = max(0, i - window), min(len(wall), i + window + 1)
        around = wall[lo:hi][quiet[lo:hi]]
        if len(around) == 0:
            continue
        base = float(np.median(around))
        extra.append(wall[i] - base)
        ratio.append(wall[i] / base if base > 0 else math.nan)
    return np.asarray(extra), np.asarray(ratio)


@dataclasses.dataclass(frozen=True)
class EventSummary:
    """Steps with an event (a full collection) against the steps around them
    (`event_summary`): the schedule, its rate per 1,000 steps, and where any repeat had
    events, the extra time and ratio of the event steps and of the steps just after them."""

    schedule: Schedule
    count: int
    steps: int
    rate: Estimate
    extra_ns: float | None = None
    extra_ci_ns: tuple[float, float] | None = None
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    after_ratio: float | None = None
    after_ratio_ci: tuple[float, float] | None = None
    repeats_with_events: int = 0
    every: float | None = None
    cost_share: float | None = None


def event_summary(walls: list[np.ndarray], events: list[np.ndarray]) -> EventSummary:
    """Steps with an event (a full collection) against the steps around them: the
    schedule, and per repeat the median extra time and ratio of its event steps (and of
    the steps just after them: a step that gives the time back shows a ratio below 1).
    The cell's figure is the mean over repeats (ratios: the geometric mean), its interval
    the t interval of the repeats; with events in fewer than two repeats, no interval."""
    sched = schedule(events)
    if not sched.total:
        return EventSummary(sched, sched.total, sched.total_steps, per_1000(sched))
    extras, ratios, afters = [], [], []
    total_wall = 0.0
    cost = 0.0
    for wall, ev in zip(walls, events, strict=True):
        ev = np.asarray(ev) > 0
        total_wall += float(np.sum(wall))
        if ev.any():
            e, r = event_effects(wall, ev)
            _, after = event_effects(wall, ev, offset=1)
            cost += float(np.sum(np.clip(e, 0, None)))
            extras += [float(np.median(e))] if len(e) else []
            ratios += [float(np.median(r))] if len(e) else []
            afters += [float(np.median(after))] if len(after) else []
    extra = _value_and_ci(arithmetic(extras) if extras else None)
    ratio, after_ratio = (_value_and_ci(_positive_geometric(x)) for x in (ratios, afters))
    return EventSummary(
        sched, sched.total, sched.total_steps, per_1000(sched), *extra, *ratio, *after_ratio,
        repeats_with_events=len(extras), every=every(sched), cost_share=cost / total_wall if total_wall else 0.0,
    )


def _value_and_ci(e: Estimate | None) -> tuple[float | None, tuple[float, float] | None]:
    """An estimate's value and interval; (None, None) without one."""
    return (e.value, e.ci) if e is not None else (None, None)


def _positive_geometric(ratios: list[float]) -> Estimate | None:
    """The geometric mean of ratios (with its interval); None where there are none, or a
    ratio is not above 0."""
    return geometric(ratios) if ratios and min(ratios) > 0 else None


# -- stability of one repeat ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Drift:
    """A repeat whose last third differs from its first by more than noise (`drift`)."""

    change: float  # the last third's median against the first's, as a fraction
    p: float
    hurst: float  # the long memory the test allowed for


def drift(wall) -> Drift | None:
    """Whether the first and last thirds of a repeat differ by more than noise: their
    medians differ by more than DRIFT_MIN_EFFECT, and a test of their mean log step times
    rejects equality at DRIFT_P.

    Real step series have long memory: their correlations decay slowly, so two thirds of a
    steady series differ by more than short-range (AR(1)) noise allows. The test's variance
    is therefore that of fractional Gaussian noise at Hurst exponent DRIFT_HURST, above the
    measured upper quartile (DESIGN.md, "Figures measured for the code's choices";
    `benchmarks/drift_flags.py`). Steps beyond 4 robust spreads (a collection's pause) are
    clipped first: a level, not its spikes. The marginal variance is estimated from the thirds less their own means
    (so that a level change does not pass for noise) and corrected for what long memory
    hides inside a third; the p-value is the normal one. `tests/test_inference.py` checks
    at most 1 % false flags on steady long-memory series and on AR(1) ones, and that a
    level shift of 25 % is found. Returns the evidence when the thirds differ, else None."""
    x = np.log(np.maximum(np.asarray(wall, dtype=np.float64), 1.0))
    n = len(x)
    third = n // 3
    if third < 6:
        return None
    change = float(math.exp(np.median(x[n - third:]) - np.median(x[:third])) - 1)
    if abs(change) <= DRIFT_MIN_EFFECT:
        return None
    # a level, not its spikes: steps beyond 4 robust spreads (a collection's pause) are clipped
    centre = float(np.median(x))
    spread = 1.4826 * float(np.median(np.abs(x - centre)))
    if spread > 0:
        x = np.clip(x, centre - 4 * spread, centre + 4 * spread)
    first, last = x[:third], x[n - third:]
    pieces = np.array_split(x, 3)
    ss = float(sum(((p - p.mean()) ** 2).sum() for p in pieces))
    if ss == 0:
        return None
    h2 = 2 * DRIFT_HURST
    within = ss / (n - 3)  # the variance inside a third, less its own mean ...
    marginal = within / max(1 - (n / 3) ** (h2 - 2), 1e-6)  # ... is this share of the series' variance
    cov = 0.5 * (n ** h2 + (n - 2 * third) ** h2 - 2 * (n - third) ** h2)  # of the two thirds' sums
    var = marginal * (2 * third ** h2 - 2 * cov) / third ** 2
    z = float(last.mean() - first.mean()) / math.sqrt(var)
    p = float(2 * sst().norm.sf(abs(z)))
    if p >= DRIFT_P:
        return None
    return Drift(change, p, DRIFT_HURST)


def spikes(wall, factor: float) -> np.ndarray:
    """Indices of steps slower than `factor` x the median step (a secondary, GC-blind view)."""
    wall = np.asarray(wall, dtype=np.float64)
    return np.flatnonzero(wall > factor * np.median(wall))


def lag1(x) -> float:
    """Lag-1 autocorrelation of a series (0 for a constant one)."""
    x = np.asarray(x, dtype=np.float64)
    xc = x - x.mean()
    ss = float(xc @ xc)
    return float(xc[1:] @ xc[:-1]) / ss if ss else 0.0


# -- power ------------------------------------------------------------------------------------------

def t_power(delta: float, sd: float, n_a: int, n_b: int, alpha: float, paired: bool = False,
            run_sd: float = 0.0, run_df: float = math.inf) -> float:
    """Power of the two-sided t test of a shift `delta` (on the log scale: log of a ratio)
    with per-repeat spread `sd`: pooled on n_a and n_b repeats, or paired on n_a rounds
    (then `sd` is the spread of the per-round differences); with `run_sd`, the sides come
    from two runs, each with its own level (the standard error carries 2 run_sd², as
    compare's test of two runs apart does), and `run_df`, the degrees of freedom of its own
    estimate, enters Satterthwaite's degrees of freedom as it does in the test (`comparison._tested`)."""
    if paired:
        df, se = float(n_a - 1), sd / math.sqrt(n_a)
    else:
        df, se = float(n_a + n_b - 2), sd * math.sqrt(1 / n_a + 1 / n_b)
    if run_sd > 0 and se > 0:  # compare's test two runs apart: Satterthwaite's degrees of freedom
        sampled, runs = se * se, 2 * run_sd * run_sd
        se = math.sqrt(sampled + runs)
        df = se ** 4 / (sampled ** 2 / df + (runs ** 2 / run_df if math.isfinite(run_df) else 0.0))
    if df < 1 or se <= 0:
        return math.nan
    q = sst().t.ppf(1 - alpha / 2, df)
    nc = delta / se
    power = float(sst().nct.sf(q, df, nc) + sst().nct.cdf(-q, df, nc))
    return power if math.isfinite(power) else float(nc > q)  # scipy's series fails far out in the tail


def detectable_change(sd: float, n_a: int, n_b: int, alpha: float, power: float = POWER,
                      paired: bool = False, run_sd: float = 0.0, run_df: float = math.inf) -> float | None:
    """The smallest ratio change of a median (0.2 for 20 %) that the test finds with
    `power`, at per-repeat log spread `sd` (and each side's run level `run_sd`, for two
    runs apart); None when no change below 100x would be."""
    if not (sd > 0) or min(n_a, n_b) < 2:
        return None
    def f(d):
        return t_power(d, sd, n_a, n_b, alpha, paired, run_sd, run_df) - power
    if f(math.log(100)) < 0:
        return None
    from scipy.optimize import brentq

    return math.expm1(brentq(f, 1e-9, math.log(100)))


@dataclasses.dataclass(frozen=True)
class RunTerm:
    """The run-to-run term (`run_term`), sds on the log scale (0.05: 5 %)."""

    cells: int
    runs: int  # distinct runs behind the cells
    repeats: int  # per run, typical
    within_sd: float  # between repeats inside a run
    run_sd: float  # a run's own level
    low: float  # the run sd's interval
    high: float


def _squares(per_run: list[np.ndarray]) -> tuple[float, float, int, float]:
    """One cell's runs: the between-run mean square's part (its sum of squares over its
    degrees of freedom), the within-run sum of squares and degrees of freedom, and the mean
    repeats per run."""
    means = np.array([x.mean() for x in per_run])
    sizes = np.array([len(x) for x in per_run])
    grand = float((means * sizes).sum() / sizes.sum())
    between = float((sizes * (means - grand) ** 2).sum()) / (len(per_run) - 1)
    within = float(sum(((x - x.mean()) ** 2).sum() for x in per_run))
    return between, within, int((sizes - 1).sum()), float(np.mean(sizes))


def run_term(cells: list[list[list[float]]], level: float = 0.95, runs: int | None = None) -> RunTerm:
    """The run-to-run term from separate runs of the same cells: `cells[c][r]` holds the log
    medians of cell c's repeats in run r. One-way random effects per cell, pooled over the
    cells: the between-run mean square (MSB) less the within-run one (MSW), over the repeats
    per run, estimates the variance of a run's level. Its interval takes MSB's chi-square
    interval on `runs` - 1 degrees of freedom only, `runs` being the distinct runs behind
    all the cells (default: the fewest runs any cell has): the cells of one run share its
    shift, so they are not independent evidence about it (conservative); less MSW, which
    has many more (Satterthwaite's degrees of freedom for the difference gave an interval wider than
    the data: DESIGN.md). Returns sds on the log scale (0.05: 5 %): run_sd with low-high, within_sd,
    runs, repeats."""
    ssb = ssw = 0.0
    dfw = 0
    ns, per_cell = [], []
    for given in cells:
        per_run = [np.asarray(x, float) for x in given if len(x)]
        if len(per_run) < 2:
            continue
        between, within, df, n_mean = _squares(per_run)
        ssb += between
        ssw += within
        dfw += df
        ns.append(n_mean)
        per_cell.append(len(per_run))
    if not per_cell or dfw == 0:
        raise ValueError("the run term needs a cell measured in 2 or more runs with 2 or more repeats")
    if runs is not None and runs < max(per_cell):
        raise ValueError(f"{runs} distinct runs, but a cell was measured in {max(per_cell)}")
    msb, msw = ssb / len(per_cell), ssw / dfw
    n, dfb = float(np.mean(ns)), (runs or min(per_cell)) - 1
    var = (msb - msw) / n
    tail = (1 - level) / 2
    low = max((msb * dfb / sst().chi2.ppf(1 - tail, dfb) - msw) / n, 0.0)
    high = max((msb * dfb / sst().chi2.ppf(tail, dfb) - msw) / n, 0.0)
    return RunTerm(len(per_cell), runs or min(per_cell), round(n), math.sqrt(msw), math.sqrt(max(var, 0.0)),
                   math.sqrt(low), math.sqrt(high))


def bounds(value: float, ci) -> tuple[float, float]:
    """The interval, or the value itself at both ends when there is none (for error bars)."""
    return (value, value) if ci is None else (ci[0], ci[1])
