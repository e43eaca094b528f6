"""gcbench's pytest plugin (entry point `pytest11`): the `gc_budget` fixture, a test that fails
when a step's collector work grows beyond its budget of counts (promotions, collections,
tracked growth), measured in the test's own process from a collected, frozen heap at the
default thresholds. docs/gc-budgets.md is the user's guide: each budget, what a failure
says, budget files (`--gc-budget-update`) and reports (`--gc-budget-report`).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import pathlib
import re
import sys
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from . import baseline

if TYPE_CHECKING:
    from ..analysing.explanation_records import Census
    from ..user_loop import Measurement

BASELINE = baseline.NAME
DEFAULT_THRESHOLDS = (700, 10, 10)
COUNTED = baseline.COUNTS
CAPACITY = 100_000
_ACTIVE: list = []  # the budget measuring now: budgets do not nest, nor run in two threads at once
_ACTIVE_LOCK = threading.Lock()  # held while a budget checks `_ACTIVE` and takes its place in it
_MADE = pytest.StashKey[list]()  # the budgets a test made, in order (their index is part of their key)
_EXAMPLE = pytest.StashKey[list]()  # a Hypothesis test's example now: its budgets' indices count from 0 again
_LARGEST = pytest.StashKey[dict]()  # --gc-budget-update of a Hypothesis test: the largest of its examples' counts
_STARTED = pytest.StashKey[float]()  # when the test's setup began (time.monotonic), for its timeout
SIDE_EFFECTS = "gc_budget_side_effects"  # the marker of a test whose body must not run twice
RERUN_LIMIT = 120.0  # seconds the rerun that traces a failing budget's sites may take, at most
_SESSION_START = time.monotonic()


@dataclasses.dataclass
class _Failure:
    """A budget's failure in a test whose body runs again for its sites: what it raised,
    which budget, over which counts, and its message in three parts (the middle one, where
    to look, is what the rerun replaces)."""

    exception: BaseException
    index: int
    keys: list[str]
    head: list[str]
    where: list[str]
    tail: list[str]
    measured: dict  # the counts over their budgets, as measured
    looked: bool  # the measured run looked at what was promoted and kept (its where-lines give types)


@dataclasses.dataclass
class _Rerun:
    """A failing test's body running again for its sites: the budget that failed, the counts
    it was over, and (once that budget is reached again) where to look."""

    index: int
    keys: list[str]
    where: list[str] | None = None
    measured: dict | None = None  # the rerun's counts (said where they differ from the first run's)
    over: bool = False  # past its time: its budgets stop at their next step (`_stop_rerun`)


_FAILED = pytest.StashKey[_Failure]()  # a budget's failure in this test: what to say, to say it with sites
_RERUN = pytest.StashKey[_Rerun]()  # the test's body running again for the sites of its failed budget
GCBudgetWarning = baseline.GCBudgetWarning


def pytest_addoption(parser):
    group = parser.getgroup("gcbench", "GC budgets (gcbench's gc_budget fixture)")
    group.addoption("--gc-budget-report", metavar="DIR", default=None,
                    help="save every GC budget's measurement as a gcbench result in DIR (gcbench report DIR)")
    group.addoption("--gc-budget-update", action="store_true", default=False,
                    help=f"write the measured counts (x{baseline.MARGIN:g}) into {BASELINE} beside each test file "
                         "as the budgets later runs check, instead of checking them")
    group.addoption("--gc-budget-strict", action="store_true", default=False,
                    help="a GC budget that asserts nothing (no budget given or stored) fails its test")
    group.addoption("--gc-budget-in-process", action="store_true", default=False,
                    help="(budgets are measured in the session's process: kept so that old command lines run)")


def pytest_configure(config):
    config.addinivalue_line("markers", f"{SIDE_EFFECTS}: the test's body has side effects (it counts, binds a "
                            "socket, writes a file): a failing GC budget does not run it again to trace its sites")
    folder = config.getoption("--gc-budget-report")
    if folder is not None:
        config.option.gc_budget_report = str(_report_folder(folder))  # absolute: a test's os.chdir moves nothing


def _report_folder(folder: str) -> pathlib.Path:
    """--gc-budget-report's folder, absolute, made; a usage error for an empty name, a
    report's folder or another run's results."""
    from ..core import files
    from ..core.errors import UsageError

    if not folder.strip():
        raise pytest.UsageError("--gc-budget-report '' names no folder: give the folder to save the budgets' "
                                "results in (gcbench report DIR reads it)")
    try:
        path = files.check_path(folder, "--gc-budget-report").absolute()
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    if (path / ".gcbench-report.json").exists() or (path / "index.md").exists():
        raise pytest.UsageError(f"--gc-budget-report {folder}: that is a report's folder; name a results folder "
                                "(gcbench report DIR builds the report from it)")
    if (path / "suite.json").exists():
        raise pytest.UsageError(f"--gc-budget-report {folder}: that folder holds a gcbench run's results; name a "
                                "folder of the budgets' own")
    try:
        return files.make_folder(path, "--gc-budget-report folder")
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_collection_modifyitems(session, config, items):
    """Budget files beside the budgeted tests, checked once, before any test runs: a bad one
    is one usage error (exit 4), not a traceback in every test."""
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller checked them
    seen = set()
    for item in items:
        if "gc_budget" in getattr(item, "fixturenames", ()):
            path = pathlib.Path(str(item.path)).parent / BASELINE
            if path not in seen:
                seen.add(path)
                try:
                    baseline.read(path)
                except baseline.BudgetFileError as e:
                    raise pytest.UsageError(str(e)) from None


class GCBudgets:
    """What the `gc_budget` fixture gives a test: call it for each budget the test keeps."""

    def __init__(self, request):
        self._request = request
        # a rerun of the test (pytest-rerunfailures) sets the fixture up again: keys from #0
        self._made: list[Budget] = []
        request.node.stash[_MADE] = self._made
        self._hypothesis = _is_hypothesis_test(request.node)

    def __call__(self, warmup: int = 0, *, max_promotions_per_step: float | None = None,
                 max_full_per_1000: float | None = None, max_collections_per_1000: float | list | None = None,
                 max_explicit_per_1000: float | None = None, max_tracked_growth_per_1000: float | None = None,
                 max_examined_per_step: float | None = None, max_gc_share: float | None = None,
                 name: str | None = None, sites: bool | str = "on failure", settle: bool = True,
                 **unknown) -> Budget:
        """One budget: `with gc_budget(...) as b:` around the loop, `with b.step():` around
        each step. The budgets are counts, the same in every run of the same program on any
        machine; one left out comes from `gc_budgets.toml` beside the test file, or is not kept.

        Arguments:
            warmup: the first steps, not counted (compilation, caches filling).
            max_promotions_per_step: objects reaching the oldest generation, the mean per
                timed step.
            max_full_per_1000: the collector's own full collections per 1,000 timed steps,
                between steps too.
            max_collections_per_1000: its collections of every generation per 1,000 steps:
                one figure, or a list per generation.
            max_explicit_per_1000: the loop's own `gc.collect()` calls per 1,000 steps.
            max_tracked_growth_per_1000: tracked objects still alive at the end, per 1,000
                steps.
            max_examined_per_step: objects the collections examined a step (what a
                collection costs, which a `gc.freeze()` cuts).
            max_gc_share: the share of the loop's CPU time in the collector's pauses (a time:
                prefer the counts).
            name: tells apart several budgets of one test in budget files and reports.
            sites: when what was promoted and kept is looked at, with allocation sites
                traced: "on failure" (a second run of a failing test's body), True (the
                measured run) or False (never: a failure gives its counts only).
            settle: False measures from the heap as the test left it (no collection and
                freeze first).

        Returns:
            The budget, a context manager: `b.step()` brackets one step, `b.figures` holds
                what was counted.
        """
        if unknown:  # a misspelt budget: one line naming the right word, as in gc_budgets.toml
            from ..core.errors import did_you_mean, keywords

            key, known = next(iter(unknown)), keywords(self.__call__)
            _fail(f"gc_budget: unknown keyword {key!r}{did_you_mean(key, known)}; budgets: {', '.join(baseline.KEYS)}")
        request = self._request
        if self._hypothesis:  # each example's budgets are the test's: the first of an example is #0 again
            example = _hypothesis_example()
            seen = request.node.stash.setdefault(_EXAMPLE, [None])
            if example is not seen[0]:
                seen[0] = example
                self._made.clear()
        budget = Budget(request, warmup, {"max_promotions_per_step": max_promotions_per_step,
                                          "max_full_per_1000": max_full_per_1000,
                                          "max_collections_per_1000": max_collections_per_1000,
                                          "max_explicit_per_1000": max_explicit_per_1000,
                                          "max_tracked_growth_per_1000": max_tracked_growth_per_1000,
                                          "max_examined_per_step": max_examined_per_step,
                                          "max_gc_share": max_gc_share}, name, len(self._made), sites, settle)
        self._made.append(budget)
        return budget


@pytest.fixture
def gc_budget(request):
    """A GC budget around the steps of a test:
    `with gc_budget(warmup=5, max_promotions_per_step=200, max_full_per_1000=0) as b: ...`
    then `with b.step(): ...` around each step. The fixture is a `GCBudgets`: calling it
    makes one budget (`GCBudgets.__call__` gives its arguments). A budget the call does not name comes from
    `gc_budgets.toml` beside the test file (`pytest --gc-budget-update` writes it).
    docs/gc-budgets.md has the guide."""
    factory = GCBudgets(request)
    yield factory
    if _EXAMPLE in request.node.stash:  # the last example's context: not kept past the test
        del request.node.stash[_EXAMPLE]


def _is_hypothesis_test(item) -> bool:
    return bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))


def _hypothesis_example() -> object | None:
    """The example a Hypothesis test runs now (its build context), or None."""
    control = sys.modules.get("hypothesis.control")
    if control is None or not control.currently_in_test_context():
        return None
    return control.current_build_context()


def result_name(key: str) -> str:
    """A result's name for the budget `key` (`test_loop.py::test_loop[a]#1`): letters, digits,
    '.', '_' and '-' only, at most 80 characters, distinct for distinct keys."""
    plain = key.replace(".py::", "--")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", plain).strip("-._") or "test"
    if len(name) > 80 or name != plain:  # shortened, or characters replaced: distinct by a digest
        digest = hashlib.sha1(key.encode("utf-8", "surrogateescape"), usedforsecurity=False).hexdigest()[:6]
        name = f"{name[:73].rstrip('-._')}-{digest}"
    return name


_USED: set[bool] = set()  # the modes (diagnosed or not) whose first-use objects are made (`_first_use`)


def _first_use(diagnosed: bool) -> None:
    """gcbench's own first-use objects (what its modules import and cache the first time a
    budget measures, explains and reads its figures), made before the first budget of the
    process: counted in it, they were 1.17 promotions a step where the same loop measured
    0.910 later, and one more collection. A loop of 60 steps, its figures read and dropped:
    small (1,260 objects), with a collection of each generation asked for, every path of the
    hooks taken at a cost of tens of milliseconds (24,000 objects and automatic collections
    of the older generations took 2.5 s of CPU, most of a passing budget's cost). Made for
    the mode the budget measures in: counts only, or `diagnosed` as well."""
    if diagnosed in _USED:
        return
    _USED.add(diagnosed)
    from ..user_loop import Measurement

    frozen = gc.get_freeze_count()  # the test's frozen heap: left as it is
    m = Measurement("gcbench-first-use", 1, 64, explain=diagnosed)
    m.before_timed = _collect if frozen else _settle
    keep: list = []
    with m:
        for i in range(60):
            with m.step():
                keep.append([[] for _ in range(20)])
                if i in (20, 30, 40):
                    gc.collect(i // 10 - 2)
        kept = m.kept() if diagnosed else None
    figures_of(m, kept)
    del keep
    if not frozen:
        gc.unfreeze()


def _collect() -> None:
    """gc.collect(); a Ctrl-C that lands in a finalizer or a weakref callback it runs (which
    CPython reports as unraisable, and loses) is raised after it."""
    from ..core.errors import is_interrupt

    kept: list[BaseException] = []
    before = sys.unraisablehook

    def keep(unraisable) -> None:
        if is_interrupt(unraisable.exc_value):
            kept.append(unraisable.exc_value)
        else:
            before(unraisable)

    sys.unraisablehook = keep
    try:
        gc.collect()
    finally:
        sys.unraisablehook = before
    if kept:
        raise kept[0]


def _settle() -> None:
    """A collected heap, with what is in it out of the collector's sight, and every
    generation's count at zero: done as the budget begins and again as its timed steps
    begin, so that what the warm-up made (a compilation, or a cached one read back: 2 of
    1,335 promotions apart) moves no count."""
    _collect()
    gc.freeze()


def _fail(message: str):
    pytest.fail(message, pytrace=False)



@dataclasses.dataclass(frozen=True)
class BudgetFigures:
    """What a budget measured (`GCBudget.measure`, `b.figures` after the `with`): the counts
    its budgets bound (COUNTED, read by name with `count`), where the full collections fell,
    and what to look at (promotion sites, what the loop kept, the garbage it made) where the
    run was diagnosed (`sites=True`, the rerun of a failing test, `--gc-budget-report`;
    else empty, and `explanation` None)."""

    steps: int
    max_promotions_per_step: float
    max_full_per_1000: float  # the collector's own
    max_collections_per_1000: list[float]  # per generation, the collector's own
    max_explicit_per_1000: float  # the loop's gc.collect() calls
    max_tracked_growth_per_1000: float | None
    max_examined_per_step: float | None
    max_gc_share: float | None  # the collector's share of the loop's CPU time, the diagnostics' own left out
    explicit: list[int]  # gc.collect() calls per generation, in steps and between
    explicit_sites: dict[str, int]
    full_steps: list[int]  # every full collection the loop paid for: in its steps, in the gaps before them
    full_all: int
    full_after_last: int
    sites: list  # top (site or type, count) of what was promoted (diagnosed runs)
    promoted: int
    kept: list
    kept_total: int
    garbage: list
    garbage_total: int
    doc: Any  # the result document
    explanation: Any  # the explanation (analysing.explanation_records.Explanation); None undiagnosed

    def count(self, key: str) -> Any:
        """The count a budget of that name bounds (`max_full_per_1000`, ...)."""
        if key not in baseline.KEYS:
            raise KeyError(key)
        return getattr(self, key)

def _tracked_growth(doc, steps: int) -> float | None:
    """Objects the collector tracks, more at the end than at the start, per 1,000 steps."""
    from ..measuring import results

    memory = results.part(doc, "memory")
    start, end = memory.get("tracked_start"), memory.get("tracked_end")
    return (end - start) * 1000 / steps if start is not None and end is not None else None


def _gc_share(doc, own: int) -> float | None:
    """The collector's share of CPU time, less the diagnosis's own (`own` ns: it ran inside
    the pauses and the steps, left out of both); None where CPU time was not read."""
    from ..analysing import summary

    split = summary.cpu_gc_split(doc)
    return max(split[0] - own, 0.0) / (split[1] - own) if split is not None and split[1] > own else None


def figures_of(m: Measurement, kept_json: dict | None) -> BudgetFigures:
    """A budget's figures from its measurement (ended) and what the loop kept (`m.kept()`).
    Every count is the probe's, diagnosed or not: the promotions are what the collections
    of generation 1 left alive (`probe.examined` less what they collected), in the steps
    and the gaps before them, the mean per step."""
    import numpy as np

    from ..analysing import summary
    from ..measuring import results

    doc = m.result()
    steps = m.steps
    every = summary.collections_by_generation(doc)  # in the steps and between them
    asked = summary.explicit_by_generation(doc)  # the loop's own gc.collect() calls, in steps and between
    per_gen = [(e - a) * 1000 / steps for e, a in zip(every, asked, strict=True)]  # the collector's own
    full = summary.full_collections(doc)
    expl = m.explanation() if m.explain else None
    python = expl.python if expl is not None else None
    if expl is not None and python is None:
        raise ValueError("a budget's explanation without its diagnosis")
    from ..analysing import explanation_records as records
    from ..analysing import rates

    kept = records.from_json(kept_json or {}, records.Census, "what the loop kept")
    nothing = records.from_json({}, records.Census, "not diagnosed")
    promoted_census, garbage = (python.promoted, python.garbage) if python is not None else (nothing, nothing)
    return BudgetFigures(
        steps=steps, max_promotions_per_step=results.step_total(doc, "gc_promoted") / steps,
        max_full_per_1000=per_gen[-1], max_collections_per_1000=per_gen,
        max_explicit_per_1000=sum(asked) * 1000 / steps, max_tracked_growth_per_1000=_tracked_growth(doc, steps),
        max_examined_per_step=rates.examined_per_step(doc), max_gc_share=_gc_share(doc, m.diagnosis_cpu_ns),
        explicit=asked,
        explicit_sites=results.part(doc, "between_steps").get("explicit_sites") or {},
        full_steps=[int(i) for i in np.repeat(np.arange(len(full)), full)],
        full_all=every[-1], full_after_last=summary.full_after_last(doc),
        sites=_top(promoted_census), promoted=promoted_census.total, kept=_top(kept), kept_total=kept.total,
        garbage=_top(garbage), garbage_total=garbage.total, doc=doc, explanation=expl)


def _a_sites_mode(sites: object) -> bool:
    """True, False (themselves, not 1 or 0) or "on failure"."""
    return sites is True or sites is False or sites == "on failure"


def _checked_given(given: dict) -> dict:
    """The budgets a test gives (None: not given), each a value its key takes."""
    from ..core.errors import UsageError

    checked = {k: v for k, v in given.items() if v is not None}
    for k, v in checked.items():
        try:
            baseline.check_value(k, v, "gc_budget")
        except UsageError as e:
            _fail(str(e))
    return checked


def _threads_line(others: list[str]) -> str:
    """The other Python threads whose objects a tracked-growth count takes in too."""
    return ("  the growth counts every thread's objects, and other Python threads run in this process: "
            + ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else ""))


def _generations_over(measured: list[float], budget) -> list[str]:
    """The generations whose collections per 1,000 steps are over their budget (one for all,
    or one per generation: a list may budget the first generations only)."""
    budgets = list(budget) if isinstance(budget, (list, tuple)) else [budget] * len(measured)
    # strict=False: a list may budget the first generations only (baseline allows 1 to 3)
    return [f"generation {g}: {_fmt(m)} > {_fmt(b)}"
            for g, (m, b) in enumerate(zip(measured, budgets, strict=False)) if b is not None and m > b]


def _schedule_said(f: BudgetFigures) -> str:
    """Where the full collections fell (at most 8 steps named), how many after the last
    step, and how many were the loop's own gc.collect() calls, with where they were called."""
    full = f.full_steps
    asked = f.explicit[-1] if f.explicit else 0
    said = ("full collections at (or just before) steps " + ", ".join(map(str, full[:8])) +
            (f" and {len(full) - 8} more" if len(full) > 8 else "")) if full else "no full collection in a step"
    if f.full_after_last:
        said += f", {f.full_after_last} after the last step"
    if asked:
        sites = "; ".join(f"{site} ({k})" for site, k in list(f.explicit_sites.items())[:3])
        said += f"; {asked} of the {f.full_all} full collections were gc.collect() calls" + \
            (f", called at {sites}" if sites else "")
    return said


class Budget:
    """One budgeted loop of a test (made by the `gc_budget` fixture)."""

    def __init__(self, request, warmup: int, given: dict, name: str | None, index: int,
                 sites: bool | str = "on failure", settle: bool = True):
        from ..core.errors import UsageError
        from ..user_loop import Measurement

        if not _a_sites_mode(sites):
            _fail(f"gc_budget: sites must be True, False or 'on failure', got {sites!r}")
        # traced in the measured run only for sites=True; in the rerun of a failing test only
        # for the budget that failed (the ones before it run as fast as they can)
        rerun = request.node.stash.get(_RERUN, None)
        traced = sites is True or (rerun is not None and rerun.index == index)
        # diagnosed (what was promoted, kept and freed, the diagnosis's hooks in every
        # collection) only where it is looked at: a passing budget reads the probe's counts
        self.diagnosed = traced or bool(request.config.getoption("--gc-budget-report"))
        _first_use(self.diagnosed)
        self.request = request
        test_file = pathlib.Path(str(request.node.path))
        self.key = baseline.key_of(test_file, request.node.nodeid, index)
        self.baseline = test_file.parent / BASELINE
        self.given = _checked_given(given)
        try:
            self.measurement = Measurement(name or result_name(self.key), warmup, CAPACITY, explain=self.diagnosed)
        except UsageError as e:
            _fail(f"gc_budget: {e}")
        self.index = index
        self.sites_mode = sites
        self.measurement.sites = traced
        # settle=False: measured from the heap as the test left it (what a gc.freeze() fix removes shows)
        self.settle = settle is not False
        self.measurement.before_timed = self._settle if self.settle else None
        self._froze = False  # the budget froze the heap (given back as it ends)
        self.thread = 0  # the thread that entered it
        self.figures: BudgetFigures | None = None
        self._thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS
        self._frozen_before = 0
        self._kept: dict | None = None
        self._left_off = False  # the loop turned the collector off and left it off: turned back on, and said

    # -- the context managers -----------------------------------------------------------------
    def __enter__(self) -> Budget:
        rerun = self.request.node.stash.get(_RERUN, None)
        if rerun is not None and rerun.over:
            raise _RerunOverTime
        with _ACTIVE_LOCK:  # checked and taken at once: two threads cannot both find no budget running
            if _ACTIVE:
                other = _ACTIVE[-1]
                where = (f"inside {other.key}" if other.thread == threading.get_ident()
                         else f"while {other.key} was measuring in another thread")
                _fail(f"gc_budget: budgets do not nest or run at once ({self.key} began {where}): end one before "
                      "the next begins")
            if not gc.isenabled():
                _fail(f"gc_budget: the collector is disabled (gc.disable()) as {self.key}'s budget begins, so every "
                      "count would be zero whatever the loop does: call gc.enable() before the budget")
            self.thread = threading.get_ident()
            _ACTIVE.append(self)
        try:
            self._thresholds = gc.get_threshold()
            self._frozen_before = gc.get_freeze_count()
            if self.settle:
                self._settle()
            gc.set_threshold(*DEFAULT_THRESHOLDS)
            self.measurement.__enter__()
        except BaseException:
            self._restore()
            raise
        return self

    def _settle(self) -> None:
        """The heap collected and frozen (`_settle`), unless the test had frozen objects of
        its own before the budget: gc.unfreeze() cannot give back only the budget's, so
        then the heap is collected only, and left frozen as the test froze it."""
        if self._frozen_before:
            _collect()
            return
        _settle()
        self._froze = True

    def _restore(self) -> None:
        """The collector as the budget found it: its thresholds, on, and its frozen heap
        (what the budget froze given back, unless the loop froze the heap itself)."""
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        gc.set_threshold(*self._thresholds)
        if not gc.isenabled():  # on as the budget began: on again, whatever the loop did
            self._left_off = True
            gc.enable()
        loop_froze = self.measurement.collector_state().get("calls", {}).get("freeze")
        if self._froze and not loop_froze:
            gc.unfreeze()
        self._froze = False

    def __exit__(self, exc_type, exc, tb) -> None:  # named, not *exc: no tuple of ours alive at the loop's end
        try:
            start = self.measurement.tracked_at_start
            if exc_type is None and self.diagnosed and start is not None and len(gc.get_objects()) > start:
                self._kept = self.measurement.kept()  # what the loop kept, while its sites are still traced
        finally:  # whatever happened: the measurement's hooks and tracing go, the collector is as it was
            try:
                self.measurement.__exit__(exc_type, exc, tb)
            finally:
                self._restore()
        if exc_type is None:
            self._conclude()

    def step(self):
        """The context manager of one step: `with b.step(): ...` (allocates nothing)."""
        return self.measurement.step()

    def _figures(self) -> BudgetFigures:
        if self.figures is None:
            raise ValueError("the budget has not measured yet")
        return self.figures

    # -- what was measured, against the budgets ------------------------------------------------------
    def measure(self) -> BudgetFigures:
        """The budget's figures: steps, promotions per step, collections per 1,000 steps (per
        generation, and full), tracked growth per 1,000 steps, GC share, where the full
        collections fell, and what to look at (promotion sites, kept objects, garbage)."""
        return figures_of(self.measurement, self._kept)

    def _conclude(self) -> None:
        from ..core.errors import UsageError

        if self._left_off:
            self._fail_left_off()
        config = self.request.config
        try:
            self.figures = self.measure()
        except UsageError as e:
            _fail(f"gc_budget: {self.key}: {e}")
        rerun = self.request.node.stash.get(_RERUN, None)
        if rerun is not None:  # the failing test's body again, for its sites: say where, check and write nothing
            self._answer_rerun(rerun)
            return
        folder = config.getoption("--gc-budget-report")
        if folder:
            self._save_report(pathlib.Path(folder))
        try:
            if config.getoption("--gc-budget-update"):
                self._update_baseline()
                return
            stored, lines = self._stored()
        except UsageError as e:
            _fail(str(e))
        budgets = {**stored, **self.given}
        if not budgets:
            self._say_nothing_asserted(config.getoption("--gc-budget-strict"))
            return
        self._warn_changed(budgets)
        self._check_budgets(budgets, lines)

    def _fail_left_off(self) -> None:
        """The loop left the collector off: its counts are not the loop's."""
        call = (self.measurement.collector_state().get("calls") or {}).get("disable") or {}
        at_line = f" (gc.disable() at {at})" if (at := call.get("first_at")) else ""
        _fail(f"gc_budget: {self.key}: the loop turned the collector off{at_line} and left it off, so its counts "
              "are not the loop's: the budget turned it back on; call gc.enable() before the budget ends")

    def _answer_rerun(self, rerun) -> None:
        """The rerun of a failing test's body: the failing budget says where its counts come
        from and what they are now, then ends the rerun; the others say nothing."""
        if self.index == rerun.index:
            rerun.where = self._where_lines(rerun.keys)
            rerun.measured = {k: self._figures().count(k) for k in rerun.keys}
            raise _RerunDone

    def _say_nothing_asserted(self, strict: bool) -> None:
        """A budget with no figure to hold: a warning, or a failure under --gc-budget-strict."""
        message = (f"{self.key}: its GC budget asserts nothing (no budget given, none in {self.baseline}): "
                   "pytest --gc-budget-update writes its measured counts there as budgets")
        if strict:
            _fail(f"gc_budget: {message} (--gc-budget-strict)")
        warnings.warn(GCBudgetWarning(message), stacklevel=4)

    def _check_budgets(self, budgets: dict, lines: dict) -> None:
        """Fail the test where the measured figures exceed its budgets, naming each; with
        sites "on failure", kept for the rerun that finds where they come from."""
        over = {k: line for k, v in budgets.items() if (line := self._over(k, v, lines))}
        if not over:
            return
        head, tail = self._message(list(over.values()))
        where = self._where_lines(list(over))
        failure = pytest.fail.Exception("\n".join([*head, *where, *tail]), pytrace=False)
        if self.sites_mode == "on failure":  # pytest_runtest_call reruns the body for the sites
            measured = {k: self._figures().count(k) for k in over}
            self.request.node.stash[_FAILED] = _Failure(failure, self.index, list(over), head, where, tail,
                                                        measured, self.diagnosed)
        raise failure

    def _save_report(self, folder: pathlib.Path) -> None:
        """--gc-budget-report: the budget's result and explanation; a folder that cannot take
        them (a full disk, a read-only one) fails the test in one line."""
        from ..analysing import gc_causes
        from ..core import files
        from ..core.errors import UsageError

        try:
            self.measurement.save_result(folder)
            gc_causes.save(folder, self._figures().explanation)
        except (OSError, UsageError) as e:
            reason = files.describe_os_error(e) if isinstance(e, OSError) else str(e)
            _fail(f"gc_budget: {self.key}: its measurement could not be saved in --gc-budget-report {folder}: "
                  f"{reason}")

    def _warn_changed(self, budgets: dict) -> None:
        """A budget whose meaning changed under it, said once: `max_full_per_1000` counted the
        loop's gc.collect() calls until 0.2.0 and counts the collector's own since; where the
        loop made full collections of its own and no budget counts them, a budget written
        for them passes without a word."""
        f = self._figures()
        asked = f.explicit[-1] if f.explicit else 0
        if "max_full_per_1000" in budgets and "max_explicit_per_1000" not in budgets and asked:
            warnings.warn(GCBudgetWarning(
                f"{self.key}: max_full_per_1000 counts the collector's own full collections only; the loop's "
                f"{asked} gc.collect() calls ({_fmt(f.max_explicit_per_1000)} per 1,000 steps) are not in it: count "
                "them with max_explicit_per_1000"), stacklevel=4)

    def _largest_so_far(self, written: dict) -> dict:
        """A hypothesis test's budgets: the largest over the examples this session ran."""
        largest = self.request.node.stash.setdefault(_LARGEST, {}).setdefault(self.key, {})
        for k, v in written.items():
            largest[k] = _larger(largest.get(k), v)
        return {k: largest[k] for k in written}

    def _update_baseline(self) -> None:
        """--gc-budget-update: the measured counts, with their margin, into the budget file;
        a budget the test's call names wins over the file, so writing it would be a value
        never read: it is named instead."""
        skipped = [k for k in COUNTED if k in self.given]
        f = self._figures()
        written = {k: baseline.budget_of(k, f.count(k), f.steps) for k in COUNTED
                   if f.count(k) is not None and k not in skipped}
        if _is_hypothesis_test(self.request.node):  # the largest over the examples this session ran
            written = self._largest_so_far(written)
        if written:
            baseline.update(self.baseline, self.key, written)
        if skipped:
            warnings.warn(GCBudgetWarning(
                f"{self.key}: not written to {self.baseline.name}: {', '.join(skipped)} (the test's call "
                "gives them, and a call's budget wins over the file's)"), stacklevel=4)  # the test's `with`

    def _stored(self) -> tuple[dict, dict]:
        """The budgets the file holds for this test, and the line of each."""
        stored_key, stored = baseline.table_for(baseline.read(self.baseline), self.key)
        lines: dict = {}
        if stored and stored_key is not None:
            text = self.baseline.read_text(encoding="utf-8")
            lines = {k: baseline.line_of(text, stored_key, k) for k in stored}
        return stored, lines

    def _over(self, key: str, budget, lines: dict) -> str | None:
        measured = self._figures().count(key)
        where = f" ({self.baseline.name}:{lines[key]})" if lines.get(key) and key not in self.given else ""
        if key == "max_collections_per_1000":
            bad = _generations_over(measured, budget)
            return f"the collector's own collections per 1,000 steps: {'; '.join(bad)}{where}" if bad else None
        if measured is None or measured <= budget:
            return None
        label = {"max_promotions_per_step": "promotions to the oldest generation per step",
                 "max_full_per_1000": "the collector's own full collections per 1,000 steps",
                 "max_explicit_per_1000": "gc.collect() calls of the loop's per 1,000 steps",
                 "max_tracked_growth_per_1000": "tracked objects still alive per 1,000 steps",
                 "max_examined_per_step": "objects the collections examined per step",
                 "max_gc_share": "the collector's share of the loop's CPU time (a time: load moves it)"}[key]
        return f"{label}: {_fmt(measured)} > budget {_fmt(budget)}{where}"

    def _where(self, rows: list, total: int, none: str) -> str:
        if rows:
            text = "; ".join(f"{site} {100 * n / max(total, 1):.0f} %" for site, n in rows)
            if self.measurement.sites and not any(site.endswith(")") for site, _ in rows):
                text += (" (types only: tracemalloc holds no allocation site for these objects, as for objects "
                         "reused from a free list or, before Python 3.12, instances with a __dict__)")
            return text
        if total:  # objects there were, none of a site or type above 1 %: said so, never "none"
            return f"{total:,} objects of many sites and types, none of them 1 % of the whole"
        if self.measurement.sites:
            return none
        return "not traced (gc_budget(..., sites=False))" if self.sites_mode is False else "not traced"

    def _heap_said(self) -> str:
        """The heap the counts were taken from: frozen by the budget, collected only (the
        test froze its own), or as the test left it."""
        if not self.settle:
            return "as the test left it (settle=False)"
        if not self._frozen_before:
            return "frozen"
        return (f"collected, not frozen (the test had frozen {self._frozen_before:,} objects itself: a freeze could "
                "not be given back alone)")

    def _message(self, over: list[str]) -> tuple[list[str], list[str]]:
        """A failure's first lines (each figure over its budget, where the full collections
        fell) and its last (how the counts were taken); `_where_lines` go between."""
        f = self._figures()
        head = [f"GC budget exceeded: {self.key} ({f.steps:,} steps after {self.measurement.warmup} warm-up)"]
        head += [f"  {line}" for line in over]
        head.append(f"  {_schedule_said(f)}")
        tail = [f"  counted with {recorded(self._heap_said())}; budgets from the test"
                + (f" and {self.baseline} (pytest --gc-budget-update rewrites it)" if self.baseline.is_file() else "")]
        return head, tail

    def _where_lines(self, keys: list[str]) -> list[str]:
        """What to look at: the top promotion sites, what the loop kept, the garbage it made
        (where the run was diagnosed)."""
        f = self._figures()
        if f.explanation is None:
            why = "gc_budget(..., sites=False)" if self.sites_mode is False else "the measured run counts only"
            return [f"  what was promoted, kept alive and freed: not looked at ({why})"]
        lines = ["  top promotion sites: " + self._where(
            f.sites, f.promoted, "none traced (no object allocated in the budget's steps reached the oldest "
                                       "generation)")]
        if "max_tracked_growth_per_1000" in keys or f.kept_total:
            lines.append(f"  kept alive at the end ({f.kept_total:,} objects made in the steps): " + self._where(
                f.kept, f.kept_total, "none"))
        if "max_tracked_growth_per_1000" in keys and (others := _other_threads()):
            lines.append(_threads_line(others))
        if f.garbage_total and ({"max_collections_per_1000", "max_full_per_1000"} & set(keys)):
            lines.append(f"  cyclic garbage the collections freed ({f.garbage_total:,} objects): " + self._where(
                f.garbage, f.garbage_total, "none"))
        return lines


def _other_threads() -> list[str]:
    """The names of this process's other Python threads (threading is never imported for it)."""
    threading = sys.modules.get("threading")
    return [t.name for t in threading.enumerate() if t is not threading.current_thread()] if threading else []


class _RerunDone(BaseException):
    """The failing budget of a test's rerun has said where: the rest of the body is not run."""


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_STARTED] = time.monotonic()  # the test's timeout counts from here (pytest-timeout's does)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test whose budget failed without allocation sites (`sites="on failure"`) runs its
    body once more with them traced, and its failure says where from that rerun. The
    outcome stays the first run's: the rerun changes only the failure's words (and if the
    rerun raises, the failure says so and keeps its types). Not run where it could cost
    the session: a body marked `gc_budget_side_effects`, a Hypothesis test (its whole
    search again), or a rerun that would not fit in the test's timeout or the session's."""
    called = time.monotonic()
    outcome = yield
    failed = item.stash.get(_FAILED, None)
    if not failed or outcome.excinfo is None or outcome.excinfo[1] is not failed.exception:
        return
    del item.stash[_FAILED]
    body = time.monotonic() - called
    limit, why = _rerun_limit(item)
    refused = _no_rerun(item) or (
        f"a second run of its body (the first took {body:.0f} s; tracing makes it longer) would not fit in "
        f"{limit:.0f} s ({why})" if limit < body else None)
    if refused:
        where, note = failed.where, f"(allocation sites not traced: {refused}; gc_budget(..., sites=True) traces " \
                                    "them in the measured run)"
    else:
        where, note = _rerun_for_sites(item, failed, limit, why)
    message = "\n".join([*failed.head, *where, f"  {note}", *failed.tail])
    if hasattr(outcome, "force_exception"):  # pluggy 1.1 and later
        outcome.force_exception(pytest.fail.Exception(message, pytrace=False))


def _no_rerun(item) -> str | None:
    """Why the failing test's body must not run again for its sites (None: it may)."""
    if item.get_closest_marker(SIDE_EFFECTS) is not None:
        return f"the test is marked {SIDE_EFFECTS}, so its body is not run again"
    if _is_hypothesis_test(item):
        return "a Hypothesis test is not run again (its whole search would be)"
    return None


