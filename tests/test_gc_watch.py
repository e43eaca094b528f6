"""gc.disable/enable/freeze watched by nested measurements, threads and other people's
wrappers (issue 65, item 2): never a chain of wrappers, never a RecursionError after."""

import gc
import threading

from gcbench.measuring import gc_watch


class Calls:
    def __init__(self):
        self.names: list[str] = []

    def gc_called(self, name, caller):
        self.names.append(name)


def _both_enabled():
    gc.disable()
    gc.enable()


def test_nested_listeners_share_one_watcher_and_gc_is_given_back():
    outer, inner = Calls(), Calls()
    original = gc.disable
    gc_watch.listen(outer)
    gc_watch.listen(inner)
    watcher = gc.disable
    gc_watch.listen(outer)  # twice: still one watcher, one record per call
    assert gc.disable is watcher
    _both_enabled()
    gc_watch.stop(inner)
    _both_enabled()
    gc_watch.stop(outer)
    assert gc.disable is original
    assert gc.isenabled()
    assert outer.names == ["disable", "enable", "disable", "enable"]
    assert inner.names == ["disable", "enable"]


def test_a_listener_that_stops_out_of_order_leaves_no_chain():
    """The bug: an outer measurement re-installing its wrapper over an inner one's made
    each call the other (RecursionError in every later gc.disable())."""
    a, b = Calls(), Calls()
    original = gc.freeze
    gc_watch.listen(a)
    gc_watch.listen(b)
    gc_watch.stop(a)  # a stops first, then listens again (a GC budget's settling does so)
    gc_watch.listen(a)
    gc.freeze()
    gc.unfreeze()
    gc_watch.stop(b)
    gc_watch.stop(a)
    assert gc.freeze is original
    assert a.names == b.names == ["freeze"]
    for _ in range(3):
        _both_enabled()


def test_someone_elses_wrapper_of_the_watcher_calls_through_once():
    seen = Calls()
    gc_watch.listen(seen)
    watcher = gc.disable
    calls = []

    def theirs():
        calls.append(1)
        return watcher()

    gc.disable = theirs
    try:
        gc_watch.stop(seen)  # theirs sits on ours: left for them to put back
        assert gc.disable is theirs
        gc_watch.listen(seen)  # ours again, over theirs, which calls ours: called through once
        gc.disable()
        assert not gc.isenabled()
        assert calls == [1]
        assert seen.names == ["disable"]
    finally:
        gc.enable()
        gc_watch.stop(seen)
        gc.disable = gc_watch._ORIGINAL["disable"]
    assert gc.isenabled()


def test_listeners_in_threads_record_their_calls_and_leave_gc_as_it_was():
    original = (gc.disable, gc.enable, gc.freeze)
    seen = [Calls() for _ in range(4)]
    barrier = threading.Barrier(len(seen))

    def work(listener):
        barrier.wait()
        for _ in range(200):
            gc_watch.listen(listener)
            _both_enabled()
            gc_watch.stop(listener)

    threads = [threading.Thread(target=work, args=(c,)) for c in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (gc.disable, gc.enable, gc.freeze) == original
    assert gc.isenabled()
    for c in seen:  # its own calls at least (another thread's, made while it listened, too)
        assert c.names.count("disable") >= 200
        assert c.names.count("enable") >= 200
