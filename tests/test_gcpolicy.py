import gc

import pytest

from gcbench.core.errors import UsageError
from gcbench.measuring import gcpolicy
from gcbench.measuring.probe import StepProbe
from test_probe import Cycle


def _churn_steps(policy, steps=30, per_step=3000):
    probe = StepProbe(steps)
    policy.before_timed()
    frozen = gc.get_freeze_count()
    try:
        with probe:
            for i in range(steps):
                probe.begin()
                junk = [Cycle() for _ in range(per_step)]  # cyclic garbage: only the collector frees it
                del junk
                if policy.collects_after(i):
                    gc.collect()
                probe.end(i)
    finally:
        policy.after_timed()
    return probe, frozen


def test_default_collects_cyclic_garbage():
    probe, _ = _churn_steps(gcpolicy.parse("default"))
    assert probe.column("gc_collections").sum() > 0


def test_disable_keeps_collections_at_zero_and_reenables():
    probe, _ = _churn_steps(gcpolicy.parse("disable"))
    assert probe.column("gc_collections").sum() == 0
    assert probe.column("gc_ns").sum() == 0
    assert gc.isenabled()


def test_freeze_moves_objects_to_the_permanent_generation():
    gc.unfreeze()
    _probe, frozen = _churn_steps(gcpolicy.parse("freeze"), steps=2)
    assert frozen > 1000  # everything alive after warm-up: modules, functions, ...
    assert gc.get_freeze_count() == 0  # after_timed undoes it


def test_manual_collects_every_k_steps_in_that_step():
    probe, _ = _churn_steps(gcpolicy.parse("manual:10"), steps=30)
    per_step_full = probe.column("gc_collections")[:, 2]
    assert [i for i in range(30) if per_step_full[i]] == [9, 19, 29]
    assert probe.column("gc_collections")[:, :2].sum() == 0
    assert (probe.column("gc_ns")[[9, 19, 29]] > 0).all()


@pytest.mark.parametrize("text", ["sometimes", "manual", "manual:0", "manual:-3", "manual:x", ""])
def test_bad_policies_are_usage_errors(text):
    with pytest.raises(UsageError, match="policy"):
        gcpolicy.parse(text)


def test_names_roundtrip():
    for text in ("default", "freeze", "disable", "manual:25"):
        assert gcpolicy.parse(text).name == text
    assert gcpolicy.parse("manual:25").slug == "manual-25"
