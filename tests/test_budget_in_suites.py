"""GC budgets inside real pytest suites (issue 65, item 2): xdist, pytest-randomly,
pytest-rerunfailures, Hypothesis and pytest-timeout around the same budgeted loops. Every
outcome equals the unbudgeted session's where the budget holds; a failing budget fails in
every order; the session never dies of the rerun that traces sites; the test's collector
state and frozen heap are left as found."""

import re
import textwrap

import pytest

from simulate import BUDGETED_LOOP_HELPERS

pytest.importorskip("hypothesis")
pytest.importorskip("pytest_randomly")
pytest.importorskip("pytest_rerunfailures")
pytest.importorskip("pytest_timeout")

CONFTEST = '''
import contextlib, os
import pytest

@pytest.fixture
def budget(request):
    """gc_budget, or (UNBUDGETED=1) the same loops with no budget: the control session."""
    if os.environ.get("UNBUDGETED"):
        class Plain:
            def step(self):
                return contextlib.nullcontext()
        return lambda *a, **k: contextlib.nullcontext(Plain())
    return request.getfixturevalue("gc_budget")
'''

SUITE = '''
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

KEEP = []

def steady(b, n=1500, width=20):
    for i in range(n):
        with b.step():
            _ = [[j] for j in range(40)]
            KEEP.append([{"k": i} for _ in range(width)])
    KEEP.clear()

def test_holds_a(budget):
    with budget(warmup=2) as b:
        steady(b)

def test_holds_b(budget):
    with budget(warmup=2) as b:
        steady(b, width=5)

@pytest.mark.parametrize("n", [800, 1200])
def test_holds_param(budget, n):
    with budget(warmup=2) as b:
        steady(b, n=n)

@pytest.mark.flaky(reruns=2)
def test_holds_flaky(budget):
    with budget(warmup=2) as b:
        steady(b, width=8)

@settings(max_examples=4, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 10))
def test_holds_hypothesis(budget, width):
    with budget(warmup=2) as b:
        steady(b, n=600, width=width)

def test_over_given(budget):
    with budget(warmup=2, max_promotions_per_step=0.5) as b:
        steady(b, width=40)

@pytest.mark.flaky(reruns=2)
def test_over_stored_flaky(budget):  # its stored budget is tightened below what it keeps
    with budget(warmup=2) as b:
        steady(b, width=40)

@pytest.mark.timeout(60)
def test_over_timed(budget):
    with budget(warmup=2, max_promotions_per_step=0.5) as b:
        steady(b, width=40)
'''

HOLDS = {"test_holds_a", "test_holds_b", "test_holds_param[800]", "test_holds_param[1200]", "test_holds_flaky",
         "test_holds_hypothesis"}
OVER = {"test_over_given", "test_over_stored_flaky", "test_over_timed"}


