"""`gcbench.measure`: gcbench's probe around your own training loop.

How it works, and why: docs/internals.md, `gcbench.user_loop`.
"""

from __future__ import annotations

import _thread
import gc
import os
import sys

# What `gcbench.measure` imports stays in the user's heap, whose schedule it measures: a
# larger oldest generation makes full collections rarer (docs/internals.md, "The probe's
# footprint"). So before the loop only modules of a few dozen objects each, of the standard
# library's already loaded ones; numpy, the schema, the analysis and the diagnostics load
# after the loop, or when explaining.
from . import _IMPORTED
from .core import machineload
from .core.checks import RESULTS_ENV, is_int, is_name
from .measuring import gc_watch
from .measuring.probe import StepProbe, malloc_in_use

TYPE_CHECKING = False  # typing's own flag without importing typing (900 objects in the measured heap)
if TYPE_CHECKING:  # names for the annotations only: nothing more is imported into the user's process
    import pathlib
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    from .analysing.explanation_records import Explanation
    from .measuring import diagnose, results
    from .measuring.cell import Cell

DEFAULT_CAPACITY = 100_000
MAX_CAPACITY = 10_000_000  # as many timed steps as a run may have
RSS_EVERY = 50  # steps between samples of the resident set size
EXPLAIN_ENV = "GCBENCH_EXPLAIN"  # "1": every measure() in the process explains instead of timing
SOURCE = "the user's own loop"
# the machine's counters as gcbench was imported and as the last block ended: the window a loop
# too short to read is read over (core.machineload.over_window), without waiting
_SINCE: list = [_IMPORTED, None]


TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _usage_error(message: str) -> Exception:
    """gcbench's UsageError, imported where one is raised: `core.errors` (19 objects) stays
    out of the heap of a loop that makes no mistake (benchmarks/schedule_footprint.py)."""
    from .core.errors import UsageError

    return UsageError(message)


def explain_from_env() -> bool:
    """GCBENCH_EXPLAIN as a switch: 1/true/yes/on, or 0/false/no/off/unset (any case, spaces
    around ignored); anything else is a one-line error, never a guess."""
    raw = os.environ.get(EXPLAIN_ENV, "")
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise _usage_error(f"{EXPLAIN_ENV}={raw!r} is not a switch: use 1 (or true, yes, on) to explain, 0 (or false, no, "
                       "off) or leave it unset to time")


def _positive_or_none(name: str, value) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value < 1:
        raise _usage_error(f"{name} must be a positive integer (or left out), got {value!r}")
    return value


def _check_names(name, variant, policy) -> None:
    """`measure`'s names: the loop's and its variant's plain names, a policy gcbench knows."""
    if not is_name(name):
        raise _usage_error(f"name must be letters, digits, '.', '_' or '-', got {name!r}")
    if variant is not None and not is_name(variant):
        raise _usage_error(f"variant must be letters, digits, '.', '_' or '-', got {variant!r}")
    if policy is not None:
        if not isinstance(policy, str):
            raise _usage_error(f"policy must be a GC policy name (default, freeze, disable, manual:K), got {policy!r}")
        from .measuring import gcpolicy

        gcpolicy.parse(policy)


def _check_sizes(warmup, capacity, rss_every) -> None:
    """`measure`'s sizes: integers in range."""
    if not is_int(warmup) or warmup < 0:
        raise _usage_error(f"warmup must be a non-negative integer, got {warmup!r}")
    if not is_int(capacity) or not 1 <= capacity <= MAX_CAPACITY:
        raise _usage_error(f"capacity must be an integer from 1 to {MAX_CAPACITY:,}, got {capacity!r}")
    if not is_int(rss_every) or rss_every < 0:
        raise _usage_error(f"rss_every must be a non-negative integer (0: no memory samples), got {rss_every!r}")


class _Prebound:
    """`with` looks `__enter__` and `__exit__` up on the type and binds them: two bound
    methods a block, tracked objects the loop alone would not have (each moves the
    collector's young count; the one for `__exit__` lives through the block). This
    descriptor hands out the instance's own, bound once as it was made."""

    __slots__ = ("attr",)

    def __init__(self, attr: str):
        self.attr = attr

    def __get__(self, obj, objtype=None):
        return self if obj is None else obj.__dict__[self.attr]


