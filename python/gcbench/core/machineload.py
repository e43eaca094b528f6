"""How busy the machine was while a repeat ran: the CPU that other processes used.

How it works, and why: docs/internals.md, `gcbench.core.machineload`.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing's own flag without importing typing (900 objects in a measured heap)
if TYPE_CHECKING:  # annotations only: nothing more in a worker's heap
    from collections.abc import Mapping, Sequence
    from typing import Any

# Loaded: other processes (and the hypervisor's steal) took more than this share of the
# machine's CPU during the repeat. On the project's 2-core machine a quiet repeat read 0.01-0.06
# cores of others and one beside two busy processes 1.2-1.5 (benchmarks/load_margins.py).
LOADED_SHARE = 0.15
MIN_SECONDS = 0.5  # shortest window read: a tick either way is then 0.02 cores per CPU
# shortest window read at all, where no window of MIN_SECONDS exists (a short loop of one's own,
# read without waiting): the counters' ticks then move others_cores by at most (cores + 1) ticks
# over the window, 0.2 cores at 2 cores and 0.15 s against a loaded share of 0.3 cores
SHORT_SECONDS = 0.15
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100


ROOT_ENV = "GCBENCH_ROOT_PID"  # the gcbench process that started a run: its descendants are gcbench's own


def _proc_stat() -> tuple[int, int] | None:
    """(busy, steal) jiffies of all CPUs since boot; None where /proc/stat is absent or
    reads as anything else than its counters."""
    try:
        with open("/proc/stat", "rb") as f:
            line = f.readline(4096).split()
    except OSError:
        return None
    if not line or line[0] != b"cpu" or len(line) < 8 or not all(x.isdigit() for x in line[1:11]):
        return None
    v = [int(x) for x in line[1:11]]
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest is inside user
    busy = v[0] + v[1] + v[2] + v[5] + v[6]
    return busy, (v[7] if len(v) > 7 else 0)


def _process_cpu(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, from /proc/PID/stat; None where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read(4096)
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()  # after the command name, which may hold anything
    if len(fields) < 13 or not (fields[1].isdigit() and fields[11].isdigit() and fields[12].isdigit()):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def family_cpu() -> dict[int, float] | None:
    """CPU seconds of gcbench's own other processes: the process named by GCBENCH_ROOT_PID
    (the manager of a run) and all its descendants (its runner, sibling workers and jobs),
    this process and its own threads left out. None outside a run gcbench started."""
    root = os.environ.get(ROOT_ENV, "")
    if not root.isdigit() or not os.path.isdir("/proc"):
        return None
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            got = _process_cpu(int(name))
            if got is not None:
                procs[int(name)] = got
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo, me = {}, [int(root)], os.getpid()
    while todo:
        pid = todo.pop()
        if pid in out or pid not in procs:
            continue
        if pid != me:
            out[pid] = procs[pid][1]
        todo += children.get(pid, [])
    return out


def _pressure_us() -> int | None:
    """Microseconds during which some runnable task waited for a CPU, since boot."""
    try:
        with open("/proc/pressure/cpu", "rb") as f:
            first = f.readline().split()
    except OSError:
        return None
    for part in first:
        if part.startswith(b"total="):
            return int(part[6:])
    return None


def snapshot(family: bool = True) -> tuple | None:
    """The counters as of now (None where the kernel does not give them); `family=False`:
    without gcbench's own other processes (a window from it counts them among the others)."""
    stat = _proc_stat()
    if stat is None:
        return None
    return (time.monotonic_ns(), stat[0], stat[1], time.process_time_ns() / 1e9, _pressure_us(),
            family_cpu() if family else None)


