"""The noise the inference tests simulate, measured on the committed raw results.

For each report under reports/ (its results.tar.gz): the spread between repeats of the
per-repeat log median (pooled over the cells), the median lag-1 autocorrelation of the
log step times inside a repeat, how much of the spread a round shares across cells
(the drift between rounds that pairing by round cancels), the spread of a difference
of two cells paired by round against unpaired, and how many cells with full
collections had the same count (and the same steps) in every repeat.

    python benchmarks/noise.py [reports/NAME ...]
"""

from __future__ import annotations

import itertools
import pathlib
import sys

import numpy as np

from gcbench.analysing import stats, summary
from gcbench.measuring import results
from gcbench.publishing import archive

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import committed


def measure(folder: pathlib.Path) -> dict:
    docs = [d for d in results.load_dir(folder) if d.status == "ok"]
    cells = summary.cells(docs)
    ss = df = 0.0
    lag1, paired, unpaired = [], [], []
    fixed = same = varies = 0
    logs = {}
    for key, group in cells.items():
        x = np.log([np.median(d.wall_ns) for d in group])
        lag1 += [stats.lag1(np.log(d.wall_ns)) for d in group]
        if len(x) >= 2:
            ss += float(((x - x.mean()) ** 2).sum())
            df += len(x) - 1
            logs[key] = {d.repeat: v for d, v in zip(group, x, strict=True)}
        sched = stats.schedule([summary.full_collections(d) for d in group])
        if sched.total and sched.repeats >= 2:
            fixed += sched.constant
            same += sched.same_steps
            varies += not sched.constant
    for a, b in itertools.combinations(logs, 2):
        if a[1] != b[1] or set(logs[a]) != set(logs[b]) or len(logs[a]) < 3:
            continue
        ra = np.array([logs[a][r] for r in sorted(logs[a])])
        rb = np.array([logs[b][r] for r in sorted(logs[b])])
        paired.append(np.var(ra - rb, ddof=1))
        unpaired.append(np.var(ra, ddof=1) + np.var(rb, ddof=1))
    return {"cells": len(cells), "spread": np.sqrt(ss / df) if df else float("nan"),
            "lag1": float(np.median(lag1)) if lag1 else float("nan"),
            "paired": float(np.sqrt(np.mean(paired))) if paired else float("nan"),
            "unpaired": float(np.sqrt(np.mean(unpaired))) if unpaired else float("nan"),
            "fixed": fixed, "same_steps": same, "varies": varies}


def main(argv: list[str]) -> None:
    reports = [pathlib.Path(p) for p in argv] or committed.reports("results.tar.gz")
    print(
        f"{'report':<26} {'cells':>5} {'spread':>7} {'lag-1':>6} {'diff paired':>11} {'unpaired':>8}  "
        "full collections per repeat"
    )
    for report in reports:
        with archive.opened(report) as folder:
            m = measure(folder)
        print(
            f"{report.name:<26} {m['cells']:>5} {100 * m['spread']:>6.1f}% {m['lag1']:>6.2f} "
            f"{100 * m['paired']:>10.1f}% "
            f"{100 * m['unpaired']:>7.1f}%  fixed in {m['fixed']} cells (same steps in {m['same_steps']}), "
            f"varying in {m['varies']}"
        )

if __name__ == "__main__":
    main(sys.argv[1:])
