"""Statistics of one cell's per-step series."""

from __future__ import annotations

import numpy as np

DEFAULT_SPIKE_FACTOR = 3.0


def summary(doc: dict, spike_factor: float = DEFAULT_SPIKE_FACTOR) -> dict:
    """The numbers a summary table shows for an `ok` result (times in ms)."""
    wall = np.asarray(doc["wall_ns"], dtype=np.float64)
    gc_ns = np.asarray(doc["gc_ns"], dtype=np.float64)
    colls = np.asarray(doc["gc_collections"], dtype=np.int64).reshape(len(wall), -1)
    median = float(np.median(wall))
    spikes = wall > spike_factor * median
    return {
        "steps": len(wall),
        "median_ms": median / 1e6,
        "mean_ms": float(wall.mean()) / 1e6,
        "p99_ms": float(np.percentile(wall, 99)) / 1e6,
        "max_ms": float(wall.max()) / 1e6,
        "max_over_median": float(wall.max() / median) if median > 0 else float("nan"),
        "gc_share": float(gc_ns.sum() / wall.sum()) if wall.sum() > 0 else 0.0,
        "collections": colls.sum(axis=0).tolist(),
        "spikes": int(spikes.sum()),
    }
