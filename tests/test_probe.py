import gc
import time

import pytest

from gcbench.measuring.probe import StepProbe


class Cycle:
    def __init__(self):
        self.me = self


def test_forced_collection_is_counted_with_its_pause_and_logged():
    probe = StepProbe(3)
    with probe:
        probe.begin()
        probe.end(0)
        probe.begin()
        garbage = [Cycle() for _ in range(20_000)]
        del garbage
        gc.collect()
        probe.end(1)
        probe.begin()
        gc.collect(0)
        probe.end(2)
    assert probe.column("gc_collections")[1].tolist()[2] >= 1
    assert probe.column("gc_collected")[1] >= 20_000
    assert 0 < probe.column("gc_ns")[1] <= probe.column("wall_ns")[1]
    assert probe.column("gc_collections")[2].tolist()[0] >= 1
    assert probe.steps == 3
    log = probe.event_log()
    full = [i for i, g in enumerate(log["generation"]) if g == 2 and log["step"][i] == 1]
    assert full
    assert log["collected"][full[-1]] >= 20_000
    assert log["pause_ns"][full[-1]] > 0
    assert {s for s, g in zip(log["step"], log["generation"], strict=True) if g == 0} >= {2}
    assert sum(log["pause_ns"]) == probe.total_gc_ns


def test_pause_brackets_other_callbacks():
    # A callback that is in gc.callbacks before the probe runs inside the measured pause.
    def slow_callback(phase, info):
        if phase == "start":
            time.sleep(0.02)

    gc.callbacks.append(slow_callback)
    try:
        probe = StepProbe(1)
        with probe:
            assert probe.bracket_ok()
            probe.begin()
            gc.collect()
            probe.end(0)
    finally:
        gc.callbacks.remove(slow_callback)
    assert probe.column("gc_ns")[0] >= 20_000_000


def test_uninstall_removes_hooks_and_quiet_steps_record_zero():
    before = list(gc.callbacks)
    probe = StepProbe(2)
    gc.disable()
    try:
        with probe:
            for i in range(2):
                probe.begin()
                sum(range(1000))
                probe.end(i)
    finally:
        gc.enable()
    assert gc.callbacks == before
    assert probe.column("gc_ns").tolist() == [0, 0]
    assert (probe.column("wall_ns") > 0).all()
    assert probe.arrays()["gc_collections"] == [[0, 0, 0], [0, 0, 0]]
    assert "alloc_blocks" not in probe.arrays()  # opt-in


def test_pressure_counts_net_new_tracked_objects_across_collections():
    keep = []
    probe = StepProbe(40)
    with probe:
        for i in range(40):  # 500 lists kept per step: collections of generation 0 run in between
            probe.begin()
            keep.append([[] for _ in range(500)])
            probe.end(i)
    pressure = probe.column("gc_pressure").tolist()
    assert probe.column("gc_collections")[:, 0].sum() >= 10  # the young generation was collected many times
    # 500 lists and the list holding them, each step, collections or not (the first step
    # also pays for whatever the interpreter set up on first use)
    assert all(501 <= p <= 502 for p in pressure[1:]), pressure
    assert sorted(pressure)[20] == 501, pressure


def test_pressure_of_a_clean_step_is_zero():
    probe = StepProbe(50)
    with probe:
        for i in range(50):
            probe.begin()
            tmp = [[] for _ in range(100)]  # made and freed within the step
            del tmp
            probe.end(i)
    assert probe.column("gc_pressure")[1:].tolist() == [0] * 49


def test_allocated_blocks_when_asked_for():
    probe = StepProbe(1, alloc_blocks=True)
    keep = []
    with probe:
        probe.begin()
        keep.extend(object() for _ in range(5000))
        probe.end(0)
    assert probe.column("alloc_blocks")[0] >= 5000
    assert probe.arrays()["alloc_blocks"][0] >= 5000


def test_host_time_ends_where_the_loop_says_the_step_was_dispatched():
    probe = StepProbe(4)
    with probe:
        for i in range(4):
            probe.begin()
            time.sleep(0.004)  # the host's part: Python and dispatch
            probe.dispatched()
            time.sleep(0.012)  # waiting for the device
            probe.end(i)
    out = probe.arrays()
    host, wall = out["host_ns"], out["wall_ns"]
    assert len(host) == 4
    assert all(3.5e6 <= h <= w - 11e6 for h, w in zip(host, wall, strict=True))
    # a loop that never marks its steps records no host time at all (not zeros)
    plain = StepProbe(2)
    with plain:
        for i in range(2):
            plain.begin()
            plain.end(i)
    assert "host_ns" not in plain.arrays()


def test_the_arrays_of_before_0_3_are_read_with_a_deprecation_warning():
    """`probe.wall_ns` was a numpy array of the whole capacity: it still is, with a warning
    that names `probe.column`, which reads the steps taken; a name that never was one is
    an AttributeError as before."""
    probe = StepProbe(4)
    with probe:
        for i in range(2):
            probe.begin()
            probe.end(i)
    with pytest.warns(DeprecationWarning, match=r"probe.column\('wall_ns'\)"):
        old = probe.wall_ns
    assert old.shape == (4,)
    assert old[:2].tolist() == probe.column("wall_ns").tolist()
    assert (old[:2] > 0).all()
    with pytest.warns(DeprecationWarning, match="StepProbe.gc_collections is deprecated"):
        assert probe.gc_collections.shape == (4, 3)
    with pytest.raises(AttributeError, match="no attribute 'wall'"):
        probe.wall  # noqa: B018


def test_reading_the_allocator_inside_the_loop_leaves_the_young_count_and_the_collector_as_they_were():
    """The allocator's reading is a tracked object (a ctypes structure): made and freed with
    the collector off, it can start no collection, and the young count is as it was."""
    import ctypes  # noqa: F401 - loaded, as numpy and jax load it: the allocator is read

    from gcbench.measuring import probe as probe_module

    assert probe_module.malloc_in_use() is not None
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            before = gc.get_count()[0]
            assert probe_module._malloc_paused() > 0
            assert gc.get_count()[0] == before
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
