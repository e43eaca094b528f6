"""gc_budgets.toml: the GC budgets a test suite keeps beside its test files.

How it works, and why: docs/internals.md, `gcbench.budget.baseline`.
"""

from __future__ import annotations

import difflib
import math
import pathlib

from ..core import files
from ..core.errors import UsageError

NAME = "gc_budgets.toml"
LIMIT = 4 * 2**20  # bytes: a budget file is a few KiB; anything larger is not one
# collections budgets count the collector's own (automatic) collections; the loop's own
# gc.collect() calls are budgeted apart, in max_explicit_per_1000
COUNTS = ("max_promotions_per_step", "max_full_per_1000", "max_collections_per_1000", "max_explicit_per_1000",
          "max_tracked_growth_per_1000", "max_examined_per_step")
KEYS = (*COUNTS, "max_gc_share")
GENERATIONS = 3
MARGIN = 1.25  # a budget written by --gc-budget-update: the measured count x MARGIN, plus SLACK
SLACK = {"max_promotions_per_step": 1.0, "max_tracked_growth_per_1000": 10.0}
# Tracked growth counts every thread's objects: what another thread holds in flight as the loop
# ends is in it once, whatever the loop's length (xdist's worker reading its next message: a
# memoryview and its buffer, execnet/gateway_base.py, traced in 200 budgeted tests under
# `-n 2` beside two busy processes). A leak grows with the steps, an object in flight does
# not: a written budget leaves room for this many.
IN_FLIGHT = 8

HEADER = """\
GC budgets of the tests beside this file (gcbench's gc_budget fixture). `pytest
--gc-budget-update` writes each budgeted loop's measured counts here, x {margin:g} and rounded
up, with room for one more collection of each generation (promotions + {promo:g}, tracked growth
+ {growth:g} per 1,000 steps or {in_flight} objects, what another thread may hold as the loop ends);
edit them by hand as you like: comments and other keys stay.
Keys are the test's place in this folder: FILE::TEST[PARAMS], #N for its N+1-th budget."""


class GCBudgetWarning(UserWarning):
    """A GC budget that asserted nothing (no budget given, none in gc_budgets.toml)."""


class BudgetFileError(UsageError):
    """A budget file that cannot be used, said in one line."""


def key_of(test_file: str | pathlib.Path, nodeid: str, index: int = 0) -> str:
    """`test_loop.py::test_loop` (`#1`, ... for a test's later budgets): the test's place
    in its own folder, whatever pytest's rootdir or working directory."""
    inside = nodeid.split("::", 1)[1] if "::" in nodeid else nodeid
    return f"{pathlib.Path(test_file).name}::{inside}" + (f"#{index}" if index else "")


