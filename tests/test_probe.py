import gc
import time

from gcbench.probe import StepProbe


class Cycle:
    def __init__(self):
        self.me = self


def test_forced_collection_is_counted_with_its_pause():
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
    assert probe.gc_collections[1].tolist()[2] >= 1
    assert probe.gc_collected[1] >= 20_000
    assert 0 < probe.gc_ns[1] <= probe.wall_ns[1]
    assert probe.gc_collections[2].tolist()[0] >= 1
    assert probe.steps == 3


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
    assert probe.gc_ns[0] >= 20_000_000


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
    assert probe.gc_ns.tolist() == [0, 0]
    assert (probe.wall_ns > 0).all()
    assert probe.arrays()["gc_collections"] == [[0, 0, 0], [0, 0, 0]]


def test_allocated_blocks_follow_live_objects():
    probe = StepProbe(1)
    keep = []
    with probe:
        probe.begin()
        keep.extend(object() for _ in range(5000))
        probe.end(0)
    assert probe.alloc_blocks[0] >= 5000