def _outcomes(result) -> dict[str, str]:
    """Each test's final outcome (a parametrized test by its id) from `-rA`'s summary."""
    out = {}
    for line in result.outlines:
        m = re.match(r"(PASSED|FAILED|ERROR) test_suite\.py::(\S+)", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


@pytest.mark.e2e
def test_outcomes_in_a_suite_with_xdist_randomly_rerunfailures_hypothesis_and_timeout(pytester, monkeypatch):
    import tomlkit

    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    plugins = ("-p", "no:cacheprovider", "-p", "randomly", "-p", "hypothesispytest", "-n", "2", "-rA", "-W",
               "ignore::UserWarning")
    written = pytester.runpytest_subprocess(*plugins, "--gc-budget-update", "-p", "randomly", "--randomly-seed=7")
    written.assert_outcomes(passed=len(HOLDS) + len(OVER))
    path = pytester.path / "gc_budgets.toml"
    doc = tomlkit.parse(path.read_text())
    # one table per test: a Hypothesis test's examples are one budget, a rerun's is the test's
    assert set(doc) == {f"test_suite.py::{name}" for name in HOLDS | OVER}  # not #1.. for examples or reruns
    doc["test_suite.py::test_over_stored_flaky"]["max_promotions_per_step"] = 0.5
    path.write_text(tomlkit.dumps(doc))

    monkeypatch.setenv("UNBUDGETED", "1")
    control = _outcomes(pytester.runpytest_subprocess(*plugins))
    monkeypatch.delenv("UNBUDGETED")
    assert control == dict.fromkeys(HOLDS | OVER, "PASSED")
    for seed in (1, 2, 3):  # three orders, on two workers
        result = pytester.runpytest_subprocess(*plugins, f"--randomly-seed={seed}")
        outcomes = _outcomes(result)
        assert {k: v for k, v in outcomes.items() if k in HOLDS} == {k: control[k] for k in HOLDS}, result.stdout.str()
        assert {k: v for k, v in outcomes.items() if k in OVER} == dict.fromkeys(OVER, "FAILED"), result.stdout.str()
        text = result.stdout.str()
        assert "GC budget exceeded: test_suite.py::test_over_stored_flaky (" in text  # its own key on each rerun
        assert "test_over_stored_flaky#" not in text
        assert "Traceback" not in text
    for alone in ("test_holds_a", "test_holds_hypothesis"):  # alone, in one process: the same budgets hold
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "hypothesispytest",
                                               "-n", "0", "-rA", "-W", "ignore::UserWarning", "-k", alone)
        assert _outcomes(result) == {alone: "PASSED"}, result.stdout.str()


RERUNS = BUDGETED_LOOP_HELPERS + '''
import gcbench

@pytest.mark.timeout(24, method="thread")  # the session dies when it passes
def test_a_rerun_past_the_timeout(gc_budget):  # 1.5 s, 6 s beside busy processes: its rerun 80 s
    slow = runs("timed") > 1
    with gc_budget(warmup=1, max_promotions_per_step=0.5) as b:
        keeping(b, 400, pause=0.2 if slow else 0.0)

@pytest.mark.timeout(10, method="signal")
def test_a_rerun_that_cannot_fit(gc_budget):  # 4.5 s, up to 7 s beside busy processes
    with gc_budget(warmup=1, max_promotions_per_step=0.5) as b:
        keeping(b, 400, pause=0.01)

@pytest.mark.gc_budget_side_effects
def test_marked(gc_budget):
    runs("marked")
    with gc_budget(warmup=1, max_promotions_per_step=0.5) as b:
        keeping(b, 300)

def test_exits_on_the_rerun(gc_budget):
    if runs("exits") > 1:
        raise SystemExit(3)
    with gc_budget(warmup=1, max_promotions_per_step=0.5) as b:
        keeping(b, 300)

def test_keeps_nothing_on_the_rerun(gc_budget):
    width = 40 if runs("nothing") == 1 else 0
    with gc_budget(warmup=1, max_promotions_per_step=0.5) as b:
        keeping(b, 600, width=width)

def test_measure_inside_a_budget(gc_budget):
    with gc_budget(warmup=1, max_explicit_per_1000=1000) as b:
        with gcbench.measure("inner") as m:
            for _ in range(20):
                with b.step(), m.step():
                    gc.disable()
                    gc.enable()

def test_budgets_in_two_threads(gc_budget):
    errors = []
    ready = threading.Barrier(2)
    def run(name):
        try:
            ready.wait(timeout=30)
            with gc_budget(warmup=1, name=name) as b:
                keeping(b, 200, width=2)
                time.sleep(0.5)
        except BaseException as e:
            errors.append(str(e))
    threads = [threading.Thread(target=run, args=(n,)) for n in ("left", "right")]
    for t in threads: t.start()
    for t in threads: t.join()
    assert len(errors) == 1 and "budgets do not nest or run at once" in errors[0], errors

def test_frozen_before_stays_as_frozen(gc_budget):
    gc.freeze()
    before = gc.get_freeze_count()
    try:
        with gc_budget(warmup=1) as b:
            keeping(b, 100, width=2)
            mine = [[]]
        # nothing more frozen (some frozen objects are freed, by their reference counts, meanwhile)
        assert gc.get_freeze_count() <= before and any(o is mine for o in gc.get_objects())
    finally:
        gc.unfreeze()

def test_a_freeze_inside_stays(gc_budget):
    try:
        with gc_budget(warmup=1) as b:
            keeping(b, 50, width=2)
            mine = [[]]
            gc.freeze()
        assert gc.get_freeze_count() > 0 and not any(o is mine for o in gc.get_objects())
    finally:
        gc.unfreeze()

def test_later_without_a_budget():
    gc.disable(); gc.enable(); gc.freeze(); gc.unfreeze()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.disable.__module__ == "gc" or type(gc.disable).__name__ == "builtin_function_or_method"
'''