def _rerun_limit(item) -> tuple[float, str]:
    """The seconds the rerun may take, and why: half of what is left of the test's timeout
    or of the session's (pytest-timeout's), at most RERUN_LIMIT (a traced loop can be tens
    of times slower than the budget's own run)."""
    now = time.monotonic()
    limit, why = RERUN_LIMIT, "the most a rerun for sites may take"
    timeout = _timeout_of(item)
    if timeout:
        left = max(timeout - (now - item.stash.get(_STARTED, now)), 0.0)
        if left / 2 < limit:
            limit, why = left / 2, f"half of what was left of the test's {timeout:g} s timeout"
    session = _option(item.config, "session_timeout")
    if session:
        left = max(session - (now - _SESSION_START), 0.0)
        if left / 2 < limit:
            limit, why = left / 2, f"half of what was left of the session's {session:g} s timeout"
    return limit, why


def _timeout_of(item) -> float | None:
    """The test's timeout in seconds as pytest-timeout applies it (its marker, else the
    option or ini value), or None."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.args[0] if marker.args else marker.kwargs.get("timeout")
    else:
        value = _option(item.config, "timeout")
    try:
        seconds = float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return None
    return seconds if seconds > 0 else None


def _option(config, name: str):
    """A plugin's option (pytest-timeout's `timeout`, `session_timeout`), else its ini
    value; None where the plugin is absent."""
    value = getattr(config.option, name, None)
    if value is None:
        try:
            value = config.getini(name)
        except (ValueError, KeyError):
            return None
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


class _RerunOverTime(BaseException):
    """The rerun for sites ran past its time: stopped at its budget's next step."""


