"""Will a cell fit? Its memory, estimated before anything is launched.

A worker holds the dataset (twice: host and device), the batch schedule, the per-step
arrays of the probe and of the result document, the networks with their optimizer
state, and the bookkeeping a loop may keep; on top of that comes the interpreter with
JAX (or Julia) loaded. The estimate errs on the large side for the parts that grow
with steps and networks, which are the parts a typo makes huge.
"""

from __future__ import annotations

import dataclasses

from .errors import UsageError

BASE_BYTES = 600 * 2**20  # an interpreter with JAX, Equinox and Flax imported, and XLA's pools
JULIA_BASE_BYTES = 1500 * 2**20  # Julia with Flux/Lux/SimpleChains loaded and compiled
PER_STEP_BYTES = 700  # probe arrays, event log, result lists of Python ints and their JSON text
PER_PARAM_BYTES = 4 * 4 * 2  # float32 parameters, gradients, two Adam moments; donated copies in flight
PER_SAMPLE_BYTES = 28 * 28 * 4 * 2  # float32 images on the host and on the device
REAL_SAMPLES = 60_000
SYNTHETIC_SAMPLES = 12_000
METRICS_ENTRY_BYTES = 360  # one {"step": i, "loss": float} dict kept per network per step


@dataclasses.dataclass(frozen=True)
class Estimate:
    total: int
    parts: dict[str, int]


def estimate(cell, samples: int | None = None, language: str = "python") -> Estimate:
    """Bytes a worker running `cell` needs at its peak, by part."""
    samples = samples or REAL_SAMPLES
    steps = cell.warmup + cell.steps
    parts = {
        "runtime": JULIA_BASE_BYTES if language == "julia" else BASE_BYTES,
        "dataset": samples * PER_SAMPLE_BYTES,
        # int32 indices in Python, Int64 copies in Julia
        "schedule": steps * cell.batch_size * (4 + (8 if language == "julia" else 0)),
        "per-step records": steps * PER_STEP_BYTES,
        "networks": cell.networks * cell.params_per_network * PER_PARAM_BYTES,
    }
    if cell.bookkeeping == "metrics":
        parts["bookkeeping"] = cell.steps * cell.networks * METRICS_ENTRY_BYTES
    return Estimate(sum(parts.values()), parts)


def available_bytes() -> int | None:
    """Memory the machine can give a new process now (MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def check(cells, samples: int | None, language_of) -> None:
    """Refuse (one line, `UsageError`) the plan when one of its cells would not fit in the
    memory available now. Cells run one at a time, so the largest one is what counts."""
    avail = available_bytes()
    if avail is None or not cells:
        return
    worst, est = None, None
    for cell in cells:
        e = estimate(cell, samples, language_of(cell))
        if est is None or e.total > est.total:
            worst, est = cell, e
    if est.total > avail:
        big = max(est.parts, key=est.parts.get)
        raise UsageError(
            f"{worst.label} would need about {gib(est.total)} ({big}: {gib(est.parts[big])}; "
            f"{worst.steps:,} steps, {worst.networks:,} networks, batch {worst.batch_size}) but "
            f"{gib(avail)} is available; use fewer --steps or --networks")
