"""The collector watched closely while a loop runs: what it collects, what it promotes to
the oldest generation and from where, and what a full collection has to scan.

How it works, and why: docs/internals.md, `gcbench.measuring.diagnose`.
"""

from __future__ import annotations

import collections
import gc
import itertools
import sys
import time
from _bisect import bisect_left  # the C half: bisect's module would add its own objects to the heap explained
from _weakref import ref  # weakref's C half, loaded with the interpreter
from collections import Counter

from . import probe

TYPE_CHECKING = False  # typing's own flag without importing typing (the explained heap's)
if TYPE_CHECKING:  # collections.abc too: a module of its own, 14 objects more in the explained heap
    from collections.abc import Iterable, Iterator, Sequence

    import numpy as np

# The files of a user's own loop (`gcbench.measure(..., explain=True)` adds the caller's) and
# the folders of their project (the caller's folder): allocation sites there, outside installed
# packages, are the package `user` ("your code", not a library's).
USER_FILES: set[str] = set()
USER_DIRS: set[str] = set()  # both read, the same sets, by site_names after the loop
# explain's own time in its hooks, at most, in the thread's CPU time (a busy machine stretches
# the wall time, not the work): past it, collections are logged and not analysed (a loop
# calling gc.collect() every step over a 10^6-object heap took 279 s to explain, its own
# steps 1.9 s; tests/test_explain.py checks the bound)
OWN_TIME_S = 60.0
# tuples that the hooks free (or make) to leave the young count where they found it (`_settle`):
# 21 items, one more than the largest tuple a free list keeps (20)
RESERVE, RESERVE_ITEM = 256, range(21)
# what the log keeps of each collection, in this order
LOG_FIELDS = ("step", "generation", "explicit", "pause_ns", "at_start_0", "at_start_1", "at_start_2", "collected",
              "uncollectable", "before_step")
FRAMES = 12  # frames tracemalloc keeps per allocation: enough to leave jax's and equinox's internals
# Sites "sampled" (`gcbench.measure(..., explain=True)`'s default): allocation sites traced over
# one interval between collections of generation 1 in this many (the first included), each
# whole: what the collection closing it promotes was all made inside it. Tracing slows every
# allocation, and telling an object's site costs ~20 µs under it: traced throughout, a loop of
# 1,000 cyclic objects a step over a heap of 10^5 objects took 5.5 ms a step to explain, where a
# snapshot of the heap per collection costs 1 ms (benchmarks/explain_overhead.py).
SAMPLED = "sampled"
SITE_INTERVALS = 8
GARBAGE_SITES = 64  # objects of a young collection whose sites are looked up, at most (~20 µs each)
# objects x types up to which `_type_counts` scans the list once a type (a young generation's few)
COUNT_BY_SCAN = 200_000
ID_RUN = 1 << 16  # ids sorted at once where numpy is not loaded (`_sorted_ids`)
TALLY_CHUNK = 256  # keys counted at once (`_tally`): counts up to 256 are the interpreter's cached ints
ORIGIN_SAMPLE = 1024  # objects of a full collection's scan looked up in the ids at the start (`_earlier`)


try:  # tracemalloc's C half: `tracemalloc` itself imports pickle, linecache and tokenize, 680
    # tracked objects in the heap of a loop explained, which delay its full collections
    import _tracemalloc as tracemalloc
    from _tracemalloc import _get_object_traceback as _frames_of  # newest first, without Frame objects
except ImportError:  # pragma: no cover - an interpreter without the private half of tracemalloc
    import tracemalloc  # type: ignore[no-redef]

    def _frames_of(obj: object, /) -> Sequence[tuple[str, int]] | None:
        tb = tracemalloc.get_object_traceback(obj)  # type: ignore[attr-defined]
        return None if tb is None else tuple((f.filename, f.lineno) for f in reversed(tb))

def _tally(keys: Iterable) -> collections.Counter:
    """`collections.Counter(keys)`, TALLY_CHUNK keys at a time, without asking the ABCs
    whether `keys` is a Mapping (as Counter's constructor does): each ABC would cache a weak
    reference to the iterator's type (and a callback with it) the first time, and again
    after any ABC registration clears those caches, counted as objects the loop kept: 32 of
    them, and a quarter more promotions a step, in the first GC budget of a pytest session.
    By chunks: a count past 256 is a new int at every key counted (each traced where sites
    are: 1.2 s a tally of 300,000 objects), a chunk's never are; the chunks' counts are
    added once a key a chunk."""
    total: collections.Counter = collections.Counter()
    chunk: collections.Counter = collections.Counter()
    get, keys = total.get, iter(keys)
    while True:
        collections._count_elements(chunk, itertools.islice(keys, TALLY_CHUNK))  # type: ignore[attr-defined]
        if not chunk:
            return total
        for k, n in chunk.items():
            total[k] = get(k, 0) + n
        chunk.clear()