def _stop_rerun(rerun: _Rerun) -> None:
    """The rerun's time is up (a timer's thread): the budget measuring stops at its next
    step, and one that begins later at once."""
    rerun.over = True
    for budget in list(_ACTIVE):
        budget.measurement.interrupt(_RerunOverTime())


def _rerun_for_sites(item, failed: _Failure, limit: float, why: str) -> tuple[list[str], str]:
    """The failing budget's where-lines from a rerun of the test's body with allocation
    sites traced (the fixtures are the first run's), and a line saying so; stopped at a
    step's boundary after `limit` seconds."""
    start = time.monotonic()
    item.stash[_MADE].clear()  # the rerun's budgets get the first run's indices, so their keys
    rerun = item.stash[_RERUN] = _Rerun(failed.index, failed.keys)
    timer = threading.Timer(limit, _stop_rerun, args=(rerun,))
    timer.daemon = True
    timer.start()
    try:
        item.runtest()
    except _RerunDone:
        pass
    except _RerunOverTime:
        return (failed.where, f"(allocation sites not traced: the second run of its body, traced, was stopped at "
                                 f"{limit:.0f} s ({why}); {_known(failed)})")
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit too: the first run's failure stands
        from ..core.errors import printable

        first = (printable(e).strip().splitlines() or [""])[0][:200]
        return (failed.where, f"(allocation sites not traced: the test's body, run again to trace them, raised "
                                 f"{type(e).__name__}: {first}; {_known(failed)})")
    finally:
        timer.cancel()
        del item.stash[_RERUN]
    where = rerun.where
    if where is None:
        return failed.where, ("(allocation sites not traced: the test's body, run again to trace them, did not "
                              f"reach the budget; {_known(failed)})")
    note = (f"(where: from a second run of the test's body with allocation sites traced, "
            f"{time.monotonic() - start:.1f} s; gc_budget(..., sites=True) traces them in the measured run)")
    return where, note + _rerun_differs(failed, rerun)


