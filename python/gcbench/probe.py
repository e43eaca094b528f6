"""The step timer and GC probe: what every Python backend's steps are measured with.

`gc.callbacks` brackets every collection: our start hook is put at the *front* of the
list and our stop hook at the *end*, so callbacks registered by others (jaxlib has one)
run inside the measured pause. Per step the probe records:

- wall ns, GC pause ns, the collections of each generation and the objects collected;
- the GC *pressure*: the net number of new tracked (container) objects the step made,
  the quantity that drives collections. It is the difference of `gc.get_count()[0]`
  over the step, plus the count each collection found when it started (a collection
  resets the count). CPython does not count below zero, so a step that frees more
  than it allocates right after a collection reads a little high;
- optionally (`alloc_blocks=True`) the net change of allocated memory blocks, which
  walks the heap (tens of microseconds with JAX loaded), so it is off by default;
- where the loop calls `dispatched()` once the step function has returned and before it
  waits for the results (JAX dispatches asynchronously), the *host* ns: the time the
  step spent in Python and dispatch before the wait. On a GPU the rest is the device's
  time; a collector's pause is host time, paid while the device idles.

Every collection is also logged (step, generation, pause, objects collected) for the
pause-length views of the report. Arrays are preallocated; the hot path does integer
arithmetic and stores into them, and allocates nothing that outlives a step.
"""

from __future__ import annotations

import gc
import sys
import time

import numpy as np

GENERATIONS = 3


