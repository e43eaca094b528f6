"""Statistics of step-time series: what one process's steps say, and how sure we are.

Steps inside one process are autocorrelated and share that process's luck, so they
are never resampled one by one. Intervals come from a hierarchical bootstrap: resample
the repeats (fresh processes), then moving blocks of steps inside each repeat, with the
block length chosen from the series' autocorrelation (Politis & White 2004, corrected
by Patton, Politis & White 2009). Counts of events (collections, full collections) get
exact Poisson (Garwood) intervals. Everything here works on plain arrays, so it can be
tested against series with known answers; `summary.py` applies it to result documents.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sst

LEVEL = 0.95
BOOTSTRAP_SAMPLES = 2000
FEW_EVENTS = 5  # below this, a count is shown as "k in n steps", not as a rate
EVENT_WINDOW = 10  # an event step is compared with the steps up to this far on either side
DRIFT_MIN_EFFECT = 0.10  # first and last thirds of a repeat must differ by more than this ...
DRIFT_P = 0.01  # ... and a block-level rank test must reject equality at this level
_CHUNK = 4_000_000  # resampled values per bootstrap chunk (bounds the memory)


# -- block length and moving-block resampling -----------------------------------------------

def _flat_top(t: np.ndarray) -> np.ndarray:
    t = np.abs(t)
    return np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2.0 * (1.0 - t), 0.0))


def block_length(x) -> int:
    """Block length for a moving-block bootstrap of `x` (Politis-White automatic rule).

    Computed on the ranks of `x`, so that a few huge spikes do not dominate the
    autocorrelation. Independent steps give 1; a series that wanders gives long blocks.
    Bounded by min(3 sqrt(n), n / 3).
    """
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n < 8:
        return 1
    r = sst.rankdata(x)
    r = r - r.mean()
    var = float(r @ r) / n
    if var == 0:
        return 1
    kn = max(5, math.ceil(math.sqrt(math.log10(n))))
    max_lag = min(n - 1, math.ceil(math.sqrt(n)) + kn)
    acov = np.array([float(r[: n - k] @ r[k:]) / n for k in range(max_lag + 1)])
    rho = acov / var
    bound = 2.0 * math.sqrt(math.log10(n) / n)
    m = max_lag
    for lag in range(1, max_lag - kn + 1):
        if np.all(np.abs(rho[lag: lag + kn]) < bound):
            m = lag - 1
            break
    big_m = min(2 * max(m, 1), max_lag)
    k = np.arange(-big_m, big_m + 1)
    lam = _flat_top(k / big_m)
    ak = acov[np.abs(k)]
    g_hat = float(np.sum(lam * np.abs(k) * ak))
    lrv = float(np.sum(lam * ak))
    upper = max(1, min(math.ceil(3 * math.sqrt(n)), n // 3))
    if lrv <= 0 or g_hat == 0:
        return 1
    d_cb = 4.0 / 3.0 * lrv**2
    b = (2.0 * g_hat**2 / d_cb) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    return int(min(max(1, math.ceil(b)), upper))


def block_indices(n: int, block: int, samples: int, rng: np.random.Generator) -> np.ndarray:
    """(samples, n) indices of moving-block resamples of a series of length `n`."""
    block = max(1, min(block, n))
    count = -(-n // block)
    starts = rng.integers(0, n - block + 1, size=(samples, count))
    idx = starts[:, :, None] + np.arange(block)
    return idx.reshape(samples, count * block)[:, :n]


def resampled(arrays: tuple[np.ndarray, ...], stat, samples: int, rng: np.random.Generator,
              block: int | None = None) -> np.ndarray:
    """`stat(*resampled_arrays)` for `samples` moving-block resamples (rows) of equally long
    `arrays`; `stat` reduces along axis 1. The block length is that of `arrays[0]`."""
    n = len(arrays[0])
    block = block_length(arrays[0]) if block is None else block
    out = np.empty(samples)
    per_chunk = max(1, _CHUNK // max(n, 1))
    for start in range(0, samples, per_chunk):
        m = min(per_chunk, samples - start)
        idx = block_indices(n, block, m, rng)
        out[start: start + m] = stat(*(a[idx] for a in arrays))
    return out


def hierarchical(repeats: list[tuple[np.ndarray, ...]], stat, combine, samples: int = BOOTSTRAP_SAMPLES,
                 seed: int = 0) -> np.ndarray:
    """Bootstrap distribution of `combine(per-repeat stat)`: each sample draws the repeats
    with replacement, and each drawn repeat is a fresh moving-block resample of its steps.

    `repeats` holds, per repeat, the tuple of arrays `stat` takes; `stat` maps (rows, steps)
    arrays to one value per row; `combine` maps a (samples, repeats) matrix to one value
    per row (np.median for the median of medians, np.mean for a mean share).
    """
    rng = np.random.default_rng(seed)
    inner = np.stack([resampled(arrays, stat, samples, rng) for arrays in repeats])  # (R, samples)
    r = len(repeats)
    which = rng.integers(0, r, size=(samples, r))
    column = rng.integers(0, samples, size=(samples, r))
    return combine(inner[which, column], axis=1)


def interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def _median_rows(x, axis=1):
    return np.median(x, axis=axis)


def median_of_medians(walls: list[np.ndarray], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> dict:
    """The median of the per-repeat medians, with its hierarchical-bootstrap interval."""
    medians = [float(np.median(w)) for w in walls]
    dist = hierarchical([(np.asarray(w, np.float64),) for w in walls], _median_rows, np.median, samples, seed)
    return {"value": float(np.median(medians)), "ci": interval(dist), "per_repeat": medians}


def mean_ratio_of_sums(pairs: list[tuple[np.ndarray, np.ndarray]], samples: int = BOOTSTRAP_SAMPLES,
                       seed: int = 0) -> dict:
    """Mean over repeats of sum(num)/sum(den) (the GC share), with its interval."""
    shares = [float(num.sum() / den.sum()) if den.sum() > 0 else 0.0 for num, den in pairs]
    if not any(num.any() for num, _ in pairs):
        return {"value": 0.0, "ci": (0.0, 0.0), "per_repeat": shares}

    def share(num, den):
        return num.sum(axis=1) / den.sum(axis=1)

    dist = hierarchical([(np.asarray(n, np.float64), np.asarray(d, np.float64)) for n, d in pairs], share,
                        np.mean, samples, seed)
    return {"value": float(np.mean(shares)), "ci": interval(dist), "per_repeat": shares}


# -- counts of events -------------------------------------------------------------------------

def garwood(count: int, level: float = LEVEL) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson mean from an observed `count`."""
    alpha = 1 - level
    lo = 0.0 if count == 0 else float(sst.chi2.ppf(alpha / 2, 2 * count) / 2)
    hi = float(sst.chi2.ppf(1 - alpha / 2, 2 * count + 2) / 2)
    return lo, hi


