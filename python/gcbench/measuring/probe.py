"""The step timer and GC probe: what every Python backend's steps are measured with.

How it works, and why: docs/internals.md, `gcbench.measuring.probe`.
"""

from __future__ import annotations

import gc
import mmap
import os
import sys
import time

from . import gc_watch

TYPE_CHECKING = False  # typing's own flag without importing typing (900 objects in the measured heap)
if TYPE_CHECKING:  # annotations only: numpy, typing's aliases and the rest load after the loop, if at all
    from collections.abc import Callable
    from types import FrameType

    import numpy as np

GENERATIONS = 3
# what every step calls, looked up once (one global read a call, not two)
_isenabled, _get_count, _perf_ns = gc.isenabled, gc.get_count, time.perf_counter_ns
# The probe's columns: one item a step; three a step (a count per generation); one a logged collection
STEP_COLUMNS = ("wall_ns", "gc_ns", "cpu_ns", "gc_cpu_ns", "gc_collected", "gc_pressure", "gc_examined", "gc_promoted",
                "host_ns", "gap_ns", "gap_gc_ns", "gap_cpu_ns", "gap_gc_cpu_ns")
GENERATION_COLUMNS = ("gc_collections", "gap_collections", "gc_explicit")
EVENT_COLUMNS = ("ev_step", "ev_generation", "ev_pause", "ev_collected", "ev_examined")
_ITEM = {"q": 8, "b": 1}  # bytes of an item of each format
# the numpy arrays StepProbe had as attributes before 0.3: read through `column` since
DEPRECATED_ARRAYS = frozenset({*STEP_COLUMNS, *GENERATION_COLUMNS, *EVENT_COLUMNS, "gc_enabled", "alloc_blocks",
                               "rss_step", "rss_bytes", "old_after_full_step", "old_after_full_size"})


def columns(sizes: dict[str, tuple[int, str]]) -> dict[str, memoryview]:
    """Zeroed columns of `sizes` (items, and their format: "q" a 64-bit integer, "b" a byte),
    each a memoryview into one anonymous memory map. Pages the steps never reach are never
    touched (the resident set grows with the steps taken, as numpy's zeros did), nothing in
    them is an object the collector tracks, and numpy is not imported before the loop: its
    10,000 objects would join the heap whose schedule is measured (numpy reads them after,
    `StepProbe.column`). The 64-bit columns come first, so every item is aligned."""
    order = sorted(sizes, key=lambda name: -_ITEM[sizes[name][1]])
    region = mmap.mmap(-1, max(sum(n * _ITEM[f] for n, f in sizes.values()), 1))
    whole, out, at = memoryview(region), {}, 0
    for name in order:
        n, f = sizes[name]
        out[name] = whole[at:at + n * _ITEM[f]].cast(f)  # type: ignore[call-overload]  # "q" and "b" are formats
        at += n * _ITEM[f]
    return {name: out[name] for name in sizes}