@pytest.mark.e2e
def test_the_rerun_for_sites_never_costs_the_session_or_the_first_failure(pytester):
    pytester.makepyfile(test_reruns=RERUNS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-rA", "-W",
                                           "ignore::UserWarning")
    text = result.stdout.str()
    outcomes = {m.group(2): m.group(1) for line in result.outlines
                if (m := re.match(r"(PASSED|FAILED) test_reruns\.py::(\S+)", line))}
    assert outcomes == {"test_a_rerun_past_the_timeout": "FAILED", "test_a_rerun_that_cannot_fit": "FAILED",
                        "test_marked": "FAILED",
                        "test_exits_on_the_rerun": "FAILED", "test_keeps_nothing_on_the_rerun": "FAILED",
                        "test_measure_inside_a_budget": "PASSED", "test_budgets_in_two_threads": "PASSED",
                        "test_frozen_before_stays_as_frozen": "PASSED", "test_a_freeze_inside_stays": "PASSED",
                        "test_later_without_a_budget": "PASSED", "test_zz_after": "PASSED"}, text
    # the session lived on: the tests after them ran
    assert re.search(r"the second run of its body, traced, was stopped at \d+ s \(half of what was left of the "
                     r"test's 24 s timeout\)", text), text
    assert re.search(r"a second run of its body \(the first took \d+ s; tracing makes it longer\) would not fit in "
                     r"\d+ s \(half of what was left of the test's 10 s timeout\)", text), text
    assert "the test is marked gc_budget_side_effects, so its body is not run again" in text
    assert [(pytester.path / name).read_text() for name in ("timed", "marked", "exits", "nothing")] == \
        ["2", "1", "2", "2"]
    assert "raised SystemExit: 3" in text
    assert "the second run measured max_promotions_per_step 0 where the first run measured" in text
    assert "RecursionError" not in text
    assert "Traceback" not in text


FULL_DISK = '''
import errno
import gcbench.core.files as files

def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

files.write_new = _full
'''


@pytest.mark.e2e
def test_a_report_folder_that_cannot_take_the_result_is_a_one_line_failure(pytester):
    pytester.makeconftest(FULL_DISK)
    pytester.makepyfile(test_disk=textwrap.dedent('''
        def test_loop(gc_budget):
            with gc_budget(warmup=1, max_promotions_per_step=1000) as b:
                for _ in range(50):
                    with b.step():
                        [[] for _ in range(10)]
    '''))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--gc-budget-report", "out")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "could not be saved in --gc-budget-report" in text
    assert "No space left on device" in text
    assert "Traceback" not in text


def test_the_guide_quotes_the_reruns_limit_as_the_plugin_holds_it():
    import pathlib

    from gcbench.budget import plugin

    guide = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "gc-budgets.md").read_text()
    assert f"and at most {plugin.RERUN_LIMIT:g} s; it is stopped" in " ".join(guide.split())
