"""`gcbench compare A B`: per cell present in both folders, how B differs from A."""

from __future__ import annotations

from . import results, stats

ALPHA = 0.05


def _key(doc: dict) -> tuple:
    return doc["backend"], doc["workload"], doc["gc_policy"], doc["repeat"]


def compare_dirs(dir_a, dir_b) -> tuple[list[dict], list[str]]:
    """Rows of differences for cells ok in both, and notes on cells that could not be compared."""
    a = {_key(d): d for d in results.load_dir(dir_a)}
    b = {_key(d): d for d in results.load_dir(dir_b)}
    rows, notes = [], []
    for key in [k for k in a if k in b]:
        da, db = a[key], b[key]
        label = results.label(da)
        if da["status"] != "ok" or db["status"] != "ok":
            notes.append(f"{label}: not compared ({da['status']} in A, {db['status']} in B)")
            continue
        sa, sb = stats.summary(da), stats.summary(db)
        _, p = stats.mann_whitney(da["wall_ns"], db["wall_ns"])
        rows.append({
            "cell": label,
            "median_a": sa["median_ms"], "median_b": sb["median_ms"],
            "median_change": sb["median_ms"] / sa["median_ms"] - 1,
            "p99_change": sb["p99_ms"] / sa["p99_ms"] - 1,
            "maxmed_a": sa["max_over_median"], "maxmed_b": sb["max_over_median"],
            "gc_a": sa["gc_share"], "gc_b": sb["gc_share"],
            "p_value": p, "significant": p < ALPHA,
        })
    for key in a.keys() ^ b.keys():
        notes.append(f"{results.label((a if key in a else b)[key])}: only in {'A' if key in a else 'B'}")
    return rows, notes


def format_comparison(rows: list[dict], notes: list[str]) -> str:
    head = (f"{'cell':<36} {'median A ms':>11} {'median B ms':>11} {'change':>8} {'p99 chg':>8} "
            f"{'max/med A->B':>13} {'GC % A->B':>13}  significance")
    lines = [head, "-" * len(head)]
    for r in rows:
        verdict = (f"{'slower' if r['median_change'] > 0 else 'faster'} (p={r['p_value']:.2g})"
                   if r["significant"] else f"not significant (p={r['p_value']:.2g})")
        lines.append(
            f"{r['cell']:<36} {r['median_a']:>11.3f} {r['median_b']:>11.3f} {100 * r['median_change']:>+7.1f}% "
            f"{100 * r['p99_change']:>+7.1f}% {r['maxmed_a']:>6.1f}->{r['maxmed_b']:<6.1f} "
            f"{100 * r['gc_a']:>5.2f}->{100 * r['gc_b']:<6.2f}  {verdict}")
    if not rows:
        lines.append("(no cell ran ok in both folders)")
    lines += notes
    return "\n".join(lines)