class StepProbe:
    """Measures up to `capacity` steps. Use as a context manager around the timed loop.

    Example:
        with StepProbe(steps) as probe:
            for i in range(steps):
                probe.begin()
                step(i)
                probe.end(i)
    """

    # No __slots__: each slot is a descriptor in the class, 95 objects before the loop that
    # delayed its full collections (benchmarks/schedule_footprint.py). Attributes read
    # through the instance's dict cost a step +46 ns of CPU and a collection +1.1 µs against
    # slots (benchmarks/step_overhead.py, 5 rounds of 30,000 steps, median).

    # The columns (`columns`), step i's item at i; a column of generations holds three a
    # step, step i's at 3i, 3i + 1 and 3i + 2; `column(name)` reads one as numpy after the loop.
    _wall_ns: memoryview
    _gc_ns: memoryview
    _cpu_ns: memoryview  # the step in the thread's CPU time
    _gc_cpu_ns: memoryview
    _gc_collected: memoryview
    _gc_pressure: memoryview
    # per step, with the gap before it (every collection the loop pays for): the objects the
    # collections examined (the generations each scanned, frozen objects excluded), and the
    # objects that survived a collection of generation 1 into the oldest (promotions)
    _gc_examined: memoryview
    _gc_promoted: memoryview
    _host_ns: memoryview
    _gap_ns: memoryview  # before each step: since the previous one ended, its pauses, in wall and CPU time
    _gap_gc_ns: memoryview
    _gap_cpu_ns: memoryview
    _gap_gc_cpu_ns: memoryview
    _gc_collections: memoryview
    _gap_collections: memoryview
    _gc_explicit: memoryview  # explicit collections (gc.collect() calls)
    _gc_enabled: memoryview  # the collector on (1) or off (0) as each step began
    _alloc_blocks: memoryview
    _ev_step: memoryview  # per logged collection
    _ev_generation: memoryview
    _ev_pause: memoryview
    _ev_collected: memoryview
    _ev_examined: memoryview
    _rss_step: memoryview
    _rss_bytes: memoryview
    _old_after_full_step: memoryview
    _old_after_full_size: memoryview
    _old_after_full_bytes: memoryview  # the memory in use there (`read_malloc`)

    def __init__(self, capacity: int, alloc_blocks: bool = False, event_capacity: int | None = None,
                 rss_every: int = 0, step_cpu: bool = True):
        self.capacity = capacity
        self.alloc_blocks_enabled = alloc_blocks
        # each step's and gap's CPU time (two reads of the thread's CPU clock a step, 0.4 µs each
        # where it is a system call); without, the loop's CPU time in all (`loop_cpu_ns`), read at
        # `start_clock` and `close_clock`, and each pause's as ever
        self.step_cpu = step_cpu
        self.loop_cpu_ns = 0
        self._cpu_start = 0
        ecap = event_capacity if event_capacity is not None else 2 * capacity + 256
        # resident set size, every `rss_every` steps (0: never; or where /proc is absent)
        self.rss_every = rss_every if rss_every > 0 and _statm_fd() is not None else 0
        n_rss = capacity // self.rss_every + 2 if self.rss_every else 0
        # Per-step columns, flat (a row of three generations is three items: step i's at
        # 3i, 3i + 1, 3i + 2), in one anonymous memory map (`columns`)
        views = columns({**dict.fromkeys(STEP_COLUMNS, (capacity, "q")),
                         **dict.fromkeys(GENERATION_COLUMNS, (capacity * GENERATIONS, "q")),
                         **dict.fromkeys(EVENT_COLUMNS, (ecap, "q")),
                         "alloc_blocks": (capacity if alloc_blocks else 0, "q"),
                         "rss_step": (n_rss, "q"), "rss_bytes": (n_rss, "q"),
                         "old_after_full_step": (64, "q"), "old_after_full_size": (64, "q"),
                         "old_after_full_bytes": (64, "q"),
                         "gc_enabled": (capacity, "b")})
        for name, view in views.items():
            setattr(self, f"_{name}", view)
        self.host_marked = 0  # steps whose host time was marked (all of them, or none)
        self.events = 0
        self.events_dropped = 0
        # collections outside any step: their pauses (wall and CPU), per generation, and objects collected
        self.between_ns = 0
        self.between_cpu_ns = 0
        self.between_gen = [0] * GENERATIONS
        self.between_collected = 0
        self.between_explicit = [0] * GENERATIONS
        # explicit collections: in all, and by the calling line
        self.explicit_sites: dict[str, int] = {}
        self.user_files: frozenset[str] = frozenset()  # a user's loop: its files, where explicit calls are named
        self._explicit_totals = [0] * GENERATIONS
        self._explicit0 = [0] * GENERATIONS
        self._explicit_now = False
        self._between_ns_end = 0  # the between totals when the last step ended
        self._between_cpu_end = 0
        self._c1_last = 0  # the thread's CPU clock when the last step ended
        self._between_gen_end = [0] * GENERATIONS
        self.first_t0 = 0  # the first step's start and the last step's end: the loop's span
        self.last_t1 = 0
        self.rss_samples = 0
        self._next_rss = 0 if self.rss_every else sys.maxsize
        self._next_look = self._next_rss  # the next step after which `_look` has something to do
        self._extras = step_cpu or alloc_blocks  # what `_begin_extras` and `_end_extras` read
        # Running totals updated by the callbacks; steps take differences of them.
        self._pause_total = 0
        self._pause_cpu_total = 0
        self._collected_total = 0
        self._examined_total = 0
        self._promoted_total = 0
        self._examined_end = 0  # the totals when the last step ended
        self._promoted_end = 0
        self._examined_now = 0  # the collection running now: the objects it examines
        self._spare: list = [[]]  # a list lent to the free list while the older generations are counted
        # full collections seen, the oldest generation's size as last listed, and whether to list
        # it again as the step ends; and those step-end sizes (at most one per power of two)
        self._oldest = [0, 0, 0]
        self.old_after_full_n = 0
        # the memory in use at those step ends too, where the collector has just freed what was
        # dead: the C allocator's bytes where `read_malloc` (`gcbench.measure` sets it where it
        # read them as the timed steps began), else the resident set's
        self.read_malloc = False
        self._reset_total = 0  # gen-0 counts found by collections when they started
        self._gen_totals = [0] * GENERATIONS
        self._pause_start = 0
        self._pause_cpu_start = 0
        self._depth = 0
        # Collections started so far (`_seen`), and as the step now running began and as the last
        # one ended: a step or gap with no collection in it is recorded by a few stores, and the
        # totals a collection moves are read by its first one, as it starts (`_mark_totals`).
        self._seen = 0
        self._seen_begin = 0
        self._seen_end = 0
        self._events0 = 0
        # Snapshot at begin(); plain attributes so begin()/end() allocate nothing lasting.
        self._t0 = 0
        self._c0 = 0
        self._pause0 = 0
        self._pause_cpu0 = 0
        self._collected0 = 0
        self._reset0 = 0
        self._count0 = 0
        self._gen0 = [0] * GENERATIONS
        self._blocks0 = 0
        self._current = -1  # the step running now; -1 between steps
        self.steps = 0
        # `begin`'s guard: from `limit` steps on, with a step running, or with an interrupt kept,
        # `begin` calls `on_boundary` instead (`gcbench.measure`: the warm-up's end, its
        # errors), or without one raises
        self.limit = capacity
        self.on_boundary: Callable[[], None] | None = None
        # where `exit` goes when this probe has no step running: the probe that took over
        # (`gcbench.measure`'s timed probe, which began the first timed step inside the
        # warm-up probe's `begin`; `with` had read the warm-up probe's `exit` already)
        self.exit_to: StepProbe | None = None
        self.aborted = 0  # steps begun and aborted (they raised): not recorded
        self.installed = False
        # what a hook raised (a signal's exception), kept: one slot, which `gcbench.measure`
        # shares among its probes and reads once a step
        self.kept: list[BaseException | None] = [None]
        # the hooks, bound by `prepare` (or `install`) and dropped by `uninstall` (they refer
        # to the probe: kept, they would make it a cycle that only the collector frees)
        self._start_hook: Callable[[str, dict], None] | None = None
        self._stop_hook: Callable[[str, dict], None] | None = None

    # -- gc.callbacks ---------------------------------------------------------------
    # CPython reports an exception raised in a gc callback as unraisable and goes on: a
    # Ctrl-C (or a timeout's signal) that lands while a hook runs would be lost. The hooks
    # keep it instead (`interrupted`), and `gcbench.measure` raises it at the next step
    # boundary or as the block ends.
    # Every hook in gc.callbacks is called at both phases: each of ours has work at one, and
    # tells the phase inside its `try` (a signal landing before it would be lost) without a
    # call to its body at the other (two calls fewer a collection)
    def _on_start(self, phase: str, info: dict) -> None:
        try:
            if phase == "start":
                self._start_hook_body(info)
        except BaseException as e:
            self.keep_interrupt(e)

    def _on_stop(self, phase: str, info: dict) -> None:
        try:
            if phase == "stop":
                self._stop_hook_body(info)
        except BaseException as e:
            self.keep_interrupt(e)

    @property
    def interrupted(self) -> BaseException | None:
        """What a hook raised and kept (None: nothing)."""
        return self.kept[0]

    def keep_interrupt(self, e: BaseException) -> None:
        """Keep what a hook raised (the first of them) for `take_interrupt`."""
        if self.kept[0] is None:
            self.kept[0] = e

    def take_interrupt(self) -> BaseException | None:
        """What a hook raised since the last call (None: nothing), and forget it."""
        e, self.kept[0] = self.kept[0], None
        return e

    def _mark_totals(self) -> None:
        """As a collection starts (before it moves any total): where it is the first since the
        last step ended, the totals as of that end; where it is the first in the step running
        now, the totals as of the step's beginning (no collection moved them in between)."""
        if self._seen == self._seen_end:
            self._between_ns_end = self.between_ns
            self._between_cpu_end = self.between_cpu_ns
            e, b = self._between_gen_end, self.between_gen
            e[0], e[1], e[2] = b[0], b[1], b[2]
            self._examined_end = self._examined_total
            self._promoted_end = self._promoted_total
        if self._current >= 0 and self._seen == self._seen_begin:
            self._reset0 = self._reset_total
            g, g0 = self._gen_totals, self._gen0
            g0[0], g0[1], g0[2] = g[0], g[1], g[2]
            x, x0 = self._explicit_totals, self._explicit0
            x0[0], x0[1], x0[2] = x[0], x[1], x[2]
            self._pause0 = self._pause_total
            self._pause_cpu0 = self._pause_cpu_total
            self._collected0 = self._collected_total
            self._events0 = self.events

    def _start_hook_body(self, info: dict) -> None:
        if self._depth == 0:
            self._mark_totals()
            self._seen += 1
            count = gc.get_count()[0]
            self._reset_total += count
            # The collector starts on its own only once the young count exceeds its
            # threshold (and never while disabled): anything else is a gc.collect() call,
            # named by the line that called it. (What this allocates, the collection
            # that follows wipes from the young count.)
            self._explicit_now = explicit(count)
            if self._explicit_now:  # the line that called it: in the user's own files where known, and
                # the library's line that called gc.collect() beside it ("train.py:45 via lib.py:88")
                inner = sys._getframe(2)  # past `_on_start`, which calls this body
                frame: FrameType | None = inner
                while self.user_files and frame is not None and frame.f_code.co_filename not in self.user_files:
                    frame = frame.f_back
                caller = frame or inner
                site = f"{caller.f_code.co_filename}:{caller.f_lineno}"
                if caller is not inner:
                    site += f" via {inner.f_code.co_filename}:{inner.f_lineno}"
                self.explicit_sites[site] = self.explicit_sites.get(site, 0) + 1
            self._examined_now = examined(info["generation"], count, self._spare, self._oldest)  # before the clock
            if self._oldest[2]:
                self._next_look = 0  # list the oldest generation again as the step ends
            self._pause_start = time.perf_counter_ns()
            self._pause_cpu_start = time.thread_time_ns()
        self._depth += 1

    def _stop_hook_body(self, info: dict) -> None:
        if self._depth:
            self._depth -= 1
            pause = pause_cpu = 0
            if self._depth == 0:
                pause_cpu = time.thread_time_ns() - self._pause_cpu_start
                self._pause_cpu_total += pause_cpu
                pause = time.perf_counter_ns() - self._pause_start
                self._pause_total += pause
            gen, collected = info["generation"], info["collected"]
            gen = gen if gen < GENERATIONS else GENERATIONS - 1
            self._gen_totals[gen] += 1
            self._collected_total += collected
            seen = 0
            if self._depth == 0:
                seen = self._examined_now
                self._examined_total += seen
                if gen == 1:  # what survived it moved to the oldest generation
                    self._promoted_total += max(seen - collected, 0)
            explicit = self._explicit_now and self._depth == 0
            if explicit:
                self._explicit_totals[gen] += 1
            if self._current < 0:
                self.between_ns += pause
                self.between_cpu_ns += pause_cpu
                self.between_gen[gen] += 1
                self.between_collected += collected
                if explicit:
                    self.between_explicit[gen] += 1
            k = self.events
            if k < len(self._ev_step):
                self._ev_step[k] = self._current
                self._ev_generation[k] = gen
                self._ev_pause[k] = pause
                self._ev_collected[k] = collected
                self._ev_examined[k] = seen
                self.events = k + 1
            else:
                self.events_dropped += 1

    def prepare(self) -> None:
        """Bind the hooks now, so that `install` makes no object a collection could start
        at (`gcbench.measure` installs its timed probe at a step's boundary)."""
        if self._start_hook is None:
            self._start_hook, self._stop_hook = self._on_start, self._on_stop

    def install(self) -> None:
        """Put the hooks in place: start first in `gc.callbacks`, stop last."""
        if not self.installed:
            self.prepare()
            if self._start_hook is None or self._stop_hook is None:  # prepare bound them
                raise RuntimeError("the probe's hooks are not bound")
            gc.callbacks.insert(0, self._start_hook)
            gc.callbacks.append(self._stop_hook)
            self.installed = True

    def uninstall(self) -> None:
        if self._start_hook is not None:
            while self._start_hook in gc.callbacks:
                gc.callbacks.remove(self._start_hook)
            while self._stop_hook in gc.callbacks:
                gc.callbacks.remove(self._stop_hook)
        self._start_hook = self._stop_hook = None
        self.installed = False

    def bracket_ok(self) -> bool:
        """True when our hooks are still first and last (another library may have added one)."""
        cbs = gc.callbacks
        return self.installed and bool(cbs) and cbs[0] == self._start_hook and cbs[-1] == self._stop_hook

    def __enter__(self) -> StepProbe:
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        self.uninstall()

    # -- per step -------------------------------------------------------------------
    def begin(self) -> None:
        # From here on a collection is this step's: the step is marked before anything that
        # could start one (`gc.get_count()`, which comes from the free list and normally does
        # not), and the clock runs from before it. A collection in the gap before it (one
        # since the last step ended) is written now; none, and the gap's columns stay zero.
        i = self.steps
        if i >= self.limit or self._current >= 0 or self.kept[0] is not None:
            self._boundary()
            return
        self._current = i
        seen = self._seen_begin = self._seen
        if seen != self._seen_end:
            self._record_gap(i)
        self._gc_enabled[i] = _isenabled()
        if self._extras:
            self._begin_extras(i)
        t0 = self._t0 = _perf_ns()
        self._count0 = _get_count()[0]
        if not self.first_t0:
            self.first_t0 = t0
        if self.last_t1:  # since the last step, or since `start_clock`
            self._gap_ns[i] = t0 - self.last_t1

    def _begin_extras(self, i: int) -> None:
        """What a step begins with beyond the clock, where asked for: the allocated blocks,
        and the thread's CPU clock (the gap's CPU time since the last step ended)."""
        if self.alloc_blocks_enabled:
            self._blocks0 = sys.getallocatedblocks()
        if self.step_cpu:
            c0 = self._c0 = time.thread_time_ns()
            if self._c1_last:
                self._gap_cpu_ns[i] = c0 - self._c1_last

    @property
    def in_step(self) -> bool:
        """Whether a step has begun and not yet ended or been aborted."""
        return self._current >= 0

    def _boundary(self) -> None:
        """`begin` where its guard stops it: `on_boundary` decides (and may begin the step);
        without one, what a hook kept is raised, and a step inside a step or past the
        capacity is an error."""
        if self.on_boundary is not None:
            self.on_boundary()
            return
        e = self.take_interrupt()
        if e is not None:
            raise e
        if self._current >= 0:
            raise RuntimeError("StepProbe.begin() inside a step: end() or abort() it first")
        raise IndexError(f"StepProbe: more than {self.limit:,} steps (its capacity)")

    def _record_gap(self, i: int) -> None:
        """The collections in the gap before step `i` (between the last step's end and now)."""
        b, e, row, at = self.between_gen, self._between_gen_end, self._gap_collections, 3 * i
        row[at], row[at + 1], row[at + 2] = b[0] - e[0], b[1] - e[1], b[2] - e[2]
        self._gap_gc_ns[i] = self.between_ns - self._between_ns_end
        self._gap_gc_cpu_ns[i] = self.between_cpu_ns - self._between_cpu_end

    def start_clock(self) -> None:
        """The loop's time starts now: the first step's gap runs from here (what the loop does
        before its first step, a collection included, is its own); allocates nothing."""
        self.last_t1 = time.perf_counter_ns()
        self._c1_last = self._cpu_start = time.thread_time_ns()

    def close_clock(self) -> None:
        """The loop's time ends now (`loop_cpu_ns`: the thread's CPU time since `start_clock`)."""
        if self._cpu_start:
            self.loop_cpu_ns = time.thread_time_ns() - self._cpu_start

    def dispatched(self) -> None:
        """The step function has returned; what follows until `end` waits for its results."""
        i = self._current
        if i >= 0:
            if not self._host_ns[i]:  # once a step, however often it is called
                self.host_marked += 1
            self._host_ns[i] = max(_perf_ns() - self._t0, 1)

    def end(self, i: int) -> None:
        """End step `i`, the one `begin` began."""
        if i != self._current:
            raise ValueError(f"StepProbe.end({i}): the step running is {self._current} (-1: none)")
        self.exit()

    def exit(self, exc_type: type[BaseException] | None = None, exc: BaseException | None = None,
             tb: object = None) -> None:
        """End the step running, as a context manager's `__exit__` does (`gcbench.measure`'s
        steps leave through it directly): recorded where it ended, aborted (`abort`) where
        it raised `exc_type`."""
        count = _get_count()[0]  # before the clock stops: a collection started here is the step's
        t1 = _perf_ns()
        i = self._current
        if exc_type is not None or i < 0:
            if i >= 0:
                self.abort()
            elif self.exit_to is not None:
                self.exit_to.exit(exc_type, exc, tb)
            return
        if self._extras:
            self._end_extras(i)
        self._wall_ns[i] = t1 - self._t0
        seen = self._seen
        if seen != self._seen_begin:  # a collection in the step
            self._record_collections(i, count)
        else:
            self._gc_pressure[i] = count - self._count0
        if seen != self._seen_end:  # in the step or the gap before it: what they examined, promoted
            self._gc_examined[i] = self._examined_total - self._examined_end
            self._gc_promoted[i] = self._promoted_total - self._promoted_end
            self._seen_end = seen
        self.steps = i + 1
        self.last_t1 = t1
        self._current = -1
        if i >= self._next_look:
            self._look(i)

    def _end_extras(self, i: int) -> None:
        """What a step ends with beyond the clock, where asked for (`_begin_extras`)."""
        if self.step_cpu:
            c1 = self._c1_last = time.thread_time_ns()
            self._cpu_ns[i] = c1 - self._c0
        if self.alloc_blocks_enabled:
            self._alloc_blocks[i] = sys.getallocatedblocks() - self._blocks0

    def _look(self, i: int) -> None:
        """After step `i`, outside its clock: the resident set size where a sample is due, and
        the oldest generation where the step held a full collection to list it after."""
        if i >= self._next_rss:
            self.sample_rss(i)
            self._next_rss = i + self.rss_every
        if self._oldest[2]:
            self._old_after_full(i)
        self._next_look = self._next_rss  # (a full collection listed after a step brings it forward)

    def _record_collections(self, i: int, count: int) -> None:
        """Step `i` held a collection: its pauses, collections, those asked for, objects
        collected, and its pressure with the young counts the collections found."""
        self._gc_pressure[i] = count - self._count0 + self._reset_total - self._reset0
        self._gc_ns[i] = self._pause_total - self._pause0
        self._gc_cpu_ns[i] = self._pause_cpu_total - self._pause_cpu0
        x, x0, row, at = self._explicit_totals, self._explicit0, self._gc_explicit, 3 * i
        row[at], row[at + 1], row[at + 2] = x[0] - x0[0], x[1] - x0[1], x[2] - x0[2]
        g, g0, row = self._gen_totals, self._gen0, self._gc_collections
        row[at], row[at + 1], row[at + 2] = g[0] - g0[0], g[1] - g0[1], g[2] - g0[2]
        self._gc_collected[i] = self._collected_total - self._collected0

    def _old_after_full(self, step: int) -> None:
        """After a step that held a listed full collection: the oldest generation now, at the
        step's end, when the objects the step held in flight are gone and nothing dead is
        left (the full collection took it); the spare list lent to the free list as `examined`
        does, so that listing makes no object that counts."""
        self._oldest[2] = 0
        k = self.old_after_full_n
        if k < len(self._old_after_full_step):
            self._spare[0] = None
            self._old_after_full_size[k] = len(gc.get_objects(2))
            self._spare[0] = []
            self._old_after_full_bytes[k] = _malloc_paused() if self.read_malloc else rss_bytes()
            self._old_after_full_step[k] = step
            self.old_after_full_n = k + 1

    def sample_rss(self, step: int) -> None:
        """Record the resident set size now, as of `step` (outside a step's clock)."""
        k = self.rss_samples
        if self.rss_every and k < len(self._rss_step):
            self._rss_step[k] = step
            self._rss_bytes[k] = rss_bytes()
            self.rss_samples = k + 1

    def abort(self) -> None:
        """Forget the step begun last (it raised): nothing is recorded for it, and the
        collections logged during it count as between steps (step -1)."""
        self.aborted += 1
        if self._seen != self._seen_begin:
            k = min(self.events, len(self._ev_step))
            for e in range(min(self._events0, k), k):
                self._ev_step[e] = -1
            self.between_ns += self._pause_total - self._pause0
            self.between_cpu_ns += self._pause_cpu_total - self._pause_cpu0
            for gen in range(GENERATIONS):
                self.between_gen[gen] += self._gen_totals[gen] - self._gen0[gen]
                self.between_explicit[gen] += self._explicit_totals[gen] - self._explicit0[gen]
            self.between_collected += self._collected_total - self._collected0
        self._current = -1

    @property
    def total_gc_ns(self) -> int:
        """GC pause time since install, inside steps or not."""
        return self._pause_total

    def column(self, name: str, n: int | None = None) -> np.ndarray:
        """Column `name` of the first `n` steps (by default those taken; an event column: the
        collections logged) as a numpy array, a view of the probe's own memory: a column of
        generations has a row of three a step."""
        import numpy as np

        view = getattr(self, f"_{name}")
        if n is None:
            n = self.events if name in EVENT_COLUMNS else self.steps
        width = GENERATIONS if name in GENERATION_COLUMNS else 1
        values = np.frombuffer(view, np.int8 if view.format == "b" else np.int64, count=n * width)
        return values.reshape(n, width) if width > 1 else values

    def arrays(self, lists: bool = True) -> dict:
        """The per-step arrays of the steps taken: as lists (a document's JSON values), or
        with `lists=False` as numpy arrays, which summaries and files.json_bytes take as they
        are (a list of Python integers costs about 36 bytes a step per array)."""
        n = self.steps
        names = ["wall_ns", "gc_ns", *(["cpu_ns"] if self.step_cpu else []), "gc_cpu_ns", "gc_collections",
                 "gc_collected", "gc_pressure", "gc_examined", "gc_promoted"]
        if self.alloc_blocks_enabled:
            names.append("alloc_blocks")
        if n and self.host_marked == n:
            names.append("host_ns")
        if n:
            names += ["gap_ns", "gap_gc_ns", "gap_collections", *(["gap_cpu_ns"] if self.step_cpu else []),
                      "gap_gc_cpu_ns", "gc_explicit", "gc_enabled"]
        out = {name: self.column(name, n).copy() for name in names}  # copies: the probe's memory may go
        return {k: v.tolist() for k, v in out.items()} if lists else out

    def between_steps(self) -> dict:
        """The collections that fell outside every step (the loop's own code between
        steps), and the loop's span: from the first step's start to the last one's end."""
        k = self.old_after_full_n
        loop_cpu = {} if self.step_cpu or not self.loop_cpu_ns else {"loop_cpu_ns": int(self.loop_cpu_ns)}
        after_full = {"step": self._old_after_full_step[:k].tolist(), "objects": self._old_after_full_size[:k].tolist()}
        after_full["malloc_bytes" if self.read_malloc else "rss_bytes"] = self._old_after_full_bytes[:k].tolist()
        return {**loop_cpu, "gc_ns": int(self.between_ns), "gc_cpu_ns": int(self.between_cpu_ns),
                "collections": list(self.between_gen),
                "collected": int(self.between_collected), "explicit": list(self.between_explicit),
                "examined": int(self._examined_total), "promoted": int(self._promoted_total),
                "old_after_full": after_full,
                "explicit_sites": dict(self.explicit_sites),
                "span_ns": int(self.last_t1 - self.first_t0) if self.steps else 0}

    def close_rss(self) -> None:
        """Sample the resident set size once more as of the last step, if its sample is not
        there yet: call it when the loop ends, before anything else runs (a sample taken
        later would count what runs then, such as the imports of a summary, as the loop's)."""
        if self.rss_every and self.steps and (not self.rss_samples or
                                              self._rss_step[self.rss_samples - 1] != self.steps - 1):
            self.sample_rss(self.steps - 1)

    def memory(self) -> dict | None:
        """The sampled resident set size (None when it was not sampled): the samples taken
        every `rss_every` steps and by `close_rss`, nothing taken later."""
        if not self.rss_every:
            return None
        k = self.rss_samples
        return {"every": self.rss_every, "rss_step": self._rss_step[:k].tolist(),
                "rss_bytes": self._rss_bytes[:k].tolist()}

    def event_log(self) -> dict:
        """Every collection seen: the step it fell in (-1: between steps), its generation,
        its pause in ns and the objects it collected; `dropped` when the log was full."""
        k = self.events
        return {"step": self._ev_step[:k].tolist(), "generation": self._ev_generation[:k].tolist(),
                "pause_ns": self._ev_pause[:k].tolist(), "collected": self._ev_collected[:k].tolist(),
                "examined": self._ev_examined[:k].tolist(), "dropped": self.events_dropped}


