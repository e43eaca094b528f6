"""gcbench's pytest plugin: GC budgets, a test that fails when a step's collector work grows.

Registered as the pytest plugin `gcbench` (entry point `pytest11`), it gives every test
the `gc_budget` fixture:

    def test_train_step_gc(gc_budget):
        step = make_step()
        with gc_budget(warmup=5, max_promotions_per_step=200, max_full_per_1000=0) as b:
            for _ in range(300):
                with b.step():
                    step()

What it gates on are counts, which Python's collector makes the same in every run of the
same program, on any machine (no timing, so no flakiness):

- `max_promotions_per_step`: objects that reached the oldest generation, per timed step
  (the mean over the steps: promotions happen at the collections of generation 1, a few
  hundred at a time). This is what makes full collections, and what they scan;
- `max_full_per_1000`, `max_collections_per_1000` (one figure for all generations, or a
  tuple per generation): collections per 1,000 timed steps;
- `max_tracked_growth_per_1000`: objects the collector tracks that are still alive at the
  end, per 1,000 steps;
- `max_gc_share` (a fraction): time in GC pauses. Timing is noisy, and the budget's own
  diagnostics run inside the pauses, so this one is an upper bound; prefer the counts.

Allocation sites are traced with tracemalloc, which slows a step's allocations several
times; `sites=False` leaves them out (a failure then names no site).

To make the counts the step's own, the budget starts from a collected heap with what
existed before it frozen (`gc.collect()`, then `gc.freeze()`, undone after: what the
session imported or ran earlier is out of the collector's sight) and with CPython's
default thresholds (700, 10, 10), whatever other code set; it records the interpreter,
PYTHONHASHSEED and the objects it froze. Within budget the test passes silently; over
budget it fails with one message: each measured figure beside its budget, where the full
collections fell, and the top promotion sites (file:line and type, from tracemalloc, the
machinery of `gcbench explain`). The budget's bookkeeping creates no object inside a step
(it is `gcbench.measure`'s probe).

Budgets can come from a baseline: `pytest --gc-budget-update` writes each budget's measured
counts, with a margin (BASELINE_MARGIN), into `gc_budgets.toml` beside the test file, which
later runs read for every budget the test does not name itself; a failure names the file
and line to change. `--gc-budget-report DIR` saves each budget's measurement as a gcbench
result (and its explanation), so `gcbench report DIR` and `gcbench compare` work on them.
"""

from __future__ import annotations

import gc
import math
import os
import pathlib
import re
import sys

import pytest

BASELINE = "gc_budgets.toml"
BASELINE_MARGIN = 1.25  # budgets written by --gc-budget-update: measured x this, plus SLACK
SLACK = {"max_promotions_per_step": 1, "max_tracked_growth_per_1000": 10}
DEFAULT_THRESHOLDS = (700, 10, 10)
COUNTED = ("max_promotions_per_step", "max_full_per_1000", "max_collections_per_1000", "max_tracked_growth_per_1000")
CAPACITY = 100_000


def pytest_addoption(parser):
    group = parser.getgroup("gcbench", "GC budgets (gcbench's gc_budget fixture)")
    group.addoption("--gc-budget-report", metavar="DIR", default=None,
                    help="save every GC budget's measurement as a gcbench result in DIR (gcbench report DIR)")
    group.addoption("--gc-budget-update", action="store_true", default=False,
                    help=f"write the measured counts (x{BASELINE_MARGIN:g}) into {BASELINE} beside each test file "
                         "as the budgets later runs check, instead of checking them")


@pytest.fixture
def gc_budget(request):
    """`with gc_budget(warmup=5, max_promotions_per_step=200) as b: ... with b.step(): ...`:
    see the module docstring for the budgets."""
    made: list[Budget] = []

    def factory(warmup: int = 0, *, max_promotions_per_step: float | None = None,
                max_full_per_1000: float | None = None, max_collections_per_1000=None,
                max_tracked_growth_per_1000: float | None = None, max_gc_share: float | None = None,
                name: str | None = None, sites: bool = True) -> Budget:
        budget = Budget(request, warmup, dict(max_promotions_per_step=max_promotions_per_step,
                                              max_full_per_1000=max_full_per_1000,
                                              max_collections_per_1000=max_collections_per_1000,
                                              max_tracked_growth_per_1000=max_tracked_growth_per_1000,
                                              max_gc_share=max_gc_share), name, len(made), sites)
        made.append(budget)
        return budget

    return factory


