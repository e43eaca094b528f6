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
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from . import baseline

if TYPE_CHECKING:
    from ..analysing.explanation_records import Census

BASELINE = baseline.NAME
DEFAULT_THRESHOLDS = (700, 10, 10)
COUNTED = baseline.COUNTS
CAPACITY = 100_000
_ACTIVE: list = []  # the budget measuring now: budgets do not nest
_MADE = pytest.StashKey[list]()  # the budgets a test made, in order (their index is part of their key)


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


@dataclasses.dataclass
class _Rerun:
    """A failing test's body running again for its sites: the budget that failed, the counts
    it was over, and (once that budget is reached again) where to look."""

    index: int
    keys: list[str]
    where: list[str] | None = None


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


@pytest.fixture
def gc_budget(request):
    """A GC budget around the steps of a test:
    `with gc_budget(warmup=5, max_promotions_per_step=200, max_full_per_1000=0) as b: ...`
    then `with b.step(): ...` around each step.

    The budgets are counts, the same in every run of the same program on any machine:
    `max_promotions_per_step` (objects reaching the oldest generation, the mean per timed
    step), `max_full_per_1000` and `max_collections_per_1000` (the collector's own
    collections per 1,000 timed steps, between steps too; one figure, or a list per
    generation), `max_explicit_per_1000` (the loop's `gc.collect()` calls),
    `max_tracked_growth_per_1000` (tracked objects still alive at the end),
    `max_examined_per_step` (objects the collections examined a step: what a collection
    costs, which a gc.freeze() cuts); and `max_gc_share`, the share of the loop's CPU time
    in the collector's pauses, the diagnostics' own work left out (a time: prefer the
    counts). `sites` says
    when allocation sites are traced: `"on failure"` (a second run of a failing test's
    body), `True` (the measured run) or `False`; `settle=False` measures from the heap as
    the test left it (no collection and freeze first); `name` tells apart several budgets
    of one test in budget files and reports. A budget the call does not name comes
    from `gc_budgets.toml` beside the test file (`pytest --gc-budget-update` writes it).
    docs/gc-budgets.md has the guide."""
    made: list[Budget] = request.node.stash.setdefault(_MADE, [])

    def factory(warmup: int = 0, *, max_promotions_per_step: float | None = None,
                max_full_per_1000: float | None = None, max_collections_per_1000=None,
                max_explicit_per_1000: float | None = None,
                max_tracked_growth_per_1000: float | None = None, max_examined_per_step: float | None = None,
                max_gc_share: float | None = None,
                name: str | None = None, sites: bool | str = "on failure", settle: bool = True) -> Budget:
        budget = Budget(request, warmup, {"max_promotions_per_step": max_promotions_per_step,
                                              "max_full_per_1000": max_full_per_1000,
                                              "max_collections_per_1000": max_collections_per_1000,
                                              "max_explicit_per_1000": max_explicit_per_1000,
                                              "max_tracked_growth_per_1000": max_tracked_growth_per_1000,
                                              "max_examined_per_step": max_examined_per_step,
                                              "max_gc_share": max_gc_share}, name, len(made), sites, settle)
        made.append(budget)
        return budget

    return factory


def result_name(key: str) -> str:
    """A result's name for the budget `key` (`test_loop.py::test_loop[a]#1`): letters, digits,
    '.', '_' and '-' only, at most 80 characters, distinct for distinct keys."""
    plain = key.replace(".py::", "--")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", plain).strip("-._") or "test"
    if len(name) > 80 or name != plain:  # shortened, or characters replaced: distinct by a digest
        digest = hashlib.sha1(key.encode("utf-8", "surrogateescape"), usedforsecurity=False).hexdigest()[:6]
        name = f"{name[:73].rstrip('-._')}-{digest}"
    return name


def _settle() -> None:
    """A collected heap, with what is in it out of the collector's sight, and every
    generation's count at zero: done as the budget begins and again as its timed steps
    begin, so that what the warm-up made (a compilation, or a cached one read back: 2 of
    1,335 promotions apart) moves no count."""
    gc.collect()
    gc.freeze()


def _fail(message: str):
    pytest.fail(message, pytrace=False)