def _rerun_differs(failed: _Failure, rerun: _Rerun) -> str:
    """The counts the traced rerun measured otherwise than the first run (its sites may then
    not be the first run's)."""
    differs = [f"{k} {_fmt_count(rerun.measured.get(k))} where the first run measured {_fmt_count(v)}"
               for k, v in failed.measured.items() if rerun.measured and _differs(rerun.measured.get(k), v)]
    return f"; the second run measured {'; '.join(differs)}: its sites may not be the first run's" if differs else ""


RERUN_ALIKE = 0.1  # a rerun's count within a tenth of the first run's is the same count, said no more


def _differs(a, b) -> bool:
    """Whether a rerun's count `a` is another than the first run's `b` (per generation for
    lists): beyond RERUN_ALIKE of the larger. The diagnosis the rerun carries moves a count
    a little (a loop keeping 1 object a step read 1,005 per 1,000 steps diagnosed, 1,000
    not); a rerun that went another way (no promotion where the first run had 1,144 a step)
    is said."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) != len(b) or any(map(_differs, a, b))
    if a is None or b is None or isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return a != b
    return abs(a - b) > RERUN_ALIKE * max(abs(a), abs(b))


def _known(failed: _Failure) -> str:
    """What the failure knows of what was promoted and kept without the rerun."""
    return "the lines above give types only" if failed.looked else "what was promoted and kept is not known"


def _fmt_count(x) -> str:
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_fmt_count(v) for v in x) + "]"
    return "none" if x is None else _fmt(x)


def _larger(a, b):
    """The larger of two budgets (per generation for lists); `a` None: `b`."""
    if a is None:
        return b
    if isinstance(a, list) and isinstance(b, list):
        # strict=False: a list may budget the first generations only; the rest is kept
        return [max(x, y) for x, y in zip(a, b, strict=False)] + (a[len(b):] if len(a) > len(b) else b[len(a):])
    return max(a, b)


def _top(counts: Census, n: int = 3) -> list:
    """The top `n` (site or type, count) of a diagnosis' counter: by site and type where
    sites were traced, else by type."""
    rows = counts.by_site_type or counts.by_type
    total = max(counts.total, 1)
    return [(k, v) for k, v in list(rows.items())[:n] if v * 100 >= total]  # under 1 %: noise


def recorded(heap: str = "frozen") -> str:
    """What the counts depend on, as the budget ran them (`heap`: what it did to the heap
    before the loop)."""
    return (f"Python {sys.version.split()[0]}, thresholds {DEFAULT_THRESHOLDS} (set by the budget), the heap before "
            f"the budget {heap}, in the test's own process")


def _fmt(x) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"