class Measurement:
    """Per-step wall time, GC activity and memory of a loop you run (docs/internals.md, `gcbench.user_loop`)."""

    def __init__(self, name: str = "my-loop", warmup: int = 0, capacity: int = 100_000,
                 alloc_blocks: bool = False, policy: str | None = None, variant: str | None = None,
                 batch_size: int | None = None, networks: int | None = None, rss_every: int = 50,
                 explain: bool | None = None):
        _check_names(name, variant, policy)
        _check_sizes(warmup, capacity, rss_every)
        self.name = name
        self.variant = variant
        self.warmup = warmup
        self.policy = policy
        self.batch_size = _positive_or_none("batch_size", batch_size)
        self.networks = _positive_or_none("networks", networks)
        self.explain = explain_from_env() if explain is None else bool(explain)
        # explain: allocation sites traced (tracemalloc; slows allocations several times): over one
        # interval between collections of generation 1 in eight ("sampled", diagnose.SAMPLED), or
        # throughout (True), or never (False)
        self.sites: bool | str = "sampled"
        # called as the timed steps begin (a GC budget collects and freezes there)
        self.before_timed: Callable[[], None] | None = None
        # Each step's CPU time is not read (two system calls a step, 0.9 µs): the loop's, in
        # all, and each pause's are (`StepProbe.step_cpu`)
        try:
            self._timed = StepProbe(capacity, alloc_blocks=alloc_blocks, rss_every=rss_every, step_cpu=False)
        except MemoryError:
            raise _usage_error(f"capacity={capacity:,} steps does not fit in memory: pass a smaller one") from None
        # the warm-up's own probe, where there is a warm-up (without one, a probe's 60 objects
        # before the loop would delay its full collections: benchmarks/schedule_footprint.py)
        self._warm = StepProbe(warmup, alloc_blocks=alloc_blocks, step_cpu=False) if warmup else self._timed
        # The step's context manager: one object of a class made for this measurement, whose
        # __enter__ and __exit__ are bound methods stored as static ones. `with` then finds
        # them without making a bound method per step (a tracked object: its allocation
        # alone can start a collection, between steps instead of in one).
        # A loop only timed enters the probe's own `begin` (its limit and slot checked there,
        # `_boundary` where they stop it): the warm-up's probe's, then the timed one's, each
        # bound once here. Explaining, `_begin_explained` and `_exit_explained`, which the
        # diagnosis follows.
        self._probe = self._warm if warmup else self._timed
        self._timed_pair = (staticmethod(self._timed.begin), staticmethod(self._timed.exit))
        if self.explain:
            entry, leave = staticmethod(self._begin_explained), staticmethod(self._exit_explained)
        else:
            entry, leave = staticmethod(self._probe.begin), staticmethod(self._probe.exit)
        # kept: replaced at the warm-up's end, they would be freed as its step's `with` lets them go,
        # after gc_watch.balance (the young count one lower at each)
        self._first_pair = (entry, leave)
        step_type = type("Step", (), {"__slots__": (), "__enter__": entry, "__exit__": leave,
                                      "__doc__": "`with m.step():` one step"})
        self._step = step_type()
        self._warm.on_boundary = self._timed.on_boundary = self._boundary
        self._spares = gc_watch.spares()  # freed for the objects gcbench keeps around the loop (gc_watch.balance)
        self._entry, self._exit = self._enter_block, self._exit_block  # `with m:` (_Prebound)
        self._warm.limit = self._timed.limit = 0  # outside the block: every entry goes to `_boundary`
        self._state = 0  # 0: outside the block, 1: inside it
        self._steps_diagnosed = False  # the diagnosis follows the steps (explaining, the timed steps)
        # what a hook of ours, the unraisable hook or another thread (`interrupt`) kept for the
        # next step's boundary: one slot, shared by the probes and the diagnosis, read once a step
        self._kept: list[BaseException | None] = [None]
        self._warm.kept = self._timed.kept = self._kept
        self._gc_enabled = True  # the collector's state when the timed steps began
        self._frozen = 0
        self._thresholds: tuple = ()
        self._tracked_start = -1  # objects the collector tracked when the timed steps began, and at the end
        self._tracked_end = -1
        self._old = [-1, -1]  # objects in the older generations (1 and 2) then: no young garbage among them
        self._malloc: list[int | None] = [None, None]  # the C allocator's bytes in use then (probe.malloc_in_use)
        # read once now: what reading it makes (ctypes, 600 objects; its structure) is in the heap
        # before the loop, as the rest of the probe is, not made at the first timed step
        malloc_in_use()
        # the machine's CPU counters at the first timed step, at the end, and on entering (the
        # load is read over the timed steps, or over the whole block where those are too short)
        self._load: list[tuple | None] = [None, None, None]  # machineload snapshots: start, end, entry
        self._load_read: dict = {}  # the machine while the loop ran (machineload.between), read at its end
        # The diagnosis, explaining only: its module and objects (2,000 and more) would move the
        # schedule of a loop that is only timed
        self._diagnosis: diagnose.Diagnosis | None = None
        if self.explain:
            from .measuring import diagnose

            self._diagnosis = diagnose.Diagnosis(capacity, sites=self.sites, site_steps=None)
            self._diagnosis.kept = self._kept
        if sys.version_info < (3, 11):
            _first_calls(self._diagnosis)
        self._user_file = _caller_file()
        # gc.disable, gc.enable and gc.freeze while the loop runs: how often, and where first
        # (made here, before the loop: a call records into these without making an object)
        self._gc_calls: dict[str, list] = {name: [0, None, -1] for name in gc_watch.WATCHED}
        self._unraisable_hook = self._on_unraisable  # bound once, before the loop
        self._unraisable_before: Callable | None = None
        self._timed.user_files = frozenset(
            {self._user_file}
        )  # a gc.collect() inside a library: named by the user's line

    def gc_called(self, name: str, caller: FrameType) -> None:
        """gc.<name> was called (measuring.gc_watch): counted, and the first call's line, in
        the user's own file where one is on the stack, and step."""
        calls = self._gc_calls[name]
        calls[0] += 1
        if calls[1] is None:
            frame: FrameType | None = caller
            while frame is not None and frame.f_code.co_filename != self._user_file:
                frame = frame.f_back
            site = frame or caller
            calls[1], calls[2] = f"{site.f_code.co_filename}:{site.f_lineno}", self._timed.steps

    def _watch_gc(self, on: bool) -> None:
        """Record gc.disable, gc.enable and gc.freeze calls, or stop."""
        (gc_watch.listen if on else gc_watch.stop)(self)

    def collector_state(self) -> dict:
        """The collector while the timed steps ran: how many began with it off, and the calls
        that turned it off, on or froze the heap (how many, the first one's line and step)."""
        calls = {name: {"count": c[0], "first_at": c[1], "first_step": c[2]} for name, c in self._gc_calls.items()
                 if c[0]}
        return {"off_steps": self._off_steps(), "calls": calls}

    def _off_steps(self) -> int:
        """The timed steps that began with the collector off."""
        n = self._timed.steps
        return n - int(self._timed.column("gc_enabled", n).sum())

    # -- the context managers ---------------------------------------------------------
    __enter__ = _Prebound("_entry")
    __exit__ = _Prebound("_exit")

    def _enter_block(self) -> Measurement:
        """`with m:` begins. gcbench's own work: the collector off through it (no collection
        counted by the user's hooks in it), and the young count left as the loop alone would
        have it (gc_watch.balance)."""
        young, was = gc_watch.young_count(), gc_watch.pause()
        try:
            self._enter()
        finally:
            gc_watch.balance(self._spares, young)
            gc_watch.resume(was)
        return self

    def _enter(self) -> None:
        self._thread = _thread.get_ident()  # steps come from this thread (said where they do not)
        self._state = 1
        self._probe.limit = self._timed.capacity if self._probe is self._timed else self.warmup
        self._load[2] = machineload.snapshot()
        if self._diagnosis is not None:
            from .measuring import diagnose

            diagnose.USER_FILES.add(self._user_file)
            if self._user_file:  # the user's own modules beside their loop are theirs too
                diagnose.USER_DIRS.add(os.path.dirname(self._user_file))
            self._diagnosis.sites = self.sites  # as set between construction and entry (a GC budget sets it)
        # the timed probe's hooks, bound before the steps (installing them between two allocates
        # nothing) and before the count of the objects the loop starts with (they are gcbench's)
        self._timed.prepare()
        if not self.warmup:
            self._start_timed()
        self._watch_gc(True)  # before the probe: what it makes is not counted as the loop's
        self._unraisable_before, sys.unraisablehook = sys.unraisablehook, self._unraisable_hook
        self._probe.install()

    def _exit_block(self, exc_type, exc, tb) -> None:  # named, not *exc: no tuple of ours alive at the loop's end
        """`with m:` ends: the young count as it was. The collector stays on: a young collection
        that gcbench's readings start here frees the last steps' garbage before the C
        allocator's bytes are read (with it paused, up to a young generation of garbage was
        read as memory kept, and a freeze fix as keeping 55 % more: benchmarks/user_fixes.py);
        it falls after the loop's last step, and `balance` leaves a count it reset alone."""
        young = gc_watch.young_count()
        try:
            self._leave()
        finally:
            gc_watch.balance(self._spares, young)
        if exc_type is None:  # one that landed after the last step, in a collection between steps
            self._raise_interrupt()

    def _leave(self) -> None:
        self._probe.uninstall()  # first: nothing gcbench does from here on is counted as the loop's
        self._timed.close_clock()
        if sys.unraisablehook is self._unraisable_hook:
            sys.unraisablehook = self._unraisable_before or sys.__unraisablehook__
        self._watch_gc(False)
        self._timed.close_rss()  # the loop's last sample, before anything of gcbench's runs
        self._read_the_end()
        self._state = 0
        self._warm.limit = self._timed.limit = 0  # a step after the block: `_boundary` refuses it

    def _read_the_end(self) -> None:
        """What the block's end reads: the heap, the machine's load, the diagnosis's end."""
        if self._probe is self._timed and self._timed.steps:
            self._count_tracked_end()
            self._load[1] = machineload.snapshot()
            # over the timed steps; where they were too short to read, over the block, else the time
            # before it (since the last block ended, or gcbench.measure was imported): never a wait
            self._load_read = machineload.over_window((self._load[0], self._load[2], *_SINCE[::-1]),
                                                      self._load[1], os.cpu_count())
            _SINCE[1] = self._load[1]
        if self._diagnosis is not None and self._diagnosis.started:
            self._diagnosis.stop(self._timed.steps)

    def step(self):
        """The context manager for one step: `with m.step(): ...`."""
        return self._step

    def dispatched(self) -> None:
        """Inside a step: the step function has returned and what follows waits for its
        results (`jax.block_until_ready`). Called in every step, it records the host time
        of each step (Python and dispatch) beside its wall time."""
        if not self._probe.in_step:
            raise _usage_error("m.dispatched() belongs inside `with m.step():`")
        self._probe.dispatched()

    def _start_timed(self) -> None:
        """Before the first timed step: the collector's state and the tracked objects, once
        (the only place the probe allocates; a collection it starts is the warm-up's)."""
        if self.before_timed is not None:  # a GC budget: the heap settled, whatever the warm-up made
            watched = self._state != 0
            self._watch_gc(False)  # its own collect and freeze are not the loop's calls
            try:
                self.before_timed()
            finally:
                if watched:
                    self._watch_gc(True)
        # the C allocator's bytes first: its first reading makes the objects that read it (a ctypes
        # structure), which must exist before the count of the loop's own begins
        self._malloc[0] = malloc_in_use()
        self._timed.read_malloc = self._malloc[0] is not None  # and after the listed full collections
        self._gc_enabled, self._frozen, self._thresholds = gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()
        # gcbench's own objects before the count: the growth is the loop's
        self._load[0] = machineload.snapshot()
        if self._diagnosis is not None:
            self._diagnosis.start(watch=True)
            self._tracked_start = self._diagnosis.tracked_at_start
            self._steps_diagnosed = True
            self._old[0] = self._diagnosis.older_at_start
        else:
            self._tracked_start, self._old[0] = tracked_and_older()
        self._timed.start_clock()  # the gap before the first timed step is the loop's too

    def _on_unraisable(self, unraisable) -> None:
        """sys.unraisablehook while the loop runs: an interrupt (an exception that is not an
        Exception: KeyboardInterrupt, a timeout's) that a gc callback raised where no hook of
        ours could catch it (as the callback was entered) is kept for the step's boundary;
        anything else goes to the hook that was there before."""
        exc = unraisable.exc_value
        # core.errors.is_interrupt, written out: importing core.errors for it would put 19 more
        # objects in the heap before the loop (benchmarks/schedule_footprint.py)
        if isinstance(exc, BaseException) and not isinstance(exc, Exception):
            self.interrupt(exc)
            return
        (self._unraisable_before or sys.__unraisablehook__)(unraisable)

    def interrupt(self, exc: BaseException) -> None:
        """Raise `exc` in the loop at its next step's boundary (or as the block ends): from
        another thread too (a GC budget's rerun stops so when it runs past its time)."""
        if self._kept[0] is None:
            self._kept[0] = exc

    def _raise_interrupt(self) -> None:
        """Raise what the collector's hooks kept (a Ctrl-C, a timeout's signal that landed
        while one ran), at a step's boundary: CPython would have lost it."""
        e, self._kept[0] = self._kept[0], None
        if e is not None:
            raise e

    def _begin_explained(self) -> None:
        """A step's entry while explaining: the diagnosis told first (from the first timed
        step on), then the probe. (A loop only timed enters the probe's `begin` directly.)"""
        probe = self._probe
        if self._kept[0] is not None or probe.in_step or probe.steps >= probe.limit:
            self._boundary(begin=False)
        if self._steps_diagnosed:
            self._diagnosis.begin_step(self._timed.steps)  # type: ignore[union-attr]  # explaining
        self._probe.begin()

    def _boundary(self, begin: bool = True) -> None:
        """A step's entry where the probe's fast path does not hold (`StepProbe.limit`): what
        the hooks kept is raised; a step outside the block, inside a step or from another
        thread is refused; past the warm-up the timed probe takes over (`_warmed_up`); past
        the capacity, refused; else (with `begin`) the step begins."""
        if self._kept[0] is not None:
            self._raise_interrupt()
        if self._state == 0:
            raise _usage_error("a step outside `with gcbench.measure(...)`")
        if self._probe.in_step:
            if _thread.get_ident() != self._thread:
                raise _usage_error("steps from another thread: a measurement's steps must come from the thread that "
                                   "entered `with gcbench.measure(...)` (measure each thread's loop on its own)")
            raise _usage_error("a step inside a step: `m.step()` brackets one step and does not nest")
        if self._probe is not self._timed and self._warm.steps >= self._warm.limit:
            self._warmed_up()
        if self._timed.steps >= self._timed.capacity:
            raise _usage_error(f"more than {self._timed.capacity:,} timed steps: pass a larger capacity=")
        if begin:
            self._timed.begin()

    def _warmed_up(self) -> None:
        """The first timed step begins (the warm-up's steps are done): the timed probe takes
        over; what the loop did between the last warm-up step and this one (a
        `gc.collect(); gc.freeze()` after the warm-up) stays the warm-up's."""
        self._start_timed()  # while the warm-up's probe still counts what it may start
        self._warm.uninstall()
        self._warm.limit = 0
        self._probe = self._timed
        self._timed.limit = self._timed.capacity
        if not self.explain:  # the steps' entry and exit from now on: the timed probe's own; this step's
            # exit, which `with` read before entering, is the warm-up probe's: it goes on to the timed one
            type(self._step).__enter__, type(self._step).__exit__ = self._timed_pair
            self._warm.exit_to = self._timed
        self._timed.install()
        # Not balanced (gc_watch.balance): this runs with the collector on, between two steps of
        # the loop, and giving back or making objects here moved the phase of the young
        # collections the timed steps then saw, and with it the C allocator's bytes read at the
        # end (a freeze fix read as keeping 62 % more, benchmarks/user_fixes.py). What it keeps
        # (its load reading, the collector's thresholds: 2 objects) moves the loop's young
        # collections by 2 allocations.

    def _exit_explained(self, exc_type, exc, tb) -> None:
        """A step's exit while explaining: the probe's (a step that raised is aborted, not a
        timed step; the exception goes on), then the diagnosis told."""
        probe = self._probe
        probe.exit(exc_type, exc, tb)
        if exc_type is None and self._steps_diagnosed:
            self._diagnosis.end_step(probe.steps - 1)  # type: ignore[union-attr]  # explaining

    @property
    def raised(self) -> int:
        """Steps that raised: not recorded, not timed steps."""
        return self._timed.aborted + (self._warm.aborted if self._warm is not self._timed else 0)

    # -- what was measured ----------------------------------------------------------------
    @property
    def tracked_at_start(self) -> int | None:
        """Objects the collector tracked when the timed steps began; None before they began."""
        return self._tracked_start if self._tracked_start >= 0 else None

    @property
    def diagnosis_cpu_ns(self) -> int:
        """The CPU time the diagnostics spent inside the collector's pauses (explain=True)."""
        return self._diagnosis.spent_cpu_ns if self._diagnosis is not None else 0

    @property
    def steps(self) -> int:
        """Timed steps measured so far (warm-up steps not counted)."""
        return self._timed.steps

    @property
    def policy_name(self) -> str:
        """The policy the user named; else what can be told for sure: the collector was off,
        or it was not. Frozen objects alone do not make a `freeze` loop: libraries freeze too
        (the count is in gc_state)."""
        n = self._timed.steps
        off = self._off_steps() if n else int(not self._gc_enabled)
        return self.policy or ("disable" if (off * 2 >= n if n else off) else "default")

    def _cell(self) -> Cell:
        from .measuring.cell import Cell

        return Cell("user", self.name, self.policy_name, 0, self.networks or 1, 0, self._timed.steps, self.warmup, 0, 1)

    def _check_measured(self) -> None:
        if not self._timed.steps:
            raise _usage_error("no timed step was measured" + (f" (the first {self.warmup} steps are warm-up)"
                                                               if self.warmup else ""))

    def result(self, lists: bool = True) -> results.ResultDoc:
        """The result in the schema of a cell (backend `user`, workload = name), as a record
        read by attribute (`.to_doc()`: as JSON holds it); with `lists=False` its per-step
        arrays stay numpy arrays (what summary and save use: a list costs about 36 bytes a
        step per array)."""
        from .core import metadata
        from .measuring import results

        self._check_measured()
        cell = self._cell()
        meta = metadata.collect()
        if "jax" in sys.modules:  # the loop used JAX: its devices, as gcbench's own cells record them
            meta.update(metadata.jax_devices())
        meta["command"] = [str(a) for a in getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]]
        warm = self._warm.arrays() if self.warmup else {"wall_ns": []}
        warm["gc_events"] = self._warm.event_log() if self.warmup else None
        memory = self._timed.memory() or {}
        memory["tracked_start"] = self._tracked_start if self._tracked_start >= 0 else None
        memory["tracked_end"] = self._tracked_end if self._tracked_end >= 0 else None
        memory.update(zip(("old_start", "old_end"), self._old if min(self._old) >= 0 else (None, None), strict=True))
        memory.update(zip(("malloc_start", "malloc_end"), self._malloc, strict=True))
        extra: dict[str, Any] = {"batch_size": self.batch_size} if self.batch_size else {}
        if self.variant:
            extra["variant"] = self.variant
        doc = results.new(cell, "ok", data={"kind": "user", "source": SOURCE}, metadata=meta,
                          warmup={**warm, "loss": None}, **self._timed.arrays(lists),
                          gc_events=self._timed.event_log(), between_steps=self._timed.between_steps(),
                          memory=memory, loss={"step": [], "value": []},
                          gc_state={"gc_enabled": self._gc_enabled, "frozen_objects": self._frozen,
                                    "gc_thresholds": list(self._thresholds), **self.collector_state()},
                          machine_state={"cpu_count": os.cpu_count(), "load_after": metadata.load_average(),
                                         **self._load_read},
                          probe={"steps_raised": self.raised}, **extra)  # steps that raised are not timed steps
        doc.cell_spec = None
        if not self.batch_size:  # results.new writes the cell's default: a user's loop has none unless given
            doc.batch_size = None
        doc.networks = self.networks
        doc.cell = self._cell_id(0)
        return doc  # built from records in memory: checked against the schema where it is written or read

    def _cell_id(self, repeat: int) -> str:
        policy = self.policy_name.replace(":", "-")
        return f"user__{self.name}__{policy}__r{repeat}" + (f"__{self.variant}" if self.variant else "")

    def summary(self) -> dict:
        """This loop as one flat record: `median_ms`, `mean_ms`, `gc_share` (a fraction),
        `full_per_1000`, `full_collections`, ... (the names of `--json` and `export --per
        cell`; docs/results.md, "Result fields")."""
        return self._summary(self.result(lists=False))

    @staticmethod
    def _summary(doc: results.ResultDoc) -> dict:
        from .analysing.summary import record, summarize

        return record(summarize([doc]))

    def _count_tracked_end(self) -> None:
        """The objects the collector tracks as the loop ends, once: before anything gcbench
        makes after it (what `kept` returns is gcbench's, not the loop's), and without the
        diagnosis's own."""
        if self._tracked_end < 0:
            own = self._diagnosis.own_tracked() if self._diagnosis is not None else 0
            # read at the end only where read at the start (a loop that loaded ctypes in its steps: neither)
            self._malloc[1] = malloc_in_use() if self._malloc[0] is not None else None
            every, self._old[1] = tracked_and_older()
            self._tracked_end = every - own

    def kept(self) -> dict:
        """With `explain=True`, inside the measurement: the tracked objects made since the
        timed steps began and still alive, by type and (where traced) allocation site."""
        if not self.explain:
            raise _usage_error("what a loop kept is known only when it is explained: measure with explain=True")
        self._count_tracked_end()
        return self._explained().survivors()

    def _explained(self) -> diagnose.Diagnosis:
        """The diagnosis of an explained loop (made only when explaining)."""
        if self._diagnosis is None:
            raise _usage_error("no explanation: measure with explain=True (or GCBENCH_EXPLAIN=1)")
        return self._diagnosis

    def explanation(self) -> Explanation:
        """With `explain=True`: what the collector did and why (what `gcbench explain`
        records for gcbench's own cells)."""
        from .analysing import gc_causes

        if not self.explain:
            raise _usage_error("no explanation: measure with explain=True (or GCBENCH_EXPLAIN=1)")
        self._check_measured()
        return gc_causes.of_user_loop(self._explained().to_json(), self._cell(), self.variant, self._user_file,
                                    self.collector_state())

    def __repr__(self) -> str:
        head = f"gcbench.measure({self.name!r}" + (f", policy={self.policy!r}" if self.policy else "") + \
            (f", variant={self.variant!r}" if self.variant else "") + ")"
        if not self._timed.steps:
            return f"<{head}: no timed step yet>"
        from .analysing import summary
        from .publishing import summary_text

        doc = self.result(lists=False)  # once: the row and the counts by generation read the same result
        by_generation = [int(n) for n in summary.collections_by_generation(doc)]
        text = f"{head}: {summary_text.describe_user_loop(self._summary(doc), by_generation)}"
        if not self.explain:
            return text
        from .publishing import explanation_text  # explaining: what it found, under the (disturbed) figures

        return f"{text} [explain: timings disturbed]\n{explanation_text.format_text(self.explanation())}"

    def save(self, folder: str | os.PathLike | None = None) -> pathlib.Path:
        """Write the result into `folder` as the next repeat of this loop; return its path.
        With `explain=True`, write the explanation into the folder's explain.json instead.
        No folder: the one GCBENCH_RESULTS names (`gcbench run --script` sets it)."""
        folder = _results_folder(folder)
        if self.explain:
            from .analysing import gc_causes
            from .core import files

            expl = self.explanation()
            folder = files.make_folder(folder, "results folder")
            gc_causes.save(folder, expl)
            return folder / gc_causes.FILE
        return self.save_result(folder)

    def save_result(self, folder: str | os.PathLike | None = None) -> pathlib.Path:
        """Write the result document into `folder` as the next repeat of this loop (whatever
        `explain` says: a GC budget keeps its counts, whose timings its diagnostics disturb)."""
        from .core import files
        from .measuring import results

        doc = self.result(lists=False)
        folder = files.make_folder(_results_folder(folder), "results folder")
        repeat = 0
        while True:  # the next free repeat number, claimed exclusively: concurrent saves never share one
            doc.repeat = repeat
            doc.cell = self._cell_id(repeat)
            path = folder / f"{doc.cell}.json"
            if not path.exists():
                results.validate(doc, str(path))
                if files.write_new(path, files.json_bytes(doc.to_doc(), indent=None)):
                    return path
            repeat += 1


