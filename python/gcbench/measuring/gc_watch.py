"""gc.disable, gc.enable and gc.freeze watched while measurements run: who turned the
collector off, on, or froze the heap, and where; and gcbench's own work around the loop
kept out of its schedule (`pause`, `balance`).

One watcher per function for the whole process, in place while at least one measurement
listens. Measurements nested in each other or in two threads share it, so a watcher never
wraps another one (a chain of them was a RecursionError); a watcher called from inside
itself calls the function gc had when gcbench was imported, without recording twice."""

from __future__ import annotations

import _thread
import gc
import sys

TYPE_CHECKING = False  # typing's own flag without importing typing or threading (the measured heap's)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Protocol

    class Listener(Protocol):
        def gc_called(self, name: str, caller: FrameType) -> None:
            """`gc.<name>` was called from `caller` (record it without making a tracked object)."""

WATCHED = ("disable", "enable", "freeze")  # the calls that change what the collector may do

_ORIGINAL = {name: getattr(gc, name) for name in WATCHED}  # as gc had them when gcbench was imported
_DISABLE, _ENABLE = gc.disable, gc.enable  # gcbench's own pause (`pause`), which no watcher sees
_lock = _thread.allocate_lock()
_listeners: list[Listener] = []
_replaced: dict[str, Callable] = {}  # what each watcher replaced in gc, while it is in place
_inside: set[int] = set()  # threads inside a watcher now


def _watcher(name: str) -> Callable:
    original = _ORIGINAL[name]

    def watcher(*args):
        me = _thread.get_ident()
        if me in _inside:  # called from inside itself: the original, once, unrecorded
            return original(*args)
        _inside.add(me)
        try:
            caller = sys._getframe(1)
            for listener in _listeners:
                listener.gc_called(name, caller)
            return _replaced.get(name, original)(*args)
        finally:
            _inside.discard(me)

    watcher.__name__ = watcher.__qualname__ = name
    watcher.__doc__ = original.__doc__
    return watcher


_WATCHERS = {name: _watcher(name) for name in WATCHED}


SPARES = 16  # objects made with a measurement, freed for those it keeps around the loop (`balance`; entering keeps 9)


def spares() -> list:
    """Tracked objects to give back by `balance`: made with the measurement, before the loop.
    Sets, which have no free list: a list or a tuple freed goes to its type's free list,
    and neither that nor its reuse moves the count."""
    return [set() for _ in range(SPARES)]


def young_count() -> int:
    """The young generation's count: tracked objects allocated less those freed since its
    last collection. Read before the tuple holding it is made, which is freed at once."""
    return gc.get_count()[0]


def balance(spare: list, young: int) -> None:
    """Free spare objects (or make more) until the young count is back at `young`, where
    gcbench's work around the loop (entering, leaving) kept objects of its own (or freed
    some): the collector starts a young collection when the count passes its threshold, so every
    object kept moves the loop's collections one allocation earlier (one young collection
    more in 2,000 steps of 300 cyclic objects; `tests/test_schedule_footprint.py`). Freeing
    a tracked object takes one off the count whatever its generation. Where a collection ran
    in between (leaving runs with the collector on), the count was reset, and nothing is
    given back: making hundreds of objects for it kept memory the loop never had."""
    over = young_count() - young
    if abs(over) > SPARES:  # a collection ran (the count starts again from zero): nothing of ours to undo
        return
    if over > 0:
        del spare[-over:]
    for _ in range(-over):  # it freed more than it kept (hooks dropped): as many made
        spare.append(set())


def pause() -> bool:
    """The collector off while gcbench does its own work around the loop (entering and
    leaving a measurement), unseen by any watcher: a collection there would be counted by
    the user's own `gc.callbacks` and would start from gcbench's objects. True where it
    was on: give it to `resume`."""
    was = gc.isenabled()
    _DISABLE()
    return was


def resume(was: bool) -> None:
    """The collector as `pause` found it."""
    if was:
        _ENABLE()


def listen(listener: Listener) -> None:
    """Record gc.disable/enable/freeze calls into `listener` until `stop(listener)`."""
    with _lock:
        if listener not in _listeners:
            _listeners.append(listener)
        for name in WATCHED:
            current = getattr(gc, name)
            if current is not _WATCHERS[name]:
                _replaced[name] = current
                setattr(gc, name, _WATCHERS[name])


def stop(listener: Listener) -> None:
    """No more calls into `listener`; the last listener gone, gc's functions are put back
    (those someone replaced after ours are theirs to put back: left as they are)."""
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)
        if _listeners:
            return
        for name in WATCHED:
            if getattr(gc, name) is _WATCHERS[name]:
                setattr(gc, name, _replaced.pop(name, _ORIGINAL[name]))
