"""Simulated step series with the structure measured on gcbench's 2-core machines, for
tests whose right answer is known: AR(1) noise on the log of the step time (lag-1
correlation 0.6, step-to-step spread 10 %), a random level per repeat (the process's
luck, 5 % spread between repeats: 3.5-7.4 % was measured for 100-step repeats of
jax and equinox-filter on mlp and lenet5), and optionally full collections that add
a fixed pause every `full_every` steps."""

from __future__ import annotations

import numpy as np

from gcbench import results
from gcbench.config import Cell

PHI, STEP_SD, SHIFT_SD = 0.6, 0.10, 0.05


def series(rng, n: int, base_ms: float, phi: float = PHI, sd: float = STEP_SD, shift_sd: float = SHIFT_SD,
           full_every: int = 0, pause_ms: float = 0.0):
    innov = rng.normal(0, sd * np.sqrt(1 - phi**2), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + innov[i]
    wall = base_ms * 1e6 * np.exp(x + rng.normal(0, shift_sd))
    gc_ns = np.zeros(n)
    colls = np.zeros((n, 3), np.int64)
    if full_every:
        start = int(rng.integers(0, full_every))
        colls[start::full_every, 2] = 1
        gc_ns[start::full_every] = pause_ms * 1e6
        wall[start::full_every] += pause_ms * 1e6
    return wall.astype(np.int64), gc_ns.astype(np.int64), colls


def docs(rng, repeats: int = 3, base_ms: float = 10.0, steps: int = 300, backend: str = "jax",
         workload: str = "mlp", policy: str = "default", env: str | None = None, **kw) -> list[dict]:
    out = []
    for r in range(repeats):
        cell = Cell(backend, workload, policy, r, 2, 4992, steps, 2, 0, 10, env=env)
        wall, gc_ns, colls = series(rng, steps, base_ms, **kw)
        out.append(results.new(cell, "ok", data={"kind": "synthetic"},
                               metadata={"cpu": "sim", "cpu_count": 2, "machine": "x86_64"},
                               wall_ns=wall.tolist(), gc_ns=gc_ns.tolist(), gc_collections=colls.tolist(),
                               loss={"step": [0], "value": [2.3]}))
    return out