class StepProbe:
    """Measures up to `capacity` steps. Use as a context manager around the timed loop.

    Example:
        with StepProbe(steps) as probe:
            for i in range(steps):
                probe.begin()
                step(i)
                probe.end(i)
    """

    def __init__(self, capacity: int, alloc_blocks: bool = False, event_capacity: int | None = None):
        self.capacity = capacity
        self.alloc_blocks_enabled = alloc_blocks
        self.wall_ns = np.zeros(capacity, np.int64)
        self.gc_ns = np.zeros(capacity, np.int64)
        self.gc_collections = np.zeros((capacity, GENERATIONS), np.int64)
        self.gc_collected = np.zeros(capacity, np.int64)
        self.gc_pressure = np.zeros(capacity, np.int64)
        self.alloc_blocks = np.zeros(capacity if alloc_blocks else 0, np.int64)
        self.host_ns = np.zeros(capacity, np.int64)
        self.host_marked = 0  # steps whose host time was marked (all of them, or none)
        ecap = event_capacity if event_capacity is not None else 2 * capacity + 256
        self.ev_step = np.zeros(ecap, np.int64)
        self.ev_generation = np.zeros(ecap, np.int64)
        self.ev_pause = np.zeros(ecap, np.int64)
        self.ev_collected = np.zeros(ecap, np.int64)
        self.events = 0
        self.events_dropped = 0
        # Running totals updated by the callbacks; steps take differences of them.
        self._pause_total = 0
        self._collected_total = 0
        self._reset_total = 0  # gen-0 counts found by collections when they started
        self._gen_totals = [0] * GENERATIONS
        self._pause_start = 0
        self._depth = 0
        # Snapshot at begin(); plain attributes so begin()/end() allocate nothing lasting.
        self._t0 = 0
        self._t_host = 0
        self._pause0 = 0
        self._collected0 = 0
        self._reset0 = 0
        self._count0 = 0
        self._gen0 = [0] * GENERATIONS
        self._blocks0 = 0
        self._current = -1  # the step running now; -1 between steps
        self.steps = 0
        self.installed = False

    # -- gc.callbacks ---------------------------------------------------------------
    def _on_start(self, phase: str, info: dict) -> None:
        if phase == "start":
            if self._depth == 0:
                self._reset_total += gc.get_count()[0]
                self._pause_start = time.perf_counter_ns()
            self._depth += 1

    def _on_stop(self, phase: str, info: dict) -> None:
        if phase == "stop" and self._depth:
            self._depth -= 1
            pause = 0
            if self._depth == 0:
                pause = time.perf_counter_ns() - self._pause_start
                self._pause_total += pause
            gen = info["generation"]
            gen = gen if gen < GENERATIONS else GENERATIONS - 1
            self._gen_totals[gen] += 1
            self._collected_total += info["collected"]
            k = self.events
            if k < len(self.ev_step):
                self.ev_step[k] = self._current
                self.ev_generation[k] = gen
                self.ev_pause[k] = pause
                self.ev_collected[k] = info["collected"]
                self.events = k + 1
            else:
                self.events_dropped += 1

    def install(self) -> None:
        """Put the hooks in place: start first in `gc.callbacks`, stop last."""
        if not self.installed:
            gc.callbacks.insert(0, self._on_start)
            gc.callbacks.append(self._on_stop)
            self.installed = True

    def uninstall(self) -> None:
        for hook in (self._on_start, self._on_stop):
            while hook in gc.callbacks:
                gc.callbacks.remove(hook)
        self.installed = False

    def bracket_ok(self) -> bool:
        """True when our hooks are still first and last (another library may have added one)."""
        cbs = gc.callbacks
        return bool(cbs) and cbs[0] == self._on_start and cbs[-1] == self._on_stop

    def __enter__(self) -> StepProbe:
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        self.uninstall()

    # -- per step -------------------------------------------------------------------
    def begin(self) -> None:
        g = self._gen_totals
        self._gen0[0], self._gen0[1], self._gen0[2] = g[0], g[1], g[2]
        self._pause0 = self._pause_total
        self._collected0 = self._collected_total
        self._current = self.steps
        self._events0 = self.events
        if self.alloc_blocks_enabled:
            self._blocks0 = sys.getallocatedblocks()
        self._reset0 = self._reset_total
        self._count0 = gc.get_count()[0]
        self._t_host = 0
        self._t0 = time.perf_counter_ns()

    def dispatched(self) -> None:
        """The step function has returned; what follows until `end` waits for its results."""
        self._t_host = time.perf_counter_ns()

    def end(self, i: int) -> None:
        t1 = time.perf_counter_ns()
        if self._t_host:
            self.host_ns[i] = self._t_host - self._t0
            self.host_marked += 1
        self.gc_pressure[i] = gc.get_count()[0] - self._count0 + self._reset_total - self._reset0
        self.wall_ns[i] = t1 - self._t0
        self.gc_ns[i] = self._pause_total - self._pause0
        g, g0, row = self._gen_totals, self._gen0, self.gc_collections[i]
        row[0], row[1], row[2] = g[0] - g0[0], g[1] - g0[1], g[2] - g0[2]
        self.gc_collected[i] = self._collected_total - self._collected0
        if self.alloc_blocks_enabled:
            self.alloc_blocks[i] = sys.getallocatedblocks() - self._blocks0
        self.steps = i + 1
        self._current = -1

    def abort(self) -> None:
        """Forget the step begun last (it raised): nothing is recorded for it, and the
        collections logged during it count as between steps (step -1)."""
        k = min(self.events, len(self.ev_step))
        self.ev_step[min(self._events0, k):k] = -1
        self._current = -1

    @property
    def total_gc_ns(self) -> int:
        """GC pause time since install, inside steps or not."""
        return self._pause_total

    def arrays(self) -> dict[str, list]:
        n = self.steps
        out = {
            "wall_ns": self.wall_ns[:n].tolist(),
            "gc_ns": self.gc_ns[:n].tolist(),
            "gc_collections": self.gc_collections[:n].tolist(),
            "gc_collected": self.gc_collected[:n].tolist(),
            "gc_pressure": self.gc_pressure[:n].tolist(),
        }
        if self.alloc_blocks_enabled:
            out["alloc_blocks"] = self.alloc_blocks[:n].tolist()
        if n and self.host_marked == n:
            out["host_ns"] = self.host_ns[:n].tolist()
        return out

    def event_log(self) -> dict:
        """Every collection seen: the step it fell in (-1: between steps), its generation,
        its pause in ns and the objects it collected; `dropped` when the log was full."""
        k = self.events
        return {"step": self.ev_step[:k].tolist(), "generation": self.ev_generation[:k].tolist(),
                "pause_ns": self.ev_pause[:k].tolist(), "collected": self.ev_collected[:k].tolist(),
                "dropped": self.events_dropped}
