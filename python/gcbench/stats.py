"""Statistics of one cell's per-step series, and the comparison of two series.

Everything here works on plain per-step arrays so that it can be tested against series
with known answers; `summary(doc)` applies it to a result document.
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_SPIKE_FACTOR = 3.0
MIN_STEPS = 100  # fewer timed steps than this: the cell is flagged unstable
MAX_CI_WIDTH = 0.10  # a median whose 95 % interval is wider than this fraction: unstable
BOOTSTRAP_SAMPLES = 1000


def spikes(wall: np.ndarray, factor: float = DEFAULT_SPIKE_FACTOR) -> np.ndarray:
    """Indices of steps slower than `factor` x the median step."""
    wall = np.asarray(wall, dtype=np.float64)
    return np.flatnonzero(wall > factor * np.median(wall))


def spike_period(indices: np.ndarray) -> float | None:
    """Median gap (in steps) between consecutive spikes; None with fewer than two."""
    return float(np.median(np.diff(indices))) if len(indices) >= 2 else None


def bootstrap_median_ci(values: np.ndarray, level: float = 0.95, samples: int = BOOTSTRAP_SAMPLES,
                        seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median (seeded: reproducible)."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    medians = np.median(values[rng.integers(0, len(values), (samples, len(values)))], axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(medians, [tail, 100 - tail])
    return float(lo), float(hi)


def full_collections(doc: dict) -> np.ndarray:
    """Per step: number of full (oldest-generation) collections.

    Python results count generation-2 collections; Julia results carry `gc_full` (full
    sweeps) directly.
    """
    if "gc_full" in doc:
        return np.asarray(doc["gc_full"], dtype=np.int64)
    colls = np.asarray(doc["gc_collections"], dtype=np.int64).reshape(len(doc["wall_ns"]), -1)
    return colls[:, -1]


def series_stats(wall_ns, gc_ns, collections, full, alloc_bytes=None,
                 spike_factor: float = DEFAULT_SPIKE_FACTOR) -> dict:
    """All per-cell statistics from per-step arrays (times in, milliseconds out)."""
    wall = np.asarray(wall_ns, dtype=np.float64)
    gc_ns = np.asarray(gc_ns, dtype=np.float64)
    colls = np.asarray(collections, dtype=np.int64).reshape(len(wall), -1)
    full = np.asarray(full, dtype=np.int64)
    n = len(wall)
    median = float(np.median(wall))
    lo, hi = bootstrap_median_ci(wall)
    idx = spikes(wall, spike_factor)
    out = {
        "steps": n,
        "median_ms": median / 1e6,
        "mean_ms": float(wall.mean()) / 1e6,
        "p90_ms": float(np.percentile(wall, 90)) / 1e6,
        "p99_ms": float(np.percentile(wall, 99)) / 1e6,
        "max_ms": float(wall.max()) / 1e6,
        "max_over_median": float(wall.max() / median) if median > 0 else math.nan,
        "median_ci_ms": (lo / 1e6, hi / 1e6),
        "gc_share": float(gc_ns.sum() / wall.sum()) if wall.sum() > 0 else 0.0,
        "gc_ms_total": float(gc_ns.sum()) / 1e6,
        "spike_factor": spike_factor,
        "spikes": len(idx),
        "spike_period": spike_period(idx),
        "spikes_with_full_gc": float((full[idx] > 0).mean()) if len(idx) else None,
        "collections": colls.sum(axis=0).tolist(),
        "collections_per_1000": (colls.sum(axis=0) * 1000.0 / n).tolist(),
        "full_per_1000": float(full.sum() * 1000.0 / n),
        # How much slower a step is when a full collection runs in it (median over median).
        "full_gc_step_ratio": float(np.median(wall[full > 0]) / median) if (full > 0).any() and median > 0 else None,
        "alloc_bytes_per_step": float(np.mean(alloc_bytes)) if alloc_bytes is not None else None,
    }
    out["warnings"] = stability_warnings(out)
    return out


def stability_warnings(s: dict) -> list[str]:
    """Why a cell's numbers should be read with care (empty when they look stable)."""
    warnings = []
    if s["steps"] < MIN_STEPS:
        warnings.append(f"only {s['steps']} timed steps (< {MIN_STEPS})")
    lo, hi = s["median_ci_ms"]
    if s["median_ms"] > 0 and (hi - lo) / s["median_ms"] > MAX_CI_WIDTH:
        warnings.append(f"wide 95 % interval of the median ({lo:.3g}-{hi:.3g} ms)")
    return warnings


def summary(doc: dict, spike_factor: float = DEFAULT_SPIKE_FACTOR) -> dict:
    """`series_stats` of an `ok` result document."""
    return series_stats(doc["wall_ns"], doc["gc_ns"], doc["gc_collections"], full_collections(doc),
                        doc.get("alloc_bytes"), spike_factor)


def mann_whitney(a, b) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test with tie correction (normal approximation).

    Returns (U of `a`, p-value). Step times are skewed and spiky; a rank test does not
    assume normality, which is why it is used instead of Student's t.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n1, n2 = len(a), len(b)
    both = np.concatenate([a, b])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(len(both))
    sorted_vals = both[order]
    # Average ranks over ties.
    start = 0
    tie_term = 0.0
    while start < len(both):
        end = start
        while end + 1 < len(both) and sorted_vals[end + 1] == sorted_vals[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        t = end - start + 1
        tie_term += t**3 - t
        start = end + 1
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return float(u1), 1.0
    z = (abs(u1 - mean) - 0.5) / math.sqrt(var)  # continuity correction
    return float(u1), float(math.erfc(max(z, 0.0) / math.sqrt(2)))
