"""Lint and types, as CI sees them: ruff with the rule set in pyproject.toml (pytest-benchmark's
and mccabe's; 120 columns) over the package, the tests, the benchmarks and setup.py, and mypy
over the package, bodies of untyped functions included."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "python", "tests", "benchmarks", "julia", "setup.py",
                           "repo_links.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]


def test_mypy_finds_nothing():
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]


def test_the_linters_are_pinned_and_run_as_pinned():
    """Issue 58, item 4: ruff and mypy are pinned in the test extra, so their findings move
    only with a commit that moves the pin; the ones installed here are those."""
    import importlib.metadata
    import re

    text = (ROOT / "pyproject.toml").read_text()
    for tool in ("ruff", "mypy", "radon"):
        pinned = re.search(rf'"{tool}==([0-9.]+)"', text)
        assert pinned, f"{tool} is not pinned in pyproject's test extra"
        try:
            installed = importlib.metadata.version(tool)
        except importlib.metadata.PackageNotFoundError:
            continue
        assert installed == pinned.group(1), (tool, installed, pinned.group(1))


def test_no_function_is_within_two_of_radons_limit():
    """Issue 68: radon's cyclomatic complexity, the measure the issue reads (ruff's mccabe
    counts a comprehension's conditions otherwise: `compare_docs` read 21 by radon and
    passed ruff's 20): no function above 18, and the package's average at or under 4.0."""
    radon = pytest.importorskip("radon.complexity")
    blocks = [b for path in sorted((ROOT / "python" / "gcbench").rglob("*.py"))
              for b in radon.cc_visit(path.read_text())]
    worst = sorted(blocks, key=lambda b: -b.complexity)[:3]
    assert worst[0].complexity <= 18, [(b.name, b.complexity) for b in worst]
    assert len(blocks) > 1000
    average = radon.average_complexity(blocks)
    print(f"radon: {len(blocks)} blocks, average {average:.3f}")
    # issue 68: at or under 4.0 (4.40 as the last session began, 4.60 when it was filed)
    assert average <= 4.0, f"radon's average complexity is {average:.3f}, above 4.0"


# pytest-benchmark's rule set (its pyproject.toml, [tool.ruff.lint] select): ours holds at least these.
PYTEST_BENCHMARK_RULES = {"B", "C4", "DTZ", "E", "EXE", "F", "I", "INT", "PIE", "PLC", "PLE", "PT", "PTH", "RSE",
                          "RUF", "S", "UP", "W"}


def _ruff_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]


def test_the_rule_set_is_at_least_pytest_benchmarks_and_each_ignore_says_why():
    """Issue 58, item 4: the wider set, complexity at most radon's C (20), and no ignore
    without its reason beside it."""
    lint = _ruff_config()
    assert PYTEST_BENCHMARK_RULES | {"C90"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 20
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("ignore = [", 1)[1].split("]", 1)[0]
    for line in block.strip().splitlines():
        reason = line.split("#", 1)[1].strip() if "#" in line else ""
        assert len(reason) > 10, f"an ignore without its reason: {line}"


def test_mypy_checks_the_bodies_of_untyped_functions():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy.get("check_untyped_defs") is True


def test_zip_says_whether_lengths_must_match():
    """B905 asks every zip to say strict=; where lengths may differ (strict=False), the comment
    above says why."""
    offenders = []
    for path in (ROOT / "python" / "gcbench").rglob("*.py"):
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            code = line.split("#", 1)[0]
            above = [line.strip() for line in lines[max(0, n - 3):n]]  # the comment opens the statement
            if "strict=False" in code and not any(a.startswith("# strict=False:") for a in above):
                offenders.append(f"{path.relative_to(ROOT)}:{n + 1}")
    assert not offenders, offenders


def test_module_docstrings_are_a_few_lines():
    """Issue 58, item 4: a module says what it is in a few lines; how it works and the
    figures behind it are in docs/internals.md, DESIGN.md and the benchmarks."""
    import ast

    long = {}
    for path in (ROOT / "python" / "gcbench").rglob("*.py"):
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        if doc and len(doc.splitlines()) > 10:
            long[str(path.relative_to(ROOT))] = len(doc.splitlines())
    assert not long, long


# Issue 58's target: under 300 `["key"]` subscripts in the package (the documents gcbench
# reads as typed records, not dicts). Counted on the syntax tree, so a list literal such as
# a table's header (`["cell", ...]`) is not one. May only fall: lower it with the count.
SUBSCRIPT_LIMIT = 189


def string_subscripts(text: str) -> int:
    """How many `x["key"]` (a subscript by a string constant) the Python source `text` holds;
    `Literal["key"]` is a type, not a key read, and is not counted."""
    return sum(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
               and not (isinstance(n.value, ast.Name) and n.value.id == "Literal")
               for n in ast.walk(ast.parse(text)))


def test_string_subscripts_are_counted_and_not_list_literals():
    assert string_subscripts('d["a"]["b"]; d["c"] = 1; ["x", "y"]; d[0]; d[k]; d.get("e"); x: Literal["m"]') == 3


def test_subscripts_of_the_result_dicts_do_not_grow():
    count = sum(string_subscripts(p.read_text(encoding="utf-8")) for p in (ROOT / "python" / "gcbench").rglob("*.py"))
    assert count <= SUBSCRIPT_LIMIT, f'{count} `["key"]` subscripts in the package, more than {SUBSCRIPT_LIMIT}'


def test_no_bare_class_var_annotation():
    """`X: ClassVar = ...` reads on Python 3.11 and later, but 3.10's typing (which msgspec
    and dataclasses call to read a record's fields) refuses a bare ClassVar: every
    ClassVar names its type."""
    bare = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in (ROOT / "python" / "gcbench").rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.AnnAssign) and isinstance(node.annotation, ast.Name)
            and node.annotation.id == "ClassVar"]
    assert bare == []