def rate(count: int, steps: int, per: int = 1000, level: float = LEVEL) -> dict:
    """Events per `per` steps with the Garwood interval, and the count it rests on."""
    lo, hi = garwood(count, level)
    scale = per / steps if steps else math.nan
    return {"count": int(count), "steps": int(steps), "per": per, "rate": count * scale,
            "ci": (lo * scale, hi * scale)}


def format_rate(r: dict, what: str = "") -> str:
    """`"24 in 1,200 steps (20 per 1,000 steps, 95 % 13-30)"`; below FEW_EVENTS only the count."""
    head = f"{r['count']:,}{' ' + what if what else ''} in {r['steps']:,} steps"
    if r["count"] < FEW_EVENTS:
        return head
    lo, hi = r["ci"]
    return f"{head} ({fmt(r['rate'])} per {r['per']:,} steps, 95 % {fmt(lo)}-{fmt(hi)})"


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for people: 3 significant digits, thousands separated above 1,000."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def fmt_signed(x: float) -> str:
    """+112, -0.0746: a difference, with its sign."""
    return ("+" if x >= 0 else "") + fmt(x)


def fmt_range(lo: float, hi: float) -> str:
    """`12.8-29.8`, or `-0.672 to 0.561` when a bound is negative (a dash would read as a minus)."""
    return f"{fmt(lo)}{' to ' if min(lo, hi) < 0 else '-'}{fmt(hi)}"