def _results_folder(folder: str | os.PathLike | None) -> str | os.PathLike:
    if folder is not None:
        return folder
    named = os.environ.get(RESULTS_ENV)
    if not named:
        raise _usage_error(f"m.save() needs a folder: m.save('results/my-loop'), or run the script under "
                           f"`gcbench run --script` (which sets {RESULTS_ENV})")
    return named


def tracked_and_older() -> tuple[int, int]:
    """The objects the collector tracks now, and those of them in the older generations (1
    and 2), from one listing of the heap: two were two lists as long as the heap (8 MB each
    at 10^6 objects), and the C allocator kept the second one's memory through the loop."""
    every = len(gc.get_objects())
    return every, every - len(gc.get_objects(0))


def _caller_file() -> str:
    """The file of the code that called `measure()`: the user's own, for explain's sites."""
    frame: FrameType | None = sys._getframe(1)
    here = os.path.abspath(__file__)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == here:
        frame = frame.f_back
    return os.path.realpath(frame.f_code.co_filename) if frame is not None else ""


def _first_calls(diagnosis: diagnose.Diagnosis | None) -> None:
    """CPython 3.10 allocates a frame object, which the collector tracks, at a function's
    first call, and reuses it afterwards (3.11 keeps frames off the heap): the functions a
    step boundary calls are called once here, before the loop, so that the first boundary
    of the timed steps makes no object a collection could start on. Each leaves what it
    touched as it was."""
    if diagnosis is not None:
        diagnosis.begin_step(0)
        diagnosis.end_step(-1)  # back to step -1, none done
    probe = StepProbe(2, rss_every=1)  # its end samples the RSS too
    probe.begin()
    probe.dispatched()
    probe.end(0)
    probe.begin()
    probe.abort()


