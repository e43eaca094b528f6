"""explain prescribes what was measured (issue 64): for gc.collect() calls that free nothing
it says to remove or thin them, never to freeze; for a frozen loop it prescribes no freeze;
where the folder holds what ran beside the loop, the measured change comes with the
advice; and its words agree with its own figures."""

from __future__ import annotations

import gc

import pytest

import gcbench
from gcbench.analysing import gc_causes
from gcbench.measuring import results
from gcbench.publishing import explanation_text

RECORDS = 30_000


def _loop(m, collect_every: int | None, freeze_at: int | None = None, steps: int = 40) -> None:
    for i in range(steps):
        if freeze_at is not None and i == freeze_at:
            gc.freeze()
        with m.step():
            for _ in range(100):
                x: list = []
                x.append([x])
            if collect_every and i % collect_every == 0:
                gc.collect()


def _kinds(expl) -> list[str]:
    return [r.kind for r in expl.recommendations]


@pytest.mark.e2e
def test_collects_that_free_nothing_are_to_be_removed_not_frozen(tmp_path):
    records = [[i] for i in range(RECORDS)]  # noqa: F841 - long-lived: what every gc.collect() scans
    with gcbench.measure("collects", warmup=2, explain=True) as m:
        _loop(m, 5)
    expl = m.explanation()
    assert "thin-collects" in _kinds(expl)
    assert "scanning" not in _kinds(expl)
    advice = next(r for r in expl.recommendations if r.kind == "thin-collects")
    assert "remove them, or thin them" in advice.text
    assert "gc.freeze() after the warm-up moves" not in advice.text
    # beside it in the folder: the loop with its calls thinned, 3 repeats a side: the change, measured
    for variant, every in ((None, 5), ("thinned", 50)):
        for _ in range(3):
            with gcbench.measure("collects", warmup=2, variant=variant) as timed:
                _loop(timed, every)
            timed.save(tmp_path)
    docs = results.load_dir(tmp_path)
    expl = gc_causes.derive(expl, docs)
    advice = next(r for r in expl.recommendations if r.kind == "thin-collects")
    assert advice.measured, advice.text
    assert "measured" in advice.effect
    assert "thinned" in advice.effect


def test_a_frozen_loop_is_never_told_to_freeze():
    records = [[i] for i in range(RECORDS)]  # noqa: F841
    try:
        with gcbench.measure("frozen", warmup=2, explain=True) as m:
            _loop(m, 5, freeze_at=0)
        expl = m.explanation()
    finally:
        gc.unfreeze()
    assert "scanning" not in _kinds(expl)
    assert not any("gc.freeze() after the warm-up moves" in r.text for r in expl.recommendations)
    text = explanation_text.format_text(expl)
    # the objects frozen as its scans ran, not after the loop's own unfreeze
    assert "frozen (never scanned): 0" not in text