def median_interval(values, level: float = LEVEL) -> tuple[float, float] | None:
    """Distribution-free interval of the median (binomial order statistics); None when
    there are too few values for the level (fewer than 6 at 95 %)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return None
    ci = sst.quantile_test(values, q=float(np.median(values)), p=0.5).confidence_interval(level)
    if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
        return None
    return float(ci.low), float(ci.high)


# -- steps with a collection against steps without -----------------------------------------

def event_effects(wall: np.ndarray, events: np.ndarray, window: int = EVENT_WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """For every step marked in `events`: how much longer it took than the median of the
    unmarked steps within `window` steps on either side (robust to drift), as extra time
    and as a ratio. Steps with no unmarked neighbour are skipped."""
    wall = np.asarray(wall, dtype=np.float64)
    events = np.asarray(events, dtype=bool)
    quiet = ~events
    extra, ratio = [], []
    for i in np.flatnonzero(events):
        lo, hi = max(0, i - window), min(len(wall), i + window + 1)
        around = wall[lo:hi][quiet[lo:hi]]
        if len(around) == 0:
            continue
        base = float(np.median(around))
        extra.append(wall[i] - base)
        ratio.append(wall[i] / base if base > 0 else math.nan)
    return np.asarray(extra), np.asarray(ratio)


def event_summary(walls: list[np.ndarray], events: list[np.ndarray]) -> dict:
    """Steps with an event (a full collection) against steps without, pooled over repeats:
    how many, how often, what each costs (median extra time and ratio to the neighbouring
    steps, with order-statistic intervals) and the share of all step time they cost."""
    extras, ratios, gaps = [], [], []
    count = steps = 0
    total_wall = 0.0
    for wall, ev in zip(walls, events):
        ev = np.asarray(ev) > 0
        e, r = event_effects(wall, ev)
        extras.append(e)
        ratios.append(r)
        where = np.flatnonzero(ev)
        gaps.append(np.diff(where))
        count += int(ev.sum())
        steps += len(wall)
        total_wall += float(np.sum(wall))
    extra = np.concatenate(extras) if extras else np.array([])
    ratio = np.concatenate(ratios) if ratios else np.array([])
    gap = np.concatenate(gaps) if gaps else np.array([])
    out = {"rate": rate(count, steps), "count": count, "steps": steps}
    if count:
        out.update({
            "extra_ns": float(np.median(extra)) if len(extra) else None,
            "extra_ci_ns": median_interval(extra),
            "extra_values_ns": extra.tolist() if len(extra) < FEW_EVENTS else None,
            "ratio": float(np.median(ratio)) if len(ratio) else None,
            "ratio_ci": median_interval(ratio),
            "period": float(np.median(gap)) if len(gap) else None,
            "cost_share": float(np.sum(np.clip(extra, 0, None)) / total_wall) if total_wall else 0.0,
        })
    return out


# -- stability of one repeat ----------------------------------------------------------------------

def _detrended(x: np.ndarray, window: int = 21) -> np.ndarray:
    """`x` less its running median: what is left is the step-to-step noise."""
    if len(x) <= window:
        return x - np.median(x)
    half = window // 2
    padded = np.pad(x, half, mode="edge")
    level = np.median(np.lib.stride_tricks.sliding_window_view(padded, window), axis=1)
    return x - level


def drift(wall) -> dict | None:
    """Whether the first and last thirds of a repeat differ by more than noise: their
    medians differ by more than DRIFT_MIN_EFFECT and a rank test on block medians (blocks
    as long as the series' autocorrelation asks) rejects equality at DRIFT_P. Returns the
    evidence when they do, else None."""
    wall = np.asarray(wall, dtype=np.float64)
    n = len(wall)
    third = n // 3
    if third < 6:
        return None
    first, last = wall[:third], wall[n - third:]
    change = float(np.median(last) / np.median(first) - 1)
    if abs(change) <= DRIFT_MIN_EFFECT:
        return None
    block = block_length(_detrended(wall))  # a level change would make the blocks as long as the series
    nblocks = third // block
    if nblocks < 4:
        return None
    bm = lambda x: np.median(x[: nblocks * block].reshape(nblocks, block), axis=1)
    p = float(sst.mannwhitneyu(bm(first), bm(last), alternative="two-sided").pvalue)
    if p >= DRIFT_P:
        return None
    return {"change": change, "p": p, "block": block}


def spikes(wall, factor: float) -> np.ndarray:
    """Indices of steps slower than `factor` x the median step (a secondary, GC-blind view)."""
    wall = np.asarray(wall, dtype=np.float64)
    return np.flatnonzero(wall > factor * np.median(wall))
