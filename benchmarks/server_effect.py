"""Do repeats forked from one worker server share more than fresh interpreters do?

Repeats forked from one server share its memory layout and hash seed; fresh interpreters
each draw their own. If that moved step times, the repeats of one server would agree
more among themselves than with another server's: a between-server component of the
variance, which the repeats' spread (what gcbench's intervals are made from) would not
hold. This runs G groups of n repeats of one cell each way, alternated: a group is one
server's forked repeats, or n fresh interpreters run back to back (their between-group
component is what the machine's drift alone makes). For each way it prints the
within-group and between-group standard deviations of the repeats' median step (one-way
random-effects ANOVA, as % of the mean) and the F test of a group effect.

    python benchmarks/server_effect.py [--backend equinox-filter] [--groups 4] [--per-group 4] [--save]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

import numpy as np
from scipy import stats

SAVED = pathlib.Path(__file__).resolve().parent / "measured" / "server_effect.json"


def components(groups: list[list[float]]) -> dict:
    """One-way random-effects ANOVA of equal-sized groups: within and between standard
    deviations (as % of the grand mean), F and its p-value."""
    data = np.asarray(groups, dtype=float)
    k, n = data.shape
    grand = data.mean()
    msb = n * ((data.mean(axis=1) - grand) ** 2).sum() / (k - 1)
    msw = ((data - data.mean(axis=1, keepdims=True)) ** 2).sum() / (k * (n - 1))
    between = max(0.0, (msb - msw) / n)
    f = msb / msw if msw > 0 else float("inf")
    return {"within_sd_percent": round(100 * np.sqrt(msw) / grand, 2),
            "between_sd_percent": round(100 * np.sqrt(between) / grand, 2),
            "f": round(float(f), 3), "p": float(stats.f.sf(f, k - 1, k * (n - 1))),
            "df": [k - 1, k * (n - 1)]}


def main() -> int:
    from gcbench.measuring.cell import Cell
    from gcbench.running import runner, warm_workers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="equinox-filter")
    ap.add_argument("--workload", default="vit")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--per-group", type=int, default=4)
    ap.add_argument("--save", action="store_true", help=f"write {SAVED.name} into benchmarks/measured")
    a = ap.parse_args()
    if a.groups < 3 or a.per_group < 2:
        ap.error("at least 3 groups of 2 repeats: no F test from fewer")
    cell = Cell(a.backend, a.workload, "default", 0, 1, 0, a.steps, 3, 0, 10, batch_size=a.batch_size)
    medians: dict[str, list[list[float]]] = {"fresh": [], "forked": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        cache = runner.compile_cache_env(str(folder / "cache"))

        def repeat(name: str, fork=None) -> float:
            doc = runner.run_worker(cell, folder / f"{name}.json", ["benchmark"], 900, None, extra_env=cache,
                                    fork=fork)
            return float(np.median(doc.wall_ns)) / 1e6

        repeat("compile")  # the first repeat fills the compilation cache: left out
        for g in range(a.groups):
            for way in (("fresh", "forked") if g % 2 == 0 else ("forked", "fresh")):
                if way == "fresh":
                    group = [repeat(f"fresh{g}-{i}") for i in range(a.per_group)]
                else:
                    with warm_workers.ServerPool() as pool:  # a new server: its own layout and hash seed
                        group = [repeat(f"forked{g}-{i}", lambda *x: pool.spawn(a.backend, *x))
                                 for i in range(a.per_group)]
                medians[way].append(group)
                print(f"group {g + 1}, {way}: median steps {', '.join(f'{m:.2f}' for m in group)} ms", flush=True)
    result = {way: components(groups) for way, groups in medians.items()}
    for way, c in result.items():
        print(f"{way}: within groups {c['within_sd_percent']:.2f} %, between groups {c['between_sd_percent']:.2f} % "
              f"of the mean step (F({c['df'][0]}, {c['df'][1]}) = {c['f']:.2f}, p = {c['p']:.3f})")
    if a.save:
        SAVED.write_text(json.dumps({"settings": vars(a) | {"save": None}, "components": result,
                                     "median_ms": medians}, indent=1) + "\n")
        print(f"wrote {SAVED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