def check_value(key: str, value, where: str) -> None:
    """A `UsageError` (one line, naming `where`) unless `value` is a budget `key` can hold."""
    if key not in KEYS:
        near = difflib.get_close_matches(key, KEYS, n=1)
        if not near and not key.startswith("max_"):
            return  # a note of the user's (an owner, a date, a reason): kept, not a budget
        raise BudgetFileError(f"{where}: unknown budget {key!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                              + f"; budgets are {', '.join(KEYS)}")
    _check_numbers(key, value, where)
    if key == "max_gc_share" and value > 1:
        raise BudgetFileError(f"{where}: max_gc_share is a fraction from 0 to 1, got {_shown(value)}")


def _check_numbers(key: str, value, where: str) -> None:
    """A budget's value: a number of at least 0; for the collections, one per generation too
    (at most three; a generation left None is not budgeted)."""
    per_generation = key == "max_collections_per_1000" and isinstance(value, (list, tuple))
    values = list(value) if per_generation else [value]
    if per_generation and not 1 <= len(values) <= GENERATIONS:
        raise BudgetFileError(f"{where}: {key} is one number or one per generation (at most {GENERATIONS}), "
                              f"got {len(values)} values")
    listed = isinstance(value, (list, tuple))
    if any(not _a_budget(v) for v in values if not (v is None and listed)):  # None listed: a generation unbudgeted
        raise BudgetFileError(f"{where}: {key} must be a number of at least 0, got {_shown(value)}")


def _a_budget(v) -> bool:
    """A number a budget can be: finite, at least 0 (not a bool)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _parse(path: pathlib.Path, text: str) -> dict:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BudgetFileError(f"{path}: not valid TOML ({e}); fix it or delete it") from None
    except RecursionError:
        raise BudgetFileError(f"{path}: not valid TOML (nested too deeply)") from None


def _text(path: pathlib.Path) -> str | None:
    """The file's text; None when there is none. Refuses what is not a regular file of at
    most LIMIT bytes, without waiting on it or reading it whole."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return files.read_text(path, "GC budget file", limit=LIMIT)
    except UsageError as e:
        raise BudgetFileError(str(e)) from None


def read(path: str | pathlib.Path) -> dict[str, dict]:
    """Every table of the budget file at `path`, checked ({} where there is no file)."""
    path = pathlib.Path(path)
    text = _text(path)
    if text is None:
        return {}
    tables = _parse(path, text)
    for key, table in tables.items():
        if not isinstance(table, dict):
            raise BudgetFileError(f"{path}: {key!r} is not a table of budgets ([\"FILE::TEST\"] then "
                                  "max_...= lines)")
        for name, value in table.items():
            check_value(name, value, f"{path}:{line_of(text, key, name) or 1} [{key}]")
    return {key: {k: v for k, v in table.items() if k in KEYS} for key, table in tables.items()}


def table_for(tables: dict[str, dict], key: str) -> tuple[str | None, dict]:
    """The table of `key`, or of a test stored under its older key (the full node id that
    ends in it); (None, {}) when the file has none."""
    if key in tables:
        return key, tables[key]
    older = [k for k in tables if k.endswith("/" + key)]
    return (older[0], tables[older[0]]) if len(older) == 1 else (None, {})


def line_of(text: str, key: str, name: str) -> int | None:
    """The line (from 1) of `name = ...` in the table `key` of the TOML `text`."""
    import tomlkit

    try:
        quoted = tomlkit.key(key).as_string()
    except Exception:  # a key tomlkit cannot write is on no line we can find
        return None
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped in (f"[{quoted}]", f'["{key}"]')
        elif inside and stripped.split("=", 1)[0].strip() == name:
            return n
    return None


def budget_of(key: str, measured, steps: int):
    """The budget --gc-budget-update writes for a measured count: never below it, never
    zero where a count can move by one (one more collection in `steps` steps fits)."""
    if isinstance(measured, (list, tuple)):
        return [budget_of(key, m, steps) for m in measured]
    one_more = 1000 / max(steps, 1)  # one collection more, per 1,000 steps
    slack = max(SLACK.get(key, 0.0), one_more if key != "max_promotions_per_step" else 0.0)
    if key == "max_tracked_growth_per_1000":
        slack = max(slack, IN_FLIGHT * one_more)
    budget = math.ceil(max(measured, 0) * MARGIN + slack)
    return max(budget, math.ceil(measured))


def update(path: str | pathlib.Path, key: str, budgets: dict) -> pathlib.Path:
    """Set `key`'s counted budgets to `budgets` in the file at `path`, under its lock; keep
    everything else in the file as it was. Returns the path."""
    import tomlkit

    path = pathlib.Path(path)
    with files.updating(path):
        text = _text(path)
        if text is None:
            doc = tomlkit.document()
            for line in HEADER.format(margin=MARGIN, promo=SLACK["max_promotions_per_step"],
                                      growth=SLACK["max_tracked_growth_per_1000"],
                                      in_flight=IN_FLIGHT).splitlines():
                doc.add(tomlkit.comment(line))
            doc.add(tomlkit.nl())
        else:
            _parse(path, text)  # a broken file: one line, and nothing written over it
            doc = tomlkit.parse(text)
        stored, _ = table_for(doc, key)
        table = doc[stored] if stored is not None else tomlkit.table()
        for name in COUNTS:
            if name in table and name not in budgets:
                del table[name]  # a count no longer measured: not a budget any more
        for name, value in budgets.items():
            table[name] = value
        if stored is None:
            doc[key] = table
        files.write_text(path, tomlkit.dumps(doc))
    return path