def between(start: tuple | None, end: tuple | None, cores: int | None, least: float = MIN_SECONDS) -> dict:
    """What the machine did between two snapshots of this process: `others_cores`, `steal`
    (a share of the machine), `cpu_pressure` (a share of the time, where recorded),
    `process_cpu_s` (this process's own CPU seconds) and `gcbench_cpu_s` (gcbench's own
    other processes, left out of the others: its manager, runner and sibling jobs). Empty
    where either is missing or the window is shorter than `least` seconds. Counters that went
    back (a reset, a hypervisor's correction) are doubt, read as loaded: `load_doubt` says
    why, and others_cores is the whole machine."""
    if start is None or end is None or not cores or cores < 1:
        return {}
    seconds = (end[0] - start[0]) / 1e9
    if seconds < least:
        return {}
    own = end[3] - start[3]
    busy = (end[1] - start[1]) / _TICK
    stolen = (end[2] - start[2]) / _TICK
    family = _family_cpu(start, end)
    out = {"load_seconds": round(seconds, 3),
           "others_cores": round(max(0.0, busy - own - family) / seconds, 3),
           "steal": round(min(1.0, max(0.0, stolen / seconds / cores)), 4),
           "process_cpu_s": round(own, 3)}
    if family:
        out["gcbench_cpu_s"] = round(family, 3)
    doubt = [what for what, delta in (("the busy counter", busy), ("the steal counter", stolen)) if delta < 0]
    if start[4] is not None and end[4] is not None:
        if end[4] < start[4]:
            doubt.append("the pressure counter")
        else:
            out["cpu_pressure"] = round(min(1.0, (end[4] - start[4]) / 1e6 / seconds), 4)
    if doubt:
        out["others_cores"] = float(cores)
        out["load_doubt"] = f"{' and '.join(doubt)} went back over the repeat: the load cannot be read"
    return out


def _family_cpu(start: tuple, end: tuple) -> float:
    """The CPU seconds gcbench's own other processes spent between two snapshots: a sibling
    that began in the window spent all its CPU in it; one that ended in it is lost."""
    if len(start) <= 5 or start[5] is None or end[5] is None:
        return 0.0
    return sum(cpu - start[5].get(pid, 0.0) for pid, cpu in end[5].items() if cpu >= start[5].get(pid, 0.0))


def load_reason(state: Mapping[str, Any], cores: int | None) -> str | None:
    """Why a repeat ran on a loaded machine, in words ("other processes used 1.4 of 2
    cores"), or None when it did not or recorded no reading. A reading that cannot be
    right (counters that went back, a negative or not-a-number share, no cores) is doubt,
    and doubt is loaded."""
    others, steal = state.get("others_cores"), state.get("steal")
    if state.get("load_doubt"):
        return str(state["load_doubt"])
    if not isinstance(others, (int, float)):
        return None
    if not isinstance(cores, int) or cores < 1:
        return "the machine's core count was not recorded: its load cannot be read"
    steal = steal if isinstance(steal, (int, float)) else 0.0
    import math  # here, not at the top: 55 objects in the heap a measured loop runs in

    if not (math.isfinite(others) and math.isfinite(steal)) or others < 0 or not 0 <= steal <= 1:
        return f"an impossible load reading (others {others!r} cores, steal {steal!r}): read as loaded"
    used = others + steal * cores
    if used <= LOADED_SHARE * cores:
        return None
    text = f"other processes used {others:.1f} of {cores} cores"
    if steal * cores >= 0.05:
        text += f" and the hypervisor stole {100 * steal:.0f} %"
    return text


def over_window(starts: Sequence[tuple | None], end: tuple | None, cores: int | None) -> dict:
    """The machine up to `end`, read without waiting: over the first of `starts` (newest
    first) that began MIN_SECONDS or more before it; where none did, over the oldest at the
    coarser SHORT_SECONDS (`load_window: "short"`); else nothing (too short to read)."""
    for start in starts:
        got = between(start, end, cores)
        if got:
            return got
    oldest = [s for s in starts if s is not None]
    got = between(oldest[-1], end, cores, SHORT_SECONDS) if oldest else {}
    return dict(got, load_window="short") if got else {}


def now(cores: int | None, seconds: float = 1.0) -> dict:
    """The others' CPU over the next `seconds` (this process idle meanwhile): is the
    machine loaded right now?"""
    start = snapshot()
    time.sleep(seconds)
    return between(start, snapshot(), cores)
