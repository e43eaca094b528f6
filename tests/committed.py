"""The reports this repository publishes, by name: what tests and benchmarks that read the
committed reports read, never a user's own runs (README's first look writes
reports/quick-<date> beside them). test_committed_reports.py holds the list to what git
tracks."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PUBLISHED = ("cpu-2core-default", "cpu-quick", "cpu-vit", "cpu-vit-bisect-equinox", "cpu-vit-bisect-equinox-commits",
             "cpu-vit-env-matrix", "gpu-h100", "reproductions")


def reports(holding: str = "index.md") -> list[pathlib.Path]:
    """The published report folders that hold `holding` (index.md, results.tar.gz, ...)."""
    return [ROOT / "reports" / name for name in PUBLISHED if (ROOT / "reports" / name / holding).is_file()]