class _DeprecatedColumn:
    """`probe.<name>`: the column as a numpy array of the whole capacity, as before 0.3, with
    a DeprecationWarning. A descriptor per name, one object each (a property and its closure
    were three, 100 objects before the loop, each delaying its full collections:
    benchmarks/schedule_footprint.py); a `__getattr__` on the class would instead make every
    method call in a step allocate a bound method, an object a collection could start on."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __get__(self, probe: StepProbe | None, owner: type | None = None):
        if probe is None:
            return self
        import warnings

        name = self.name
        warnings.warn(f"StepProbe.{name} is deprecated and goes in gcbench 0.4: read probe.column({name!r}) "
                      "(a numpy array of the steps taken)", DeprecationWarning, stacklevel=2)
        view = getattr(probe, f"_{name}")
        return probe.column(name, len(view) // (GENERATIONS if name in GENERATION_COLUMNS else 1))


for _name in sorted(DEPRECATED_ARRAYS):
    setattr(StepProbe, _name, _DeprecatedColumn(_name))


def examined(generation: int, young: int, spare: list, oldest: list) -> int:
    """The objects a collection of `generation` is about to examine: those in the generations
    it scans, frozen objects excluded (they are in none). A young collection's are the young
    count `young` (read as it started: what it scans, without a list); generation 1's are
    listed (a few thousand objects); the oldest generation, which a full collection adds,
    is listed at the 1st, 2nd, 4th, 8th, ... full collection only (listing it costs a fifth
    of a full collection) and taken as last listed in between: `oldest` is [full
    collections seen, the oldest generation's size as last listed]. The list
    `gc.get_objects` returns is freed into the interpreter's free list of lists, where the
    loop's next list would come from without counting towards a collection: `spare[0]`, a
    list the probe keeps, goes there first and is taken back after, so that the free list
    is as the loop left it (except where it was full: then one list of it is the spare)."""
    if generation == 0:
        return young
    spare[0] = None  # the spare into the free list: get_objects' list comes from there, and goes back
    n = len(gc.get_objects(0)) + len(gc.get_objects(1))
    if generation >= GENERATIONS - 1:
        oldest[0] += 1
        if oldest[0] & (oldest[0] - 1) == 0:  # a power of two
            oldest[1] = len(gc.get_objects(2))
            oldest[2] = 1  # and again as the step ends: what it left alive, without the step's objects in flight
        n += oldest[1]
    spare[0] = []  # taken back from the free list
    return n


def explicit(count: int) -> bool:
    """Whether a collection starting at young count `count` is a gc.collect() call: the
    collector starts on its own only above its young threshold, and never while disabled."""
    return not gc.isenabled() or count <= gc.get_threshold()[0]


_MALLINFO: list = []  # [the C allocator's mallinfo2, or None where there is none], once looked up
_MALLINFO_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                    "keepcost")


def _mallinfo2():
    """glibc's `mallinfo2` as a callable, through `_ctypes` alone: `import ctypes` would add
    580 objects to a heap that had none (numpy and jax load it anyway), and every object
    before the loop delays its full collections (`benchmarks/schedule_footprint.py`); this
    adds 230 where ctypes is not loaded, 60 where it is. None where there is no mallinfo2."""
    try:
        import _ctypes

        class SizeT(_ctypes._SimpleCData):  # size_t is unsigned long on every ABI glibc has
            _type_ = "L"

        class MallInfo2(_ctypes.Structure):
            _fields_ = tuple((name, SizeT) for name in _MALLINFO_FIELDS)

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = MallInfo2

        class Library:  # what CFuncPtr reads of a library: its handle
            _handle = _ctypes.dlopen(None, os.RTLD_LOCAL)  # type: ignore[arg-type]  # None: this process

        function = Function(("mallinfo2", Library))  # type: ignore[arg-type]  # a handle is all it reads
        function.argtypes = ()
        return function
    except (ImportError, AttributeError, OSError, TypeError):
        return None


def malloc_in_use() -> int | None:
    """Bytes the C allocator has handed out and not taken back (glibc 2.33+'s `mallinfo2`:
    its arenas and its mmapped blocks): what objects too large for Python's own allocator
    (bytes, arrays' data, buffers) hold, tracked by the collector or not; not the probe's
    columns (a memory map of their own), whose pages a resident set size counts as the
    steps reach them. None where the C library has no `mallinfo2`, and in a process that
    has not loaded `_ctypes`: loading it would add 220 objects to the heap whose schedule
    is measured (numpy, jax and most libraries load it; a pure-Python loop's memory is then
    read from its resident set, `analysing.rates.bytes_kept_per_1000`). Its first call
    makes objects (`_mallinfo2`): `gcbench.measure` makes it as it is made, before the
    loop, and reads it at the first timed step, after the listed full collections and at
    the end."""
    if not _MALLINFO:
        if "_ctypes" not in sys.modules:
            return None
        _MALLINFO.append(_mallinfo2())
    if _MALLINFO[0] is None:
        return None
    info = _MALLINFO[0]()
    return int(info.uordblks + info.hblkhd)


def _malloc_paused() -> int:
    """`malloc_in_use` inside the loop: its reading is an object the collector tracks, made
    and freed with the collector paused (`gc_watch.pause`, which no watcher sees), so that
    it can start no collection the loop would not have had (its count is as it was after).
    0 where there is no reading."""
    was = gc_watch.pause()
    try:
        return malloc_in_use() or 0
    finally:
        gc_watch.resume(was)


_STATM = [0, None]  # [the process that opened it, its fd (None: there is no /proc/self/statm)]


def _statm_fd() -> int | None:
    pid = os.getpid()
    if _STATM[0] != pid:  # first use, or a forked child: /proc/self named the parent when it was opened
        try:
            fd = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            fd = None
        _STATM[0], _STATM[1] = pid, fd
    return _STATM[1]


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") and "SC_PAGE_SIZE" in os.sysconf_names else 4096


def rss_bytes() -> int:
    """The resident set size of this process in bytes (0 where it cannot be read).
    Creates no object the collector tracks: bytes and integers only."""
    fd = _statm_fd()
    if fd is None:
        return 0
    data = os.pread(fd, 128, 0)  # "size resident shared text lib data dt", in pages
    start = data.find(b" ") + 1
    end = data.find(b" ", start)
    return int(data[start:end]) * _PAGE if start > 0 and end > start else 0
