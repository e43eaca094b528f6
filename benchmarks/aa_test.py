"""A real A/A test of `gcbench compare` on this machine: the same cells run twice, one
folder after the other, then compared; and a folder compared with itself. Prints both
comparisons' verdicts and counts. At alpha 0.05 no cell should be called faster or slower.

    python benchmarks/aa_test.py [--backends jax,equinox-filter] [--workloads mlp,lenet5] [--steps 100]
                                 [--repeats 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import subprocess
import sys
import tempfile

from gcbench.analysing import comparison
from gcbench.measuring import results
from gcbench.publishing import comparison_text


def run(out: pathlib.Path, args) -> None:
    cmd = [sys.executable, "-m", "gcbench", "run", "--backends", args.backends, "--workloads", args.workloads,
           "--gc", args.gc, "--steps", str(args.steps), "--repeats", str(args.repeats), "--out", str(out),
           "--no-progress"]
    print("$", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def report(title: str, c: comparison.Comparison) -> collections.Counter:
    print(f"\n{title}")
    print(comparison_text.format_comparison(c))
    counts = collections.Counter(r.verdict for r in c.rows)
    print("verdicts (median step):", dict(counts))
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="jax,jax-vmap,equinox-filter,equinox-partition,nnx-split")
    ap.add_argument("--workloads", default="mlp,lenet5")
    ap.add_argument("--gc", default="default")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="keep the two results folders here (default: a temporary folder)")
    args = ap.parse_args()
    root = pathlib.Path(args.out or tempfile.mkdtemp(prefix="gcbench-aa-"))
    a, b = root / "a", root / "b"
    for folder in (a, b):
        run(folder, args)
    da, db = results.load_dir(a), results.load_dir(b)
    self_counts = report("A against itself:", comparison.compare_docs(da, da))
    aa_counts = report("A against B (identical settings, run one after the other):", comparison.compare_docs(da, db))
    called = sum(aa_counts[v] for v in ("faster", "slower")) + sum(self_counts[v] for v in ("faster", "slower"))
    print(f"\ncells called faster or slower: {called} (of {sum(aa_counts.values())} A/B pairs and "
          f"{sum(self_counts.values())} self-pairs); results in {root}")


if __name__ == "__main__":
    main()