@dataclasses.dataclass(frozen=True)
class BudgetFigures:
    """What a budget measured (`GCBudget.measure`, `b.figures` after the `with`): the counts
    its budgets bound (COUNTED, read by name with `count`), where the full collections fell,
    and what to look at (promotion sites, what the loop kept, the garbage it made)."""

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
    sites: list  # top (site or type, count) of what was promoted
    promoted: int
    kept: list
    kept_total: int
    garbage: list
    garbage_total: int
    doc: Any  # the result document
    explanation: Any  # the explanation (analysing.explanation_records.Explanation)

    def count(self, key: str) -> Any:
        """The count a budget of that name bounds (`max_full_per_1000`, ...)."""
        if key not in baseline.KEYS:
            raise KeyError(key)
        return getattr(self, key)

class Budget:
    """One budgeted loop of a test (made by the `gc_budget` fixture)."""

    def __init__(self, request, warmup: int, given: dict, name: str | None, index: int,
                 sites: bool | str = "on failure", settle: bool = True):
        from ..core.errors import UsageError
        from ..user_loop import Measurement

        self.request = request
        test_file = pathlib.Path(str(request.node.path))
        self.key = baseline.key_of(test_file, request.node.nodeid, index)
        self.baseline = test_file.parent / BASELINE
        self.given = {k: v for k, v in given.items() if v is not None}
        for k, v in self.given.items():
            try:
                baseline.check_value(k, v, "gc_budget")
            except UsageError as e:
                _fail(str(e))
        try:
            self.measurement = Measurement(name or result_name(self.key), warmup, CAPACITY, explain=True)
        except UsageError as e:
            _fail(f"gc_budget: {e}")
        if not (sites is True or sites is False or sites == "on failure"):
            _fail(f"gc_budget: sites must be True, False or 'on failure', got {sites!r}")
        self.index = index
        self.sites_mode = sites
        # traced in the measured run only for sites=True; in the rerun of a failing test only
        # for the budget that failed (the ones before it run as fast as they can)
        rerun = request.node.stash.get(_RERUN, None)
        self.measurement.sites = sites is True or (rerun is not None and rerun.index == index)
        # settle=False: measured from the heap as the test left it (what a gc.freeze() fix removes shows)
        self.settle = settle is not False
        self.measurement.before_timed = _settle if self.settle else None
        self.figures: BudgetFigures | None = None
        self._thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS
        self._frozen_before = 0
        self._kept: dict | None = None
        self._left_off = False  # the loop turned the collector off and left it off: turned back on, and said

    # -- the context managers -----------------------------------------------------------------
    def __enter__(self) -> Budget:
        if _ACTIVE:
            _fail(f"gc_budget: budgets do not nest ({self.key} began inside {_ACTIVE[-1].key}): end one before "
                  "the next begins")
        if not gc.isenabled():
            _fail(f"gc_budget: the collector is disabled (gc.disable()) as {self.key}'s budget begins, so every count "
                  "would be zero whatever the loop does: call gc.enable() before the budget")
        self._thresholds = gc.get_threshold()
        self._frozen_before = gc.get_freeze_count()
        if self.settle:
            _settle()
        gc.set_threshold(*DEFAULT_THRESHOLDS)
        _ACTIVE.append(self)
        self.measurement.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:  # named, not *exc: no tuple of ours alive at the loop's end
        try:
            start = self.measurement.tracked_at_start
            if exc_type is None and start is not None and len(gc.get_objects()) > start:
                self._kept = self.measurement.kept()  # what the loop kept, while its sites are still traced
        finally:  # whatever happened: the measurement's hooks and tracing go, the collector is as it was
            try:
                self.measurement.__exit__(exc_type, exc, tb)
            finally:
                _ACTIVE.remove(self)
                gc.set_threshold(*self._thresholds)
                if not gc.isenabled():  # on as the budget began: on again, whatever the loop did
                    self._left_off = True
                    gc.enable()
                if self.settle and not self._frozen_before:  # else the run's own freeze stays (all or nothing)
                    gc.unfreeze()
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
        import numpy as np

        from ..analysing import summary
        from ..measuring import results

        m = self.measurement
        doc = m.result()
        expl = m.explanation()
        steps = m.steps
        every = summary.collections_by_generation(doc)  # in the steps and between them
        asked = summary.explicit_by_generation(doc)  # the loop's own gc.collect() calls, in steps and between
        per_gen = [(e - a) * 1000 / steps for e, a in zip(every, asked, strict=True)]  # the collector's own
        full = summary.full_collections(doc)
        memory = results.part(doc, "memory")
        start, end = memory.get("tracked_start"), memory.get("tracked_end")
        tracked = (end - start) * 1000 / steps if start is not None and end is not None else None
        python = expl.python
        if python is None:
            raise ValueError("a budget's explanation without its diagnosis")
        from ..analysing import rates

        split = summary.cpu_gc_split(doc)
        own = m.diagnosis_cpu_ns  # the diagnostics ran inside the pauses and the steps: left out of both
        share = max(split[0] - own, 0.0) / (split[1] - own) if split is not None and split[1] > own else None
        from ..analysing import explanation_records as records

        kept = records.from_json(self._kept or {}, records.Census, "what the loop kept")
        return BudgetFigures(
            steps=steps, max_promotions_per_step=float(np.mean(python.promoted_per_step)),
            max_full_per_1000=per_gen[-1], max_collections_per_1000=per_gen,
            max_explicit_per_1000=sum(asked) * 1000 / steps, max_tracked_growth_per_1000=tracked,
            max_examined_per_step=rates.examined_per_step(doc), max_gc_share=share, explicit=asked,
            explicit_sites=results.part(doc, "between_steps").get("explicit_sites") or {},
            full_steps=[int(i) for i in np.repeat(np.arange(len(full)), full)],
            full_all=every[-1], full_after_last=summary.full_after_last(doc),
            sites=_top(python.promoted), promoted=python.promoted.total, kept=_top(kept), kept_total=kept.total,
            garbage=_top(python.garbage), garbage_total=python.garbage.total, doc=doc, explanation=expl)

    def _conclude(self) -> None:
        from ..core.errors import UsageError

        if self._left_off:
            call = (self.measurement.collector_state().get("calls") or {}).get("disable") or {}
            at_line = f" (gc.disable() at {at})" if (at := call.get("first_at")) else ""
            _fail(f"gc_budget: {self.key}: the loop turned the collector off{at_line} and left it off, so its counts "
                  "are not the loop's: the budget turned it back on; call gc.enable() before the budget ends")
        config = self.request.config
        try:
            self.figures = self.measure()
        except UsageError as e:
            _fail(f"gc_budget: {self.key}: {e}")
        rerun = self.request.node.stash.get(_RERUN, None)
        if rerun is not None:  # the failing test's body again, for its sites: say where, check and write nothing
            if self.index == rerun.index:
                rerun.where = self._where_lines(rerun.keys)
                raise _RerunDone
            return
        folder = config.getoption("--gc-budget-report")
        if folder:
            from ..analysing import gc_causes

            self.measurement.save_result(folder)
            gc_causes.save(pathlib.Path(folder), self._figures().explanation)
        try:
            if config.getoption("--gc-budget-update"):
                self._update_baseline()
                return
            stored, lines = self._stored()
        except UsageError as e:
            _fail(str(e))
        budgets = {**stored, **self.given}
        if not budgets:
            message = (f"{self.key}: its GC budget asserts nothing (no budget given, none in {self.baseline}): "
                       "pytest --gc-budget-update writes its measured counts there as budgets")
            if config.getoption("--gc-budget-strict"):
                _fail(f"gc_budget: {message} (--gc-budget-strict)")
            warnings.warn(GCBudgetWarning(message), stacklevel=3)
            return
        self._warn_changed(budgets)
        over = {k: line for k, v in budgets.items() if (line := self._over(k, v, lines))}
        if over:
            head, tail = self._message(list(over.values()))
            where = self._where_lines(list(over))
            failure = pytest.fail.Exception("\n".join([*head, *where, *tail]), pytrace=False)
            if self.sites_mode == "on failure":  # pytest_runtest_call reruns the body for the sites
                self.request.node.stash[_FAILED] = _Failure(failure, self.index, list(over), head, where, tail)
            raise failure

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

    def _update_baseline(self) -> None:
        """--gc-budget-update: the measured counts, with their margin, into the budget file;
        a budget the test's call names wins over the file, so writing it would be a value
        never read: it is named instead."""
        skipped = [k for k in COUNTED if k in self.given]
        f = self._figures()
        written = {k: baseline.budget_of(k, f.count(k), f.steps) for k in COUNTED
                   if f.count(k) is not None and k not in skipped}
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
            budgets = list(budget) if isinstance(budget, (list, tuple)) else [budget] * len(measured)
            # strict=False: a list may budget the first generations only (baseline allows 1 to 3)
            bad = [
                f"generation {g}: {_fmt(m)} > {_fmt(b)}"
                for g, (m, b) in enumerate(zip(measured, budgets, strict=False))
                if b is not None and m > b
            ]
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

    def _message(self, over: list[str]) -> tuple[list[str], list[str]]:
        """A failure's first lines (each figure over its budget, where the full collections
        fell) and its last (how the counts were taken); `_where_lines` go between."""
        f = self._figures()
        full = f.full_steps
        asked = f.explicit[-1] if f.explicit else 0
        schedule = ("full collections at (or just before) steps " + ", ".join(map(str, full[:8])) +
                    (f" and {len(full) - 8} more" if len(full) > 8 else "")) if full else "no full collection in a step"
        if f.full_after_last:
            schedule += f", {f.full_after_last} after the last step"
        if asked:
            sites = "; ".join(f"{site} ({k})" for site, k in list(f.explicit_sites.items())[:3])
            schedule += f"; {asked} of the {f.full_all} full collections were gc.collect() calls" + \
                (f", called at {sites}" if sites else "")
        head = [f"GC budget exceeded: {self.key} ({f.steps:,} steps after {self.measurement.warmup} warm-up)"]
        head += [f"  {line}" for line in over]
        head.append(f"  {schedule}")
        tail = [f"  counted with {recorded()}; budgets from the test"
                + (f" and {self.baseline} (pytest --gc-budget-update rewrites it)" if self.baseline.is_file() else "")]
        return head, tail

    def _where_lines(self, keys: list[str]) -> list[str]:
        """What to look at: the top promotion sites, what the loop kept, the garbage it made."""
        f = self._figures()
        lines = ["  top promotion sites: " + self._where(
            f.sites, f.promoted, "none traced (no object allocated in the budget's steps reached the oldest "
                                       "generation)")]
        if "max_tracked_growth_per_1000" in keys or f.kept_total:
            lines.append(f"  kept alive at the end ({f.kept_total:,} objects made in the steps): " + self._where(
                f.kept, f.kept_total, "none"))
        if f.garbage_total and ({"max_collections_per_1000", "max_full_per_1000"} & set(keys)):
            lines.append(f"  cyclic garbage the collections freed ({f.garbage_total:,} objects): " + self._where(
                f.garbage, f.garbage_total, "none"))
        return lines


