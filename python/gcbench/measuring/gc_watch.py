"""gc.disable, gc.enable and gc.freeze watched while measurements run: who turned the
collector off, on, or froze the heap, and where.

One watcher per function for the whole process, put in place while at least one
measurement listens and taken away when the last one stops. Measurements nested in each
other (a `gcbench.measure` inside a GC budget) or running in two threads share it, so a
watcher never wraps another one (a chain of them, each calling the next, was a
RecursionError in every later call). A watcher called from inside itself (someone else's
wrapper of it between the two) calls the function gc had when gcbench was imported,
without recording twice.
"""

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