def _test_name(request, index: int) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-._") or "test"
    return (name[:76] + (f"-{index}" if index else ""))[:80]


class Budget:
    """One budgeted loop of a test (made by the `gc_budget` fixture)."""

    def __init__(self, request, warmup: int, given: dict, name: str | None, index: int, sites: bool = True):
        from .user_loop import Measurement

        self.request = request
        self.key = request.node.nodeid + (f"#{index}" if index else "")
        self.baseline = pathlib.Path(str(request.node.path)).parent / BASELINE
        self.given = {k: v for k, v in given.items() if v is not None}
        for k, v in self.given.items():
            _check_budget(k, v)
        self.measurement = Measurement(name or _test_name(request, index), warmup, CAPACITY, explain=True)
        self.measurement.sites = sites  # False: no allocation sites in a failure, and steps as fast as without
        self.figures: dict = {}
        self._thresholds = None
        self._frozen = 0

    # -- the context managers -----------------------------------------------------------------
    def __enter__(self) -> Budget:
        self._thresholds = gc.get_threshold()
        gc.collect()
        gc.freeze()  # what the session made before the budget: out of the collector's sight
        self._frozen = gc.get_freeze_count()
        gc.set_threshold(*DEFAULT_THRESHOLDS)
        self.measurement.__enter__()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        try:
            self.measurement.__exit__(exc_type, *exc)
        finally:
            gc.set_threshold(*self._thresholds)
            gc.unfreeze()
        if exc_type is None:
            self._conclude()

    def step(self):
        """The context manager of one step: `with b.step(): ...` (allocates nothing)."""
        return self.measurement.step()

    # -- what was measured, against the budgets ------------------------------------------------------
    def measure(self) -> dict:
        """The budget's figures: steps, promotions per step, collections per 1,000 steps (per
        generation, and full), tracked growth per 1,000 steps, GC share, and where the full
        collections fell."""
        import numpy as np

        from .analysing import summary

        m = self.measurement
        doc = m.result()
        expl = m.explanation()
        steps = m.steps
        colls = np.asarray(doc["gc_collections"], np.int64).reshape(steps, -1)
        between = doc["between_steps"]["collections"]
        per_gen = [(int(colls[:, g].sum()) + between[g]) * 1000 / steps for g in range(colls.shape[1])]
        memory = doc.get("memory") or {}
        tracked = None
        if memory.get("tracked_start") is not None and memory.get("tracked_end") is not None:
            tracked = (memory["tracked_end"] - memory["tracked_start"]) * 1000 / steps
        promoted = expl["python"]["promoted"]
        return {"steps": steps, "max_promotions_per_step": float(np.mean(expl["python"]["promoted_per_step"])),
                "max_full_per_1000": per_gen[-1], "max_collections_per_1000": per_gen,
                "max_tracked_growth_per_1000": tracked,
                "max_gc_share": summary.gc_share(doc),
                "full_steps": [int(s) for s in np.flatnonzero(colls[:, -1])],
                "sites": list((promoted.get("by_site_type") or {}).items())[:3],
                "promoted": int(promoted["total"]), "doc": doc, "explanation": expl}

    def _conclude(self) -> None:
        config = self.request.config
        self.figures = self.measure()
        folder = config.getoption("--gc-budget-report")
        if folder:
            from .analysing import explain

            self.measurement.save_result(folder)
            explain.save(pathlib.Path(folder), self.figures["explanation"])
        if config.getoption("--gc-budget-update"):
            write_baseline(self.baseline, self.key, self.figures)
            return
        stored, lines = read_baseline(self.baseline, self.key)
        budgets = {**{k: v for k, v in stored.items() if k in COUNTED}, **self.given}
        over = [line for line in (self._over(k, v, lines) for k, v in budgets.items()) if line]
        if over:
            pytest.fail(self._message(over), pytrace=False)

    def _over(self, key: str, budget, lines: dict) -> str | None:
        measured = self.figures[key]
        where = f" ({self.baseline.name}:{lines[key]})" if key in lines and key not in self.given else ""
        if key == "max_collections_per_1000":
            budgets = list(budget) if isinstance(budget, (list, tuple)) else [budget] * len(measured)
            bad = [f"generation {g}: {_fmt(m)} > {_fmt(b)}" for g, (m, b) in enumerate(zip(measured, budgets))
                   if b is not None and m > b]
            return f"collections per 1,000 steps: {'; '.join(bad)}{where}" if bad else None
        if measured is None or measured <= budget:
            return None
        label = {"max_promotions_per_step": "promotions to the oldest generation per step",
                 "max_full_per_1000": "full collections per 1,000 steps",
                 "max_tracked_growth_per_1000": "tracked objects still alive per 1,000 steps",
                 "max_gc_share": "GC share of step time (timing: noisy, and disturbed by the diagnostics)"}[key]
        return f"{label}: {_fmt(measured)} > budget {_fmt(budget)}{where}"

    def _message(self, over: list[str]) -> str:
        f = self.figures
        full = f["full_steps"]
        schedule = ("full collections at steps " + ", ".join(map(str, full[:8])) +
                    (f" and {len(full) - 8} more" if len(full) > 8 else "")) if full else "no full collection"
        sites = "; ".join(f"{site} {100 * n / max(f['promoted'], 1):.0f} %" for site, n in f["sites"]) or \
            ("none traced (no object allocated in the budget's steps reached the oldest generation)"
             if self.measurement.sites else "not traced (gc_budget(..., sites=False))")
        lines = [f"GC budget exceeded: {self.key} ({f['steps']:,} steps after {self.measurement.warmup} warm-up)"]
        lines += [f"  {line}" for line in over]
        lines += [f"  {schedule}", f"  top promotion sites: {sites}",
                  f"  counted with {recorded()}; budgets from the test"
                  + (f" and {self.baseline} (pytest --gc-budget-update rewrites it)" if self.baseline.is_file() else "")]
        return "\n".join(lines)