_QUALNAME = type.__dict__["__qualname__"].__get__  # a type's own, whatever its metaclass does
_MODULE = type.__dict__["__module__"].__get__


class _Table:
    """Allocation frames and types by number, made while a loop runs: a key is a plain
    number (frames number x TYPES + type number), and a frames tuple that is already
    numbered is freed at once. Types are numbered by identity, never hashed: a metaclass
    that defines `__eq__` without `__hash__` makes its classes unhashable. A type is held
    weakly, with its name and module as it was numbered: held, a class the loop makes and
    drops each step stayed alive with everything it references (a class a step: 20 young
    collections and 2 of generation 1 explained where the loop made 15 and 1, now 14 and
    1; a type that died gives its address to a new one, numbered anew)."""

    TYPES = 1 << 24

    def __init__(self):
        self.frames_no: dict[Sequence[tuple[str, int]] | None, int] = {None: 0}
        self.frames: list[Sequence[tuple[str, int]] | None] = [None]
        self.refs: list[ref] = []  # the diagnosis's own objects (`Diagnosis._own`)
        self.names: list[str] = []
        self.modules: list[object] = []  # a type's `__module__`: a str, unless a class made it another object
        self.type_no: dict[int, int] = {}  # id(type) -> number
        self.type_number(_Table)

    def type_number(self, tp: type) -> int:
        k = self.type_no.get(id(tp))
        if k is None or self.refs[k]() is not tp:  # new, or a dead type's address given to another
            k = self.type_no[id(tp)] = len(self.refs)
            self.refs.append(ref(tp))
            self.names.append(_QUALNAME(tp))
            self.modules.append(_MODULE(tp))
        return k

    def type_of(self, obj: object) -> int:
        return self.type_number(type(obj))

    def key(self, obj: object) -> int:
        fr = _frames_of(obj)
        k = self.frames_no.get(fr)
        if k is None:
            k = self.frames_no[fr] = len(self.frames)
            self.frames.append(fr)
        return k * self.TYPES + self.type_number(type(obj))

    def decode(self, key: int) -> tuple[Sequence[tuple[str, int]] | None, int]:
        """A key's allocation frames and type number."""
        return self.frames[key // self.TYPES], key % self.TYPES


def _scaled(counts: collections.Counter, total: int) -> collections.Counter:
    """`counts` scaled down to sum to `total`, each in proportion (largest remainders first)."""
    have = sum(counts.values())
    if have <= total:
        return counts
    exact = {k: n * total / have for k, n in counts.items()}
    out: collections.Counter = collections.Counter()
    for k, x in exact.items():
        out[k] = int(x)
    for k in sorted(exact, key=lambda k: exact[k] - int(exact[k]), reverse=True)[:total - sum(out.values())]:
        out[k] += 1
    return +out


class _Counts:
    """Objects by type and by allocation site, as the diagnosis's numbers (`_Table`) while a
    loop runs; named (`to_json`, `site_names`) after it: naming a site at every collection
    cost the loop's time, and the naming code's objects would be in the heap explained."""

    def __init__(self):
        self.types: collections.Counter = collections.Counter()  # type number -> objects
        self.sites: collections.Counter = collections.Counter()  # `_Table.key` (frames and type) -> objects
        self.untraced = 0  # objects counted by type only, a site of their own (`site_names.UNTRACED`)
        self.total = 0

    def add_many(self, objs: list, sites: bool, table: _Table | None = None, untraced: bool = True) -> None:
        """Objects still alive, by type and, with `sites`, by allocation site (numbered in
        `table`, the diagnosis's own, while a loop runs)."""
        # objects by (traceback, type) first: a step's objects come from few tracebacks
        # (59 in an Equinox loop), and each pair is walked once instead of once per
        # object (that loop's explanation took 76 s that way, 33 s this way); by number:
        # a Counter keyed by tuples would leave its keys in the interpreter's free lists,
        # which hand them to the loop's next tuples without counting them
        table = table or _Table()
        self.add_types(_tally(map(table.type_of, objs)), _tally(map(table.key, objs)) if sites else None, untraced)

    def add_types(self, types: collections.Counter, frames: collections.Counter | None,
                  untraced: bool = True) -> None:
        """Objects by type number (`_Table.type_of`) and, where traced, by `_Table.key`
        (allocation frames and type; frames None: untraced, a site of its own unless
        `untraced` is False: a sample's other objects); they need not be alive (the garbage a
        collection freed is counted so)."""
        for no, n in types.items():
            self.types[no] += n
        for k, n in (frames or {}).items():
            self.sites[k] += n
        total = sum(types.values())
        if frames is None and total and untraced:
            self.untraced += total
        self.total += total

    def to_json(self, table: _Table) -> dict:
        """The counts named: by type, package, site, the user's own line and site and type,
        each table its largest (`site_names.named_counts`)."""
        from . import site_names

        return site_names.named_counts(self.types, self.sites, self.untraced, self.total, table,
                                       (USER_FILES, USER_DIRS))


class _Baseline:
    """The ids of the objects there as the diagnosis started: which objects a loop made and
    which it found, sorted, 8 bytes an object: where numpy is loaded already (a JAX or
    PyTorch program) in its int64 array, looked up a list at a time; else in an anonymous
    memory map (`probe.columns`), looked up by bisection. A set of ints was ~70 bytes an
    object (+71 MiB on entering a loop over 10^6 objects, its peak memory with it). numpy is
    never imported for it: its 10,000 objects would join the heap whose schedule is
    explained. Neither is an object the collector tracks."""

    def __init__(self):
        self._sorted: np.ndarray | None = None  # where numpy is loaded
        self._view: memoryview = _NO_IDS  # where it is not

    def fill(self, objs: list) -> None:
        np = sys.modules.get("numpy")
        if np is None:
            self._sorted, self._view = None, _sorted_ids(objs)
            return
        self._sorted, self._view = np.fromiter(map(id, objs), np.int64, len(objs)), _NO_IDS
        self._sorted.sort()

    def _has(self, i: int) -> bool:
        view = self._view
        k = bisect_left(view, i)
        return k < len(view) and view[k] == i

    def found(self, objs: list) -> list[bool]:
        """Per object of `objs`, whether it was there as the diagnosis started."""
        if self._sorted is None:
            has = self._has
            return [has(id(o)) for o in objs]
        return _among(self._sorted, objs).tolist()

    def count_found(self, objs: list) -> int:
        """How many of `objs` were there as the diagnosis started."""
        if self._sorted is None:
            return sum(map(self._has, map(id, objs)))
        return int(_among(self._sorted, objs).sum())

    def own(self) -> list:
        """The tracked objects it holds (the view, its buffer and the memory map): the
        diagnosis's, never a loop's."""
        buffers = gc.get_referents(self._view)
        return [self._view, *buffers, *gc.get_referents(*buffers)]


_NO_IDS = memoryview(b"").cast("q")


def _sorted_ids(objs: list) -> memoryview:
    """The ids of `objs`, sorted, in an anonymous memory map: sorted a run of `ID_RUN` at a
    time and the runs merged pairwise, so that no more than a run's ints exist at once
    (sorting them all at once made an int of each, 40 bytes an object of peak memory), and
    nothing is imported for it (what is made now and kept would count as the loop's)."""
    n = len(objs)
    src = probe.columns({"ids": (n, "q")}).pop("ids")
    for at in range(0, n, ID_RUN):
        for k, i in enumerate(sorted(map(id, objs[at:at + ID_RUN])), at):
            src[k] = i
    width = ID_RUN
    if width < n:
        dst = probe.columns({"ids": (n, "q")}).pop("ids")
        while width < n:
            for lo in range(0, n, 2 * width):
                _merge(src, dst, lo, min(lo + width, n), min(lo + 2 * width, n))
            src, dst, width = dst, src, 2 * width
    return src


def _merge(src: memoryview, dst: memoryview, lo: int, mid: int, hi: int) -> None:
    """dst[lo:hi] = the sorted src[lo:mid] and src[mid:hi], merged."""
    i, j, k = lo, mid, lo
    while i < mid and j < hi:
        a, b = src[i], src[j]
        if a <= b:
            dst[k] = a
            i += 1
        else:
            dst[k] = b
            j += 1
        k += 1
    dst[k:k + mid - i] = src[i:mid]
    k += mid - i
    dst[k:k + hi - j] = src[j:hi]


def _among(base: np.ndarray, objs: list) -> np.ndarray:
    """Per object of `objs`, whether its id is in `base` (sorted), as booleans."""
    import numpy as np

    wanted = np.fromiter(map(id, objs), np.int64, len(objs))
    if not len(base):
        return np.zeros(len(wanted), bool)
    at = np.minimum(np.searchsorted(base, wanted), len(base) - 1)
    return base[at] == wanted


class Diagnosis:
    """Installs itself in gc.callbacks and records, for every collection: its generation,
    pause, the objects in each generation at its start, objects collected and uncollectable;
    at each collection of generation 1 the objects it promoted; at each full collection
    what it scanned; and the cyclic garbage, by type (and allocation site, for young
    collections where sites are traced).

    Explaining must not change what it explains: the garbage is told by the objects'
    types (at a young collection where sites are traced, their ids and sites) taken when a
    collection starts, against the survivors' when it stops (the young generations and the
    new tail of the next one), never by keeping the objects (DEBUG_SAVEALL kept every cycle alive
    until the end: a loop of self-referencing 64 KiB objects grew to gigabytes and made full
    collections its unexplained run never made). The count is the collector's own
    (`collected`); where more objects left the lists than it collected (tuples and dicts
    it untracked), the excess is taken from tuples and dicts first."""

    def __init__(self, steps: int, sites: bool | str = True, count_garbage: bool = True,
                 site_steps: int | None = None):
        self.steps = steps
        self.sites = sites  # True: traced throughout; SAMPLED: one interval in SITE_INTERVALS; False: never
        # tracemalloc slows allocation-heavy steps tens of times: sites are traced over the
        # last `site_steps` steps only (all of them when None)
        self.site_from = 0 if site_steps is None else max(0, steps - site_steps)
        self.count_garbage = count_garbage
        # Explaining must not move the schedule it explains. Everything the diagnosis keeps is
        # made here, before the loop: while the steps run, the hooks only grow these lists and
        # counters (numbers, strings) and clear these dicts, and every other object they make
        # they free before they return. A container made in a hook and kept (a record of a
        # collection as a dict, a fresh dict for the next one) would be one more object in the
        # young count after each collection, and move every collection after it.
        self._log: list[int] = []  # per collection, LOG_FIELDS numbers in a row
        self.promoted = _Counts()
        # a 64-bit count per step in an anonymous memory map (probe.columns): pages the steps
        # never reach are never touched (a list of `steps` zeros was 0.8 MB at 100,000 steps)
        self.promoted_per_step: memoryview = probe.columns({"promoted": (steps, "q")}).pop("promoted")
        self.promoted_before = 0  # promoted during the run, but made before it
        self.promoted_sampled = 0  # promoted by collections that closed a traced interval (SAMPLED sites)
        self.scanned = _Counts()
        # what the full collections scanned: objects there before the timed steps, and made in them
        self.scanned_before = self.scanned_made = 0
        self.scans = 0
        self.garbage = _Counts()
        # [step, objects in the oldest generation]: at the start (step -1), after each collection
        # of generation 1 or 2, and at the end (step = steps)
        self.oldest: list[int] = []  # step, size, step, size, ... (pairs in to_json)
        self.step = -1
        self.done = 0  # steps finished: a collection between steps comes before step `done`
        self._baseline = _Baseline()
        # ids as keys of dicts of numbers, which CPython does not track: what the hooks keep
        # through a collection is then nothing the collector counts as a survivor (a set, or a
        # dict holding types, would be promoted with the loop's objects and move its schedule)
        self._old_len = 0
        # no collection of generation 1 or 2 yet: objects young as the diagnosis started are
        # still young, and a collection of generation 1 may promote them (after one, every
        # object it promotes was made since: an id of the start found among them is an address
        # the allocator gave again, to a new object)
        self._young_at_start = True
        self._intervals = 0  # collections of generation 1 or 2 seen: where sites are sampled, which are traced
        self._before: dict[int, int] = {}  # id -> type number of the collected generations' objects, at a start
        # young collections, sites traced: id -> allocation frames and type (`_Table.key`)
        self._before_frames: dict[int, int] = {}
        self._alive: dict[int, None] = {}  # the sample's survivors, by id
        # every collection: the collected generations' objects by type number as it starts, and
        # its survivors' as it stops (counted in C: the heap's ids would be an int each)
        self._before_types: collections.Counter = collections.Counter()
        self._after_types: collections.Counter = collections.Counter()
        self._table = _Table()  # frames and types by number
        self._t0 = 0
        self._c0 = 0
        self.frozen_seen = -1  # objects frozen as the last full collection began (as the steps began before one)
        # what the hook raised (a signal's exception), kept: a slot `gcbench.measure` shares with its probes
        self.kept: list[BaseException | None] = [None]
        self._explicit = 0
        self._start0 = self._start1 = self._start2 = -1
        self.started = False
        self._was_tracing = False
        self.tracked_at_start = -1
        self.older_at_start = -1
        self._hook = self._on  # bound once: a bound method made when it is installed would be kept
        self._reserve: list[tuple] = [tuple(RESERVE_ITEM) for _ in range(RESERVE)]
        # explain's own time: past `budget_ns` of its CPU time, collections are logged, no longer analysed
        self.spent_ns = 0
        self.spent_cpu_ns = 0  # the same in the thread's CPU time: what a budget's GC share leaves out
        self.budget_ns = int(OWN_TIME_S * 1e9)
        self.deep = True
        self.shallow_from: int | None = None  # the step from which collections were only logged
        self.unsettled = 0  # objects the hooks left on the young count when the reserve ran out

    @property
    def collections(self) -> list[dict]:
        """Every collection seen, as records (made from the log when asked, after the loop)."""
        log, n = self._log, len(LOG_FIELDS)
        return [dict(zip(LOG_FIELDS, log[i:i + n], strict=True)) for i in range(0, len(log), n)]

    # -- the hooks ------------------------------------------------------------------------
    def _on(self, phase: str, info: dict) -> None:
        """The hook: what it raises (a Ctrl-C landing in it) is kept (`kept`), which CPython
        would report as unraisable and lose (probe.StepProbe has the same)."""
        try:
            self._on_collection(phase, info)
        except BaseException as e:
            if self.kept[0] is None:
                self.kept[0] = e

    def _on_collection(self, phase: str, info: dict) -> None:
        gen = info["generation"]
        if phase == "start":
            began, began_cpu = time.perf_counter_ns(), time.thread_time_ns()
            self._start(gen)
            self._c0 = time.thread_time_ns()
            self._t0 = time.perf_counter_ns()
            self.spent_ns += self._t0 - began
            self.spent_cpu_ns += self._c0 - began_cpu
            return
        pause = time.perf_counter_ns() - self._t0
        pause_cpu = time.thread_time_ns() - self._c0
        count = gc.get_count()[0]
        try:
            if self.deep:
                self._after(gen, info, pause)
            else:  # explain's own time ran out: the collection is logged, not analysed
                self._log += (self.step, gen, self._explicit, pause, self._start0, self._start1, self._start2,
                              info["collected"], info["uncollectable"], self.done)
        finally:
            self._settle(count)
            self.spent_ns += time.perf_counter_ns() - self._t0 - pause
            self.spent_cpu_ns += time.thread_time_ns() - self._c0 - pause_cpu
            if self.deep and self.spent_cpu_ns > self.budget_ns:
                self.deep = False
                self.shallow_from = self.step

    def _start(self, gen: int) -> None:
        """The start of a collection: who is there, to tell at its stop what it promoted and freed."""
        # explicit (gc.collect()) or the collector's own, told as the probe tells them
        self._explicit = int(probe.explicit(gc.get_count()[0]))
        self._start0, self._start1, self._start2 = len(gc.get_objects(0)), len(gc.get_objects(1)), -1
        if gen >= 2:  # what this scan leaves out: the frozen objects now, not after the loop's own unfreeze
            self.frozen_seen = gc.get_freeze_count()
        if not self.deep:
            return
        if self.count_garbage:  # who is there now: whoever is gone at the stop was collected
            # one list from get_objects, never one built around its calls: a list being built
            # is itself in generation 0, would hold itself, and be cyclic garbage of ours; the
            # young first (a list of the oldest made before it would be among them, one list of
            # ours counted as the collection's garbage)
            objs = gc.get_objects(0)
            if gen == 0 and self._tracing():
                self._remember_sample(objs)
            elif gen >= 1:
                objs += gc.get_objects(1)
            # all of them by type, in C: no id of an object (an int each, itself traced where sites are)
            self._before_types.update(self._type_counts(objs))
            del objs
        oldest = gc.get_objects(2) if gen >= 2 else None
        if gen == 1:
            self._old_len = len(gc.get_objects(2))
        elif oldest is not None:
            self._start2 = len(oldest)
            self.scans += 1
            scanned = self._type_counts(oldest)
            self.scanned.add_types(scanned, None)
            if self.count_garbage:
                self._before_types.update(scanned)
            del scanned
            earlier = self._earlier(oldest)
            self.scanned_before += earlier
            self.scanned_made += len(oldest) - earlier
        del oldest

    def _earlier(self, oldest: list) -> int:
        """How many of a full collection's `oldest` were there as the diagnosis started,
        from ORIGIN_SAMPLE of them evenly spaced (the generation's list runs from the oldest
        promoted to the newest), scaled: a share the report gives in whole percent. Each
        lookup is a bisection of the ids, 12 µs under tracemalloc, which traces the int each
        comparison makes: every one looked up took 3.6 s a collection of 300,000 objects."""
        if not oldest:
            return 0
        sample = oldest[::len(oldest) // ORIGIN_SAMPLE + 1]
        return round(self._baseline.count_found(sample) * len(oldest) / len(sample))  # all of a short list: exact

    def _remember_sample(self, objs: list) -> None:
        """A young collection's objects where sites are traced: a sample of them by id and
        allocation site (at young collections only: what survives one of generation 0 stays
        young), GARBAGE_SITES at most. A method of its own: its generator expressions make
        their names cells of the frame that holds them, created as it is entered, and `_start`
        would make two at every collection, before its snapshot, each gone at its stop and
        counted as the collection's garbage."""
        sample = objs[::len(objs) // GARBAGE_SITES + 1]
        number, key = self._table.type_number, self._table.key
        self._before.update((id(o), number(type(o))) for o in sample)
        self._before_frames.update((id(o), key(o)) for o in sample)

    def _type_counts(self, objs: list) -> Counter:
        """The objects by type number (`_Table.type_number`), counted in C. A few types
        (a young generation's) are counted by `list.count`, one int each; many by a tally
        a chunk at a time (`_tally`: whole, its counts past 256 were a new int at each
        object, each traced where sites are: 2 ms a collection of 800 objects). A metaclass
        that makes its classes unhashable is counted object by object, by identity."""
        types = list(map(type, objs))
        try:
            distinct = dict.fromkeys(types)
        except TypeError:
            return _tally(map(self._table.type_of, objs))
        number = self._table.type_number
        counts: Counter = Counter()
        if len(distinct) * len(types) <= COUNT_BY_SCAN:
            for tp in distinct:
                counts[number(tp)] += types.count(tp)
        else:
            for tp, n in _tally(types).items():
                counts[number(tp)] += n
        del types, distinct
        return counts

    def _settle(self, count: int) -> None:
        """Leave the young count as the hook found it: what the hook made and freed into a
        free list, or kept, counts as new objects, and would move every collection after it.
        One object of the reserve freed takes one off the count; one made puts one on. The
        reserve's objects are tuples of 21 numbers: no free list keeps them (freed, they
        leave the count), and the collector untracks them at their first collection, so
        they are never in the oldest generation a full collection waits for."""
        reserve = self._reserve
        surplus = gc.get_count()[0] - count
        while surplus > 0 and reserve:
            reserve.pop()
            surplus -= 1
        while surplus < 0:
            reserve.append(tuple(RESERVE_ITEM))
            surplus += 1
        self.unsettled += max(surplus, 0)

    def _after(self, gen: int, info: dict, pause: int) -> None:
        """The stop of a collection: what it promoted, scanned and freed, and its record."""
        # what survived, first (before this hook makes an object of its own): the young now, and
        # the new tail of the generation it moved to (each collection appends its survivors to
        # the next one's list), or all of the oldest
        if gen == 0:
            survivors = gc.get_objects(0)
            tail = gc.get_objects(1)[self._start1:]
            if self._before:  # the sample's survivors, by id (in the new tail: a young object now is new)
                self._alive.update(dict.fromkeys(map(id, tail)))
            if self._before_types:
                survivors += tail
                self._after_types.update(self._type_counts(survivors))
            del survivors, tail
        else:
            young = gc.get_objects(0)
            young += gc.get_objects(1)
            oldest = gc.get_objects(2)
            if self._before_types:
                young += oldest[self._old_len:] if gen == 1 else oldest
                self._after_types.update(self._type_counts(young))
            del young
            self._promoted(gen, oldest)
            del oldest
        if self._before_types:
            self._count_garbage(gen, info["collected"])
        self._log += (self.step, gen, self._explicit, pause, self._start0, self._start1, self._start2,
                      info["collected"], info["uncollectable"], self.done)
        if gen >= 1 and self.sites == SAMPLED:
            self._sample_sites()

    def _sample_sites(self) -> None:
        """An interval between collections of older generations ended (`SAMPLED` sites):
        the next one is traced if it is one in SITE_INTERVALS, else not."""
        self._intervals += 1
        if self._was_tracing or not self.started:  # the user's own tracing: left as it is
            return
        traced = self._intervals % SITE_INTERVALS == 0
        if traced and not tracemalloc.is_tracing():
            tracemalloc.start(FRAMES)
        elif not traced and tracemalloc.is_tracing():
            tracemalloc.stop()

    def _promoted(self, gen: int, oldest: list) -> None:
        """After a collection of generation 1, what it promoted; after one of every
        generation, the size of the oldest."""
        if gen == 1:
            # its survivors, appended to the oldest generation's list: its new tail (an old object
            # that died in the collection, freed by a finalizer, shifts it by one; no id of the
            # young generations is taken, an int each)
            promoted = oldest[self._old_len:]
            # Objects that existed before the diagnostic steps and happen to be promoted now
            # are a one-off of the start, not what a step costs: counted apart. Only at the
            # first collection of an older generation: by the next, the ids of the start that
            # died were the addresses of new objects (a loop promoting 86 objects a step and
            # freeing them 30 steps later read 7 a step where every id was looked up).
            if self._young_at_start:
                found = self._baseline.found(promoted)
                before = sum(found)
                self.promoted_before += before
                if before:
                    promoted = [o for o, old in zip(promoted, found, strict=True) if not old]
                del found
            self.promoted.add_many(promoted, self._tracing(), self._table, untraced=self.sites != SAMPLED)
            if self._tracing():  # closing a traced interval: what the share of traced objects is of
                self.promoted_sampled += len(promoted)
            if 0 <= self.step < self.steps:
                self.promoted_per_step[self.step] += len(promoted)
            self.oldest += (self.step, len(oldest))
            del promoted
        else:
            self.oldest += (self.step, len(oldest))
        self._young_at_start = False

    def _count_garbage(self, gen: int, collected: int) -> None:
        """The objects of the collected generations that are gone from every list, by type
        (the types before, less the survivors': no object made in a collection survives it),
        and where sites are traced, a sample of them by allocation site: the cyclic garbage
        this collection freed."""
        try:
            if collected:
                types = self._adjusted(+(self._before_types - self._after_types), collected)
                self.garbage.add_types(types, self._gone_sites(types), untraced=not self.sites)
        finally:
            self._before.clear()
            self._before_frames.clear()
            self._alive.clear()
            self._before_types.clear()
            self._after_types.clear()

    def _gone_sites(self, types: Counter) -> Counter | None:
        """The sample's objects that did not survive, by `_Table.key` (allocation frames and
        type), none of a type beyond what the collection freed of it; None unsampled."""
        if not self._before:
            return None
        alive, frames = self._alive, self._before_frames
        by_frames: Counter = Counter()
        room = dict(types)
        for i, no in self._before.items():
            if i not in alive and room.get(no, 0) > 0:
                room[no] -= 1
                by_frames[frames.get(i, no)] += 1  # untraced: frames number 0
        return by_frames

    def _adjusted(self, types: Counter, collected: int) -> Counter:
        """The objects gone from the lists, by type number, as the collector's own count of
        what it freed: the tuples and dicts it untracked (not freed: they hold no container)
        taken off first, and where more left than it freed, scaled down to its count."""
        excess = sum(types.values()) - collected
        for tp in (tuple, dict):
            no = self._table.type_number(tp)
            take = min(max(excess, 0), types.get(no, 0))
            if take:
                types[no] -= take
                excess -= take
        types = +types
        if excess > 0:
            # more left the lists than the collector freed: a finalizer or a weakref callback
            # freed them by reference count, or another thread did while a finalizer let it
            # run. Which ones, nothing tells; the garbage reported is scaled to the
            # collector's own count, by type, so that it never exceeds what it freed
            types = _scaled(types, collected)
        return types

    def _tracing(self) -> bool:
        return bool(self.sites) and tracemalloc.is_tracing()

    # -- running ----------------------------------------------------------------------------
    def start(self, watch: bool = True) -> None:
        """Begin watching: the steps that follow set `self.step` to their number (-1
        between steps) and `stop` ends it (for a loop someone else drives: `measure`).

        With `watch=False` nothing is installed: only the objects that starting makes and
        frees are made and freed, so that a loop measured without explaining starts from
        the heap, free lists and young count of one that is explained. `tracked_at_start`
        is the number of objects the collector tracked, in both."""
        self.frozen_seen = gc.get_freeze_count()
        young, middle = len(gc.get_objects(0)), len(gc.get_objects(1))
        objs = gc.get_objects()
        self.tracked_at_start = len(objs) - self.own_tracked()  # the diagnosis's own are not the loop's
        # the older generations' and the oldest's, from the same listing: another list of the
        # heap's size would leave its memory in the resident set through the loop
        # (user_loop.tracked_and_older)
        self.older_at_start = len(objs) - young
        oldest = self.older_at_start - middle
        if watch:
            self._baseline.fill(objs)
        del objs
        pair = (-1, oldest)  # made in both cases: a tuple kept or freed alike
        if watch:
            self._was_tracing = tracemalloc.is_tracing()
            gc.callbacks.append(self._hook)
            self.started = True
            self.oldest += pair
            if self.site_from == 0:
                self._trace()
        del pair

    def _own(self) -> Iterator[object]:
        """The tracked objects the diagnosis itself made while it watched and holds (frames
        tuples and their items, the reserve's tuples, the baseline's map): gcbench's, never
        a loop's."""
        for fr in self._table.frames:
            if fr is not None:
                yield fr
                yield from fr
        yield from self._table.refs
        yield from self._reserve
        yield from self._baseline.own()

    def survivors(self) -> dict:
        """The objects the collector tracks that were made since `start` and are alive now,
        by type and, where traced, by allocation site: what a loop keeps (call it before
        `stop`). The diagnosis's own objects, and those this call makes, are not among them."""
        if not self.started:
            return _Counts().to_json(self._table)
        objs = gc.get_objects()  # first: what is made below (the naming module, loaded now) is not in it
        from . import site_names

        found, own = self._baseline.found(objs), set(map(id, self._own()))
        kept = []
        tracing = self._tracing()
        for o, old in zip(objs, found, strict=True):  # a loop, not a comprehension: no cell of ours among what it kept
            if not old and id(o) not in own:
                if tracing and site_names.made_by_gcbench(_frames_of(o)):
                    continue  # allocated by gcbench's own code (its hooks run inside the loop's collections)
                kept.append(o)
        del objs, found
        counts = _Counts()
        counts.add_many(kept, tracing, self._table)
        del kept
        return counts.to_json(self._table)

    def own_tracked(self) -> int:
        """How many of the diagnosis's own objects the collector tracks now (a loop's tracked
        growth leaves them out)."""
        return sum(map(gc.is_tracked, self._own()))

    def begin_step(self, i: int) -> None:
        """Step `i` of a loop someone else drives begins (allocation sites traced from
        `site_from` on); nothing is allocated."""
        self.step = i
        self.done = i
        if self.started and i == self.site_from and i:
            self._trace()

    def _trace(self) -> None:
        if self.sites and not self._was_tracing:
            tracemalloc.start(FRAMES)

    def stop(self, steps: int | None = None) -> None:
        """Stop watching, after `steps` steps (all that were planned when None)."""
        if not self.started:
            return
        self.started = False
        if steps is not None:
            self.steps = steps
            self.promoted_per_step = self.promoted_per_step[:steps]
        self.step = self.steps
        try:
            self.oldest += (self.steps, len(gc.get_objects(2)))
        finally:
            while self._hook in gc.callbacks:
                gc.callbacks.remove(self._hook)
            self._before.clear()
            self._before_frames.clear()
            self._alive.clear()
            self._before_types.clear()
            self._after_types.clear()
            if self.sites and not self._was_tracing and tracemalloc.is_tracing():
                tracemalloc.stop()

    def run(self, step, first: int = 0) -> None:
        """Call `step(first + i)` for i in range(steps) under the diagnostics."""
        self.start()
        try:
            for i in range(self.steps):
                self.begin_step(i)
                step(first + i)
                self.end_step(i)
        finally:
            self.stop()

    def end_step(self, i: int) -> None:
        """Step `i` ended: what collects now is between steps, before step i + 1."""
        self.step = -1
        self.done = i + 1

    def _steps_of(self, generation: int) -> list[int]:
        """The timed steps that held a collection of `generation` (2: every full one)."""
        return [c["step"] for c in self.collections if c["generation"] == generation and 0 <= c["step"] < self.steps]

    def _scanned_json(self) -> dict:
        """What the full collections scanned, by where it was made, and the heap frozen then."""
        return {**self.scanned.to_json(self._table), "collections": self.scans,
                "origin": {"before the timed steps": self.scanned_before,
                           "made during the timed steps": self.scanned_made},
                "frozen": self.frozen_seen if self.frozen_seen >= 0 else gc.get_freeze_count()}

    def to_json(self) -> dict:
        from . import site_names

        return {
            "steps": self.steps,
            "collections": [{**{k: v for k, v in c.items() if not k.startswith("at_start_")},
                             "objects_at_start": [c["at_start_0"], c["at_start_1"], c["at_start_2"]]}
                            for c in self.collections],
            "promoted": {**self.promoted.to_json(self._table), "made_before_the_steps": self.promoted_before,
                         "sampled": self.promoted_sampled if self.sites == SAMPLED else None},
            "promoted_per_step": self.promoted_per_step.tolist(),
            "scanned": self._scanned_json(),
            "garbage": self.garbage.to_json(self._table),
            "oldest": [list(pair) for pair in zip(self.oldest[::2], self.oldest[1::2], strict=True)],
            "full_steps": self._steps_of(2),
            "gen1_collections": len(self._steps_of(1)),
            "thresholds": list(gc.get_threshold()),
            "collector": site_names.collector_model(),
            "sites_traced": bool(self.sites),
            "site_intervals": SITE_INTERVALS if self.sites == SAMPLED else None,
            "sites_from_step": self.site_from if self.sites else None,
            "own_time_s": round(self.spent_ns / 1e9, 3),
            "analysed_until_step": self.shallow_from,  # None: every collection was analysed
        }


def diagnose(step, steps: int, first: int = 0, sites: bool = True, count_garbage: bool = True,
             site_steps: int | None = None) -> dict:
    """Run `step(first + i)` `steps` times under a `Diagnosis`; return what it recorded."""
    d = Diagnosis(steps, sites, count_garbage, site_steps)
    d.run(step, first)
    return d.to_json()
