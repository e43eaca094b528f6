"""Simulated step series with the structure measured on gcbench's 2-core machines, for
tests whose right answer is known. The noise comes from the committed raw results
(`reports/*/results.tar.gz`, measured with `benchmarks/noise.py`): AR(1) noise on the
log of the step time (lag-1 correlation 0.65, step-to-step spread 10 %) and a level per
repeat (the process's luck: about 10 % between repeats, 8.4-12.7 % pooled over the five
reports' cells). Full collections follow a fixed schedule, the same in every repeat, as
Python's collector does for a given program; `jitter` moves it per repeat."""

from __future__ import annotations

import numpy as np

from gcbench.measuring import results
from gcbench.measuring.cell import Cell

PHI, STEP_SD, SHIFT_SD = 0.65, 0.10, 0.10


def ar1(rng, n: int, phi: float = PHI, sd: float = STEP_SD, size: int | None = None) -> np.ndarray:
    """Stationary AR(1) series (rows when `size`), lag-1 `phi`, marginal spread `sd`."""
    shape = (n,) if size is None else (size, n)
    innov = rng.normal(0, sd * np.sqrt(1 - phi**2), shape)
    x = np.empty(shape)
    x[..., 0] = rng.normal(0, sd, shape[:-1])
    for i in range(1, n):
        x[..., i] = phi * x[..., i - 1] + innov[..., i]
    return x


def series(rng, n: int, base_ms: float, phi: float = PHI, sd: float = STEP_SD, shift_sd: float = SHIFT_SD,
           full_every: int = 0, pause_ms: float = 0.0, start: int = 0, jitter: bool = False, shift: float = 0.0):
    wall = base_ms * 1e6 * np.exp(ar1(rng, n, phi, sd) + rng.normal(0, shift_sd) + shift)
    gc_ns = np.zeros(n)
    colls = np.zeros((n, 3), np.int64)
    if full_every:
        first = int(rng.integers(0, full_every)) if jitter else start % full_every
        colls[first::full_every, 2] = 1
        gc_ns[first::full_every] = pause_ms * 1e6
        wall[first::full_every] += pause_ms * 1e6
    return wall.astype(np.int64), gc_ns.astype(np.int64), colls


def docs(rng, repeats: int = 3, base_ms: float = 10.0, steps: int = 300, backend: str = "jax",
         workload: str = "mlp", policy: str = "default", env: str | None = None, run_id: str | None = None,
         rounds: list[float] | None = None, **kw) -> list[dict]:
    """`repeats` result documents of one cell; `rounds` adds a shift (log scale) per round,
    shared by every cell given the same list, as a drift of the machine between rounds."""
    out = []
    for r in range(repeats):
        cell = Cell(backend, workload, policy, r, 2, 4992, steps, 2, 0, 10, env=env)
        wall, gc_ns, colls = series(rng, steps, base_ms, shift=rounds[r] if rounds else 0.0, **kw)
        out.append(results.new(cell, "ok", data={"kind": "synthetic"},
                               metadata={"cpu": "sim", "cpu_count": 2, "machine": "x86_64"},
                               machine_state={"run_id": run_id} if run_id else {},
                               wall_ns=wall.tolist(), gc_ns=gc_ns.tolist(), gc_collections=colls.tolist(),
                               loss={"step": [0], "value": [2.3]}))
    return out


def fgn(rng, n: int, hurst: float, sd: float, size: int = 1) -> np.ndarray:
    """Fractional Gaussian noise (rows): long memory with Hurst exponent `hurst`, marginal
    spread `sd`; exact, by circulant embedding (Davies and Harte). Real step series look like
    this: lag-1 about 0.6 and correlations that decay slowly (Hurst about 0.8), not AR(1)."""
    k = np.arange(n + 1, dtype=np.float64)
    gamma = 0.5 * ((k + 1) ** (2 * hurst) - 2 * k ** (2 * hurst) + np.abs(k - 1) ** (2 * hurst))
    row = np.concatenate([gamma, gamma[-2:0:-1]])  # the first row of a circulant of size 2n
    lam = np.clip(np.fft.fft(row).real, 0, None)
    m = len(row)
    z = rng.normal(size=(size, m)) + 1j * rng.normal(size=(size, m))
    y = np.fft.fft(np.sqrt(lam / (2 * m)) * z, axis=-1)
    return sd * np.sqrt(2) * y.real[:, :n]


def heavy_shifts(rng, shape, sd: float) -> np.ndarray:
    """Levels of processes with heavier tails than a Gaussian's (Student's t, 4 degrees of
    freedom, scaled to spread `sd`): the occasional process that ran much slower."""
    return rng.standard_t(4, shape) * sd / np.sqrt(2.0)


# A project's budgeted-loop helpers, as the text of its test file begins (the pytest sessions
# of tests/test_budget_in_suites.py and benchmarks/hostile.py): `keeping` keeps `width`
# objects a step, `for_seconds` steps for a time, `runs(name)` counts the runs of a body
# in a file, and `test_zz_after` shows that the session reached the tests after the rest.
BUDGETED_LOOP_HELPERS = """
import gc, os, pathlib, signal, sys, threading, time
import pytest

KEEP = []

def keeping(b, n, width=40, pause=0.0):
    for i in range(n):
        with b.step():
            KEEP.append([{"k": i} for _ in range(width)])
            if pause:
                time.sleep(pause)
    KEEP.clear()

def for_seconds(b, seconds):
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        with b.step():
            KEEP.append([{"k": 1} for _ in range(4)])
    KEEP.clear()

def runs(name):
    p = pathlib.Path(name)
    n = int(p.read_text()) + 1 if p.exists() else 1
    p.write_text(str(n))
    return n

def test_zz_after():
    pathlib.Path("ran-after").write_text("yes")
"""
