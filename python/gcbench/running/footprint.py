"""Will a cell fit? Its memory, estimated before anything is launched.

A worker holds the dataset (twice: host and device), the batch schedule, the per-step
arrays of the probe and of the result document, the networks with their optimizer
state, and the bookkeeping a loop may keep; on top of that comes the interpreter with
JAX (or Julia) loaded. The estimate errs on the large side for the parts that grow
with steps and networks, which are the parts a typo makes huge.
"""

from __future__ import annotations

import dataclasses
import os
import stat

from ..core.errors import UsageError

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


MAX_DEPTH = 64  # control groups nested deeper than this are not followed (the kernel's own nest a few levels)
FILE_LIMIT = 64 * 1024  # bytes read of /proc/self/cgroup; a number file holds at most 20 digits


def _read_bytes(path: str, limit: int) -> bytes | None:
    """At most `limit` bytes of a regular file, without waiting on it (a FIFO is refused at
    once); None where it cannot be read, is not a regular file or is longer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def _read_int(path: str) -> int | None:
    """An integer file of a control group ("max", or anything but up to 20 ASCII digits:
    None, no limit read)."""
    data = _read_bytes(path, 64)
    text = (data or b"").strip()
    return int(text) if text.isdigit() and len(text) <= 20 else None  # bytes.isdigit: ASCII digits only


def _v1_room(root: str, v1: str) -> list[int]:
    """cgroup v1: the group's (or, unseen, the controller root's) limit less its usage."""
    base = os.path.join(root, "memory")
    for where in (os.path.join(base, v1.lstrip("/")), base):
        limit = _read_int(os.path.join(where, "memory.limit_in_bytes"))
        usage = _read_int(os.path.join(where, "memory.usage_in_bytes"))
        if limit is not None and usage is not None:
            return [max(limit - usage, 0)] if limit < 2**60 else []  # v1 writes "no limit" as a huge number
    return []


def _v2_rooms(root: str, v2: str) -> list[int]:
    """cgroup v2: every group from the process's up to the root, memory.max and memory.high
    less that group's memory.current."""
    rooms = []
    folder = os.path.normpath(os.path.join(root, v2.lstrip("/")))
    while True:
        current = _read_int(os.path.join(folder, "memory.current"))
        for name in ("memory.max", "memory.high"):
            limit = _read_int(os.path.join(folder, name))
            if limit is not None and current is not None:
                rooms.append(max(limit - current, 0))
        if os.path.normpath(folder) == os.path.normpath(root) or not folder.startswith(os.path.normpath(root)):
            return rooms
        folder = os.path.dirname(folder)


def cgroup_room(root: str = "/sys/fs/cgroup", proc: str = "/proc/self/cgroup") -> int | None:
    """What this process's control groups still let it take, in bytes, or None where no
    limit applies (or none can be read). As libuv's `uv_get_constrained_memory`, it follows
    the process's own group from /proc/self/cgroup, not the root's files (a SLURM job's
    `task/cgroup` or `systemd-run -p MemoryMax` sets the limit on the process's group):

    - cgroup v2 (the `0::PATH` line): every group from the process's up to the root, the
      smallest room of `memory.max` and `memory.high` less that group's `memory.current`;
    - cgroup v1 (the `memory` controller's line): `memory.limit_in_bytes` less
      `memory.usage_in_bytes` in that group's folder (or the controller's root, where the
      group is not visible, as in a container)."""
    data = _read_bytes(proc, FILE_LIMIT)
    if data is None:
        return None
    v1, v2 = _own_groups(data.decode("utf-8", errors="replace"))
    rooms = []
    if v1 is not None:
        rooms += _v1_room(root, v1)
    if v2 is not None and os.path.isfile(os.path.join(root, "cgroup.controllers")):
        rooms += _v2_rooms(root, v2)
    return min(rooms) if rooms else None


def _own_groups(text: str) -> tuple[str | None, str | None]:
    """The process's memory group in cgroup v1 and its group in v2, from /proc/self/cgroup's
    `text` (None where there is none; a v2 path deeper than any real hierarchy is not
    followed: each level is a few reads)."""
    lines = [line.split(":", 2) for line in text.splitlines() if line.count(":") >= 2 and "\0" not in line]
    v1 = next((path for _, controllers, path in lines if "memory" in controllers.split(",")), None)
    v2 = next((path for hid, controllers, path in lines if hid == "0" and controllers == ""), None)
    return v1, (None if v2 is not None and v2.count("/") > MAX_DEPTH else v2)


def available_bytes() -> int | None:
    """Memory this process can still take: the machine's available memory (MemAvailable),
    or less where its control groups leave less room (`cgroup_room`); None where unknown."""
    machine = _machine_available()
    room = cgroup_room()
    if machine is None or room is None:
        return room if machine is None else machine
    return min(machine, room)


def _machine_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def largest(cells, samples: int | None, language_of) -> tuple:
    """The cell that needs the most (what one worker may need), and its estimate."""
    return max(((c, estimate(c, samples, language_of(c))) for c in cells), key=lambda ce: ce[1].total)


def check(cells, samples: int | None, language_of) -> None:
    """Refuse (one line, `UsageError`) the plan when one of its cells would not fit in the
    memory available now. Cells run one at a time, so the largest one is what counts."""
    avail = available_bytes()
    if avail is None or not cells:
        return
    worst, est = largest(cells, samples, language_of)
    if est.total > avail:
        big = max(est.parts, key=est.parts.get)
        raise UsageError(
            f"{worst.label} would need about {gib(est.total)} ({big}: {gib(est.parts[big])}; "
            f"{worst.steps:,} steps, {worst.networks:,} networks, batch {worst.batch_size}) but "
            f"{gib(avail)} is available; use fewer --steps or --networks")