# capacity and rss_every are DEFAULT_CAPACITY and RSS_EVERY, written out so that the API page
# shows the numbers (tests/test_docs.py holds them equal)
def measure(name: str = "my-loop", warmup: int = 0, capacity: int = 100_000,
            alloc_blocks: bool = False, policy: str | None = None, variant: str | None = None,
            batch_size: int | None = None, networks: int | None = None, rss_every: int = 50,
            explain: bool | None = None, **unknown) -> Measurement:
    """Measure your own loop: `with gcbench.measure("name") as m: ... with m.step(): ...`.

    Arguments:
        name: what the loop is called in results and reports (letters, digits, . _ -).
        warmup: the loop's first steps, recorded and summarized apart (compilation happens
            there); they come out of the loop's iterations.
        capacity: the most timed steps that will be measured (arrays are preallocated).
        alloc_blocks: also count allocated memory blocks per step (walks the heap: slow).
        policy: the GC policy your loop follows, as results name it (`freeze` if you call
            `gc.freeze()`, `manual:K`, ...); by default `disable` when the collector is off
            at the first timed step and `default` otherwise.
        variant: the version of the loop this is (`flatten-once`): `compare` pairs two
            variants of one loop, each in its own folder.
        batch_size: recorded only when given (gcbench cannot know it).
        networks: recorded only when given (gcbench cannot know it).
        rss_every: read the resident set size every this many steps (0: never).
        explain: run under the collector's diagnostics instead of timing (docs/explain.md);
            by default as the environment variable GCBENCH_EXPLAIN says.

    Returns:
        A `Measurement`, a context manager whose `step()` brackets one step, with
            `result()`, `summary()`, `explanation()` and `save(folder)`; `print(m)` says
            what it measured.
    """
    if unknown:  # a misspelt keyword: one line naming the right word, not a bare TypeError
        from .core.errors import did_you_mean, keywords

        key, known = next(iter(unknown)), keywords(measure)
        raise _usage_error(f"gcbench.measure: unknown keyword {key!r}{did_you_mean(key, known)}; it takes "
                           f"{', '.join(known)}")
    return Measurement(name, warmup, capacity, alloc_blocks, policy, variant, batch_size, networks, rss_every,
                       explain)
