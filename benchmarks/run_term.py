"""The run-to-run term: how far the level of a whole run (one `gcbench run`) moves on this
machine, beyond what its repeats explain, measured from separate runs of the same cells.

`--runs N` runs the same small cells (jax and equinox-filter on mlp, default policy, 3
repeats of 300 steps) N times, each a separate invocation, `--every` minutes apart (runs
back to back share the machine's state of the moment, and understate the term), waiting
for a quiet machine before each, and keeps each run's raw results as
`benchmarks/run_term/runK.tar.gz` (the archive a report carries). Without `--runs`, it only
estimates from the runs kept. Repeats that ran loaded are left out of the estimate; runs
made within `--apart` minutes of the one before are left out too (the first 6 runs kept
were made within 11 minutes).

The estimate (`stats.run_term`): per cell, the spread of the runs' mean log medians beyond
what the spread of repeats inside a run explains (one-way random effects, pooled over the
cells), with a 95 % interval from the chi-square distribution of the between-run mean
square (Satterthwaite's degrees of freedom for the difference). compare widens every
time test of two runs apart by it (`compare.RUN_SD`, checked against these runs by
tests/test_compare.py), and prints detectable changes that include it.

    python benchmarks/run_term.py [--runs 6]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

from gcbench.analysing import compare, stats, summary
from gcbench.measuring import results
from gcbench.publishing import archive

HERE = pathlib.Path(__file__).resolve().parent / "run_term"
CELLS = ["--backends", "jax,equinox-filter", "--workloads", "mlp", "--gc", "default", "--repeats", "3",
         "--steps", "300"]


def run_once(target: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "run"
        subprocess.run([sys.executable, "-m", "gcbench", "run", *CELLS, "--out", str(out), "--no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
        archive.pack(out, target)


def started(docs: list) -> float:
    """When a run's first repeat started, in seconds since the epoch (0 where unknown)."""
    import datetime

    times = []
    for d in docs:
        stamp = (d.get("metadata") or {}).get("date")
        if isinstance(stamp, str):
            try:
                times.append(datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
            except ValueError:
                pass
    return min(times) if times else 0.0


def levels(folder: pathlib.Path = HERE, apart_minutes: float = 0.0) -> tuple[dict, list[str]]:
    """{(cell, machine kind): [[log median per quiet repeat] per run]} from the kept runs made
    at least `apart_minutes` after the previous run of that kind used, and a line per run
    naming its machine, its load and whether it was used. A run's level is its own machine's:
    runs of two kinds of machine are two groups, whose terms are pooled."""
    cells: dict = collections.defaultdict(list)
    notes = []
    last: dict[str, float] = collections.defaultdict(lambda: -math.inf)
    for path in sorted(folder.glob("run*.tar.gz"), key=lambda p: int(p.name[3:].split(".")[0])):
        with archive.opened(path) as f:
            docs = [d for d in results.load_dir(f) if d["status"] == "ok"]
        when = started(docs)
        kind = (docs[0].get("metadata") or {}).get("cpu", "?") if docs else "?"
        quiet = [d for d in docs if not summary.repeat_load(d)]
        used = when - last[kind] >= 60 * apart_minutes and len(quiet) >= 4
        by_cell = collections.defaultdict(list)
        for d in quiet:
            by_cell[(summary.cell_label(summary.cell_key(d)), kind)].append(
                math.log(float(np.median(d["wall_ns"])) / 1e6))
        if used and len(by_cell) == 2 and all(len(x) >= 2 for x in by_cell.values()):
            for cell, x in by_cell.items():
                cells[cell].append(x)
            last[kind] = when
        else:
            used = False
        stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(when)) if when else "time unknown"
        notes.append(f"{path.name} ({kind}, {stamp} UTC): {len(docs)} repeats, {len(quiet)} quiet, "
                     f"{summary.describe_load(docs) or 'unloaded'}{'' if used else '; not used'}")
    return dict(cells), notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=0, help="runs to add (each about 2.5 minutes)")
    ap.add_argument("--every", type=float, default=30.0, help="minutes from one added run's start to the next's")
    ap.add_argument("--apart", type=float, default=20.0,
                    help="minutes a kept run must start after the previous one used, to be used")
    a = ap.parse_args()
    HERE.mkdir(exist_ok=True)
    have = len(list(HERE.glob("run*.tar.gz")))
    from gcbench.core import machineload
    import os

    next_start = time.time()
    for k in range(have, have + a.runs):
        time.sleep(max(0.0, next_start - time.time()))
        while (machineload.now(os.cpu_count(), 2.0) or {}).get("others_cores", 0) > 0.3:  # wait for quiet
            time.sleep(60)
        next_start = time.time() + 60 * a.every
        print(f"run {k + 1} of {have + a.runs} at {time.strftime('%H:%M')} ...", flush=True)
        run_once(HERE / f"run{k}.tar.gz")
    cells, notes = levels(apart_minutes=a.apart)
    print("\n".join(notes))
    est = stats.run_term(list(cells.values()))
    print(f"\n{len(cells)} cells in {est['runs']} separate runs, {est['repeats']} repeats each")
    print(f"spread between repeats inside a run: {100 * est['within_sd']:.1f} %")
    print(f"run-to-run term (a run's own level, per cell): {100 * est['run_sd']:.1f} % "
          f"(95 % {100 * est['low']:.1f}-{100 * est['high']:.1f} %); compare.RUN_SD = {100 * compare.RUN_SD:.1f} %")
    for n in (3, 6, 10):
        d = stats.detectable_change(est["within_sd"], n, n, compare.ALPHA, run_sd=est["run_sd"])
        print(f"two runs apart, {n} repeats a side: smallest detectable change of a median "
              f"{'none below 100x' if d is None else f'{100 * d:.0f} %'}")
    (HERE / "estimate.json").write_text(json.dumps({k: round(v, 5) if isinstance(v, float) else v
                                                    for k, v in est.items()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
