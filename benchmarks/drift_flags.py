"""The drift flag on every committed repeat, and the noise it is calibrated on.

For each ok repeat of every committed report's raw results: its Hurst exponent (from the
variance of block means of its log step times at block sizes 1 to 32, steps with a
collection left out), whether `stats.drift` flags it, and by how much its last third
differs from its first. Prints the flag rate per report and over all, the median Hurst
exponent, and the flagged repeats with their change and p-value; with --null, the false
flag rate of `stats.drift` on simulated long-memory series (fractional Gaussian noise at
the measured Hurst exponent and spread), beside the rate on AR(1) series; with --inject,
its real power: drifts injected into the committed repeats it does not flag (a level step
of 20 % and 40 % at the middle of the repeat, and a ramp to 20 % and 40 % by its end), the
share of them flagged, over all and by the repeat's length.

    python benchmarks/drift_flags.py [--null 4000] [--inject]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

from gcbench.analysing import stats, summary
from gcbench.measuring import results
from gcbench.publishing import archive

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import committed  # noqa: E402


def hurst(log_steps: np.ndarray) -> float | None:
    """Aggregated-variance estimate: Var(mean of m steps) ~ m^(2H - 2)."""
    x = log_steps - log_steps.mean()
    sizes = [m for m in (1, 2, 4, 8, 16, 32) if len(x) // m >= 8]
    if len(sizes) < 3:
        return None
    v = [np.var(x[: len(x) // m * m].reshape(-1, m).mean(axis=1), ddof=1) for m in sizes]
    if min(v) <= 0:
        return None
    slope = np.polyfit(np.log(sizes), np.log(v), 1)[0]
    return float(min(max(1 + slope / 2, 0.0), 1.0))


def committed_repeats():
    for rep in committed.reports(archive.NAME):  # the published ones, never a user's own
        with archive.opened(rep) as folder:
            for d in results.load_dir(folder, allow_empty=True):
                if d.status == "ok" and len(d.wall_ns) >= 60:
                    yield rep.name, d


DRIFTS = {"level step +20 %": ("step", 0.20), "level step +40 %": ("step", 0.40),
          "ramp to +20 %": ("ramp", 0.20), "ramp to +40 %": ("ramp", 0.40)}


def injected(wall: np.ndarray, kind: str, size: float) -> np.ndarray:
    """The repeat with a drift added: its second half `size` slower (a step), or slower
    steadily from nothing to `size` at its end (a ramp)."""
    n = len(wall)
    factor = np.where(np.arange(n) >= n // 2, 1 + size, 1.0) if kind == "step" else 1 + size * np.arange(n) / (n - 1)
    return wall * factor


def inject(repeats: list) -> dict:
    """The drift flag's detection of each drift in DRIFTS, injected into the committed
    repeats it does not flag as they are; printed over all and by length, and returned."""
    steady = [np.asarray(d.wall_ns, np.float64) for _, d in repeats if stats.drift(d.wall_ns) is None]
    out = {}
    print(f"\ndrifts injected into the {len(steady)} committed repeats the flag leaves alone:")
    for label, (kind, size) in DRIFTS.items():
        hits = np.array([stats.drift(injected(w, kind, size)) is not None for w in steady])
        lengths = np.array([len(w) for w in steady])
        short, long = hits[lengths <= 150], hits[lengths > 150]
        out[label] = {"all": float(hits.mean()), "150 steps or fewer": float(short.mean()) if len(short) else None,
                      "more than 150 steps": float(long.mean()) if len(long) else None, "repeats": len(hits)}
        print(f"  {label:18} flagged {100 * hits.mean():5.1f} % (repeats of 150 steps or fewer "
              f"{100 * short.mean():.1f} % of {len(short)}, longer {100 * long.mean():.1f} % of {len(long)})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--null", type=int, default=0, help="simulated series per null model (0: none)")
    ap.add_argument("--inject", action="store_true", help="inject drifts into the committed repeats: the flag's power")
    args = ap.parse_args()
    per_report: dict[str, list[int]] = {}
    hs, spreads, flagged = [], [], []
    for name, d in committed_repeats():
        wall = np.asarray(d.wall_ns, np.float64)
        quiet = np.asarray(d.gc_ns) == 0
        x = np.log(np.maximum(wall[quiet], 1.0))
        h = hurst(x)
        if h is not None:
            hs.append(h)
            spreads.append(float(np.std(x)))
        f = stats.drift(wall)
        per_report.setdefault(name, [0, 0])
        per_report[name][0] += f is not None
        per_report[name][1] += 1
        if f is not None:
            flagged.append((name, summary.cell_label(summary.cell_key(d)), d.repeat, f.change, f.p))
    total = sum(v[1] for v in per_report.values())
    n_flag = sum(v[0] for v in per_report.values())
    print(f"{'report':<34} flagged / repeats")
    for name, (k, n) in per_report.items():
        print(f"{name:<34} {k:>3} / {n:<4} ({100 * k / n:.1f} %)")
    print(f"{'all':<34} {n_flag:>3} / {total:<4} ({100 * n_flag / total:.1f} %)")
    print(
        f"Hurst exponent of the step series (steps without a collection): median {np.median(hs):.2f}, "
        f"quartiles {np.percentile(hs, 25):.2f}-{np.percentile(hs, 75):.2f}; log spread median {np.median(spreads):.3f}"
    )
    for name, label, repeat, change, p in sorted(flagged, key=lambda r: r[4])[:40]:
        print(f"  {name}: {label} r{repeat}: {100 * change:+.0f} % (p = {p:.1g})")
    if args.inject:
        inject(list(committed_repeats()))
    if args.null:
        from simulate import ar1, fgn

        rng = np.random.default_rng(1)
        h, sd = float(np.median(hs)), float(np.median(spreads))
        for label, series in ((f"fractional Gaussian noise, H = {h:.2f}", fgn(rng, 150, h, sd, args.null)),
                              ("fractional Gaussian noise, H = 0.90", fgn(rng, 150, 0.90, sd, args.null)),
                              ("AR(1), lag-1 0.65", ar1(rng, 150, 0.65, sd, args.null))):
            rate = np.mean([stats.drift(1e7 * np.exp(s)) is not None for s in series])
            print(f"false flags, {label}, spread {sd:.3f}, 150 steps: {100 * rate:.2f} % of {args.null:,} "
                  f"(nominal {100 * stats.DRIFT_P:g} %)")


if __name__ == "__main__":
    main()