def recorded() -> str:
    """What the counts depend on, as the budget ran them."""
    return (f"Python {sys.version.split()[0]}, thresholds {DEFAULT_THRESHOLDS} (set by the budget), the heap before "
            f"the budget frozen, PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', 'random')}")


def _fmt(x) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _check_budget(key: str, value) -> None:
    values = value if isinstance(value, (list, tuple)) and key == "max_collections_per_1000" else [value]
    for v in values:
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or not math.isfinite(v)):
            raise pytest.UsageError(f"gc_budget: {key} must be a number of at least 0 (or left out), got {value!r}")
    if key == "max_gc_share" and not 0 <= value <= 1:
        raise pytest.UsageError(f"gc_budget: max_gc_share is a fraction from 0 to 1, got {value!r}")


# -- the baseline file ---------------------------------------------------------------------------------

def _load_toml(path: pathlib.Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"{path}: not a GC budget file ({e}); fix or delete it, or rerun with "
                                "--gc-budget-update") from None


def read_baseline(path: pathlib.Path, key: str) -> tuple[dict, dict]:
    """The budgets `path` stores for `key` (a test's node id), and the line of each."""
    table = _load_toml(path).get(key) or {}
    lines: dict[str, int] = {}
    if table:
        text = path.read_text().splitlines()
        header = next((i for i, line in enumerate(text) if line.strip() == f"[{_quote(key)}]"), None)
        if header is not None:
            for i in range(header + 1, len(text)):
                if text[i].startswith("["):
                    break
                name = text[i].split("=")[0].strip()
                if name in table:
                    lines[name] = i + 1
    return table, lines


def _quote(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _budget_of(key: str, measured):
    if isinstance(measured, list):
        return [_budget_of(key, m) for m in measured]
    return math.ceil(measured * BASELINE_MARGIN + SLACK.get(key, 0))


def write_baseline(path: pathlib.Path, key: str, figures: dict) -> None:
    """Store `figures`' counts, with the margin, as `key`'s budgets in `path` (the other
    tests' tables are kept), atomically."""
    from .core import files

    tables = _load_toml(path)
    tables[key] = {k: _budget_of(k, figures[k]) for k in COUNTED if figures.get(k) is not None}
    out = [f"# GC budgets of the tests beside this file, written by `pytest --gc-budget-update`: each the",
           f"# count measured then x {BASELINE_MARGIN:g} (promotions + {SLACK['max_promotions_per_step']}, tracked growth "
           f"+ {SLACK['max_tracked_growth_per_1000']}),",
           "# rounded up. Counted with the heap before the budget frozen and CPython's default thresholds;",
           f"# measured with {recorded()}.", ""]
    for name in sorted(tables):
        out.append(f"[{_quote(name)}]")
        for k, v in tables[name].items():
            out.append(f"{k} = {v!r}".replace("'", '"'))
        out.append("")
    files.write_text(path, "\n".join(out))