class _RerunDone(BaseException):
    """The failing budget of a test's rerun has said where: the rest of the body is not run."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test whose budget failed without allocation sites (`sites="on failure"`) runs its
    body once more with them traced, and its failure says where from that rerun. The
    outcome stays the first run's: the rerun changes only the failure's words (and if the
    rerun raises, the failure says so and keeps its types)."""
    outcome = yield
    failed = item.stash.get(_FAILED, None)
    if not failed or outcome.excinfo is None or outcome.excinfo[1] is not failed.exception:
        return
    del item.stash[_FAILED]
    where, note = _rerun_for_sites(item, failed)
    message = "\n".join([*failed.head, *where, f"  {note}", *failed.tail])
    if hasattr(outcome, "force_exception"):  # pluggy 1.1 and later
        outcome.force_exception(pytest.fail.Exception(message, pytrace=False))


def _rerun_for_sites(item, failed: _Failure) -> tuple[list[str], str]:
    """The failing budget's where-lines from a rerun of the test's body with allocation
    sites traced (the fixtures are the first run's), and a line saying so."""
    import time

    start = time.monotonic()
    item.stash[_MADE].clear()  # the rerun's budgets get the first run's indices, so their keys
    rerun = item.stash[_RERUN] = _Rerun(failed.index, failed.keys)
    try:
        item.runtest()
    except _RerunDone:
        pass
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        from ..core.errors import printable

        first = (printable(e).strip().splitlines() or [""])[0][:200]
        return (failed.where, f"(allocation sites not traced: the test's body, run again to trace them, raised "
                                 f"{type(e).__name__}: {first}; the lines above give types only)")
    finally:
        del item.stash[_RERUN]
    where = rerun.where
    if where is None:
        return failed.where, ("(allocation sites not traced: the test's body, run again to trace them, did not "
                                 "reach the budget; the lines above give types only)")
    return where, (f"(where: from a second run of the test's body with allocation sites traced, "
                   f"{time.monotonic() - start:.1f} s; gc_budget(..., sites=True) traces them in the measured run)")

def _top(counts: Census, n: int = 3) -> list:
    """The top `n` (site or type, count) of a diagnosis' counter: by site and type where
    sites were traced, else by type."""
    rows = counts.by_site_type or counts.by_type
    total = max(counts.total, 1)
    return [(k, v) for k, v in list(rows.items())[:n] if v * 100 >= total]  # under 1 %: noise


def recorded() -> str:
    """What the counts depend on, as the budget ran them."""
    return (f"Python {sys.version.split()[0]}, thresholds {DEFAULT_THRESHOLDS} (set by the budget), the heap before "
            "the budget frozen, in the test's own process")


def _fmt(x) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"
