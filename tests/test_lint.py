"""Lint and types, as CI sees them: ruff with the rule set in pyproject.toml (pycodestyle,
pyflakes, bugbear; 120 columns) over the package, the tests, the benchmarks and setup.py, and mypy
over the modules pyproject.toml lists."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

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
    for tool in ("ruff", "mypy"):
        pinned = re.search(rf'"{tool}==([0-9.]+)"', text)
        assert pinned, f"{tool} is not pinned in pyproject's test extra"
        try:
            installed = importlib.metadata.version(tool)
        except importlib.metadata.PackageNotFoundError:
            continue
        assert installed == pinned.group(1), (tool, installed, pinned.group(1))
