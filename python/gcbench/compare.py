"""`gcbench compare A B`: per cell, whether B differs from A, and by how much.

Repeats (fresh processes) are the unit: each cell's repeats give per-repeat medians,
GC shares and full-collection counts, and those are what is tested:

- median step: Student's pooled t test on the logarithms of the per-repeat medians (the
  spread between processes is the machine's); the effect is the ratio of their
  geometric means, B / A;
- GC share: the same t test on the per-repeat shares; the effect is the difference in
  percentage points;
- full collections: an exact conditional (binomial) test of two Poisson rates, the
  counts pooled over the repeats; the effect is the ratio of the rates.

All tests of one comparison are corrected together (Holm), so that at level alpha the
chance of calling *any* identical cell different stays below alpha. A verdict needs a
minimum effect as well: `faster`/`slower` (or more/less, fewer/more) when the corrected
test rejects and the effect is at least `min_effect`; `same` when the (1 - 2 alpha)
interval of the effect lies within +-min_effect (an equivalence test); `inconclusive`
otherwise. Pairs whose settings differ (networks, steps, batch, data, machine) are
refused unless forced.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats as sst

from . import metadata, results, stats, summary
from .errors import UsageError

ALPHA = 0.05
MIN_EFFECT = 0.05
GC_SHARE_FLOOR = 0.001  # 0.1 percentage point: GC shares closer than this are the same
SETTINGS = (("networks", lambda d: d["networks"]), ("steps", lambda d: len(d["wall_ns"]) if d["status"] == "ok" else None),
            ("batch", results.batch_size), ("bookkeeping", lambda d: d.get("bookkeeping", "none")),
            ("data", lambda d: d["data"].get("kind")),
            ("machine", lambda d: metadata.machine_identity(d.get("metadata") or {})))
VERDICTS = {"median": ("faster", "slower"), "gc_share": ("less GC", "more GC"),
            "full_rate": ("fewer full GCs", "more full GCs")}


@dataclasses.dataclass
class Test:
    metric: str
    a: float | None
    b: float | None
    effect: float | None  # ratio (median, full_rate) or difference (gc_share)
    ci: tuple[float, float] | None  # (1 - alpha) interval of the effect
    eq_ci: tuple[float, float] | None  # (1 - 2 alpha) interval, for the equivalence test
    p: float | None
    margin: float  # half-width of "the same" around no effect (in the effect's unit)
    note: str = ""
    exact: bool = False  # nothing random to test (none on either side): "same", and not counted in Holm
    p_adj: float | None = None
    verdict: str = "inconclusive"

    @property
    def ratio_metric(self) -> bool:
        return self.metric != "gc_share"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _t_test(a: np.ndarray, b: np.ndarray, alpha: float) -> tuple[float, tuple, tuple]:
    """p, (1 - alpha) and (1 - 2 alpha) intervals of mean(b) - mean(a), by Student's pooled
    t test: the spread between processes is the machine's, the same on both sides, and a
    pooled estimate keeps its degrees of freedom when a flagged repeat leaves one side
    with two (Welch's test would fall to about one degree of freedom there)."""
    diff = float(b.mean() - a.mean())
    na, nb = len(a), len(b)
    pooled = ((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / (na + nb - 2)
    se, df = math.sqrt(pooled * (1 / na + 1 / nb)), na + nb - 2
    if se == 0:  # no spread at all on either side: the difference is exact
        return (1.0 if diff == 0 else 0.0), (diff, diff), (diff, diff)
    p = float(2 * sst.t.sf(abs(diff / se), df))
    q1, q2 = sst.t.ppf(1 - alpha / 2, df), sst.t.ppf(1 - alpha, df)
    return p, (diff - q1 * se, diff + q1 * se), (diff - q2 * se, diff + q2 * se)


def test_median(med_a: list[float], med_b: list[float], min_effect: float, alpha: float) -> Test:
    a, b = np.log(med_a), np.log(med_b)
    ga, gb = float(np.exp(a.mean())), float(np.exp(b.mean()))
    margin = min_effect
    if len(a) < 2 or len(b) < 2:
        return Test("median", ga, gb, gb / ga, None, None, None, margin, "needs 2 or more repeats on each side")
    p, ci, eq = _t_test(a, b, alpha)
    ex = lambda iv: (math.exp(iv[0]), math.exp(iv[1]))
    return Test("median", ga, gb, gb / ga, ex(ci), ex(eq), p, margin)


def test_gc_share(sh_a: list[float], sh_b: list[float], min_effect: float, alpha: float) -> Test:
    a, b = np.asarray(sh_a), np.asarray(sh_b)
    ma, mb = float(a.mean()), float(b.mean())
    margin = max(min_effect * max(ma, mb), GC_SHARE_FLOOR)
    if not a.any() and not b.any():
        return Test("gc_share", 0.0, 0.0, 0.0, (0.0, 0.0), (0.0, 0.0), None, margin, "no GC time on either side", True)
    if len(a) < 2 or len(b) < 2:
        return Test("gc_share", ma, mb, mb - ma, None, None, None, margin, "needs 2 or more repeats on each side")
    p, ci, eq = _t_test(a, b, alpha)
    return Test("gc_share", ma, mb, mb - ma, ci, eq, p, margin)


def test_rate(ka: int, na: int, kb: int, nb: int, min_effect: float, alpha: float) -> Test:
    """Full collections per 1,000 steps, A against B (pooled counts, exact test)."""
    ra, rb = 1000 * ka / na, 1000 * kb / nb
    margin = min_effect
    if ka == 0 and kb == 0:
        return Test("full_rate", 0.0, 0.0, 1.0, (1.0, 1.0), (1.0, 1.0), None, margin, "none on either side", True)
    share = nb / (na + nb)
    res = sst.binomtest(kb, ka + kb, share)

    def ratio_ci(level):
        ci = res.proportion_ci(level, method="exact")
        conv = lambda pi: math.inf if pi >= 1 else pi / (1 - pi) * na / nb
        return conv(ci.low), conv(ci.high)

    effect = rb / ra if ra > 0 else math.inf
    note = f"{ka} in {na:,} steps against {kb} in {nb:,}"
    return Test("full_rate", ra, rb, effect, ratio_ci(1 - alpha), ratio_ci(1 - 2 * alpha), float(res.pvalue), margin,
                note)


def cell_tests(va: dict, vb: dict, min_effect: float, alpha: float) -> list[Test]:
    """The three repeat-level tests of cell A against cell B (their `repeat_values`): median
    step, GC share and full-collection rate, in that order."""
    return [test_median(va["medians"], vb["medians"], min_effect, alpha),
            test_gc_share(va["shares"], vb["shares"], min_effect, alpha),
            test_rate(va["full"], va["steps"], vb["full"], vb["steps"], min_effect, alpha)]


def conclude(tests: list[Test], alpha: float) -> None:
    """Correct the tests that have a p-value together (Holm), then give every test its verdict."""
    testable = [t for t in tests if t.p is not None]
    for t, p in zip(testable, holm([t.p for t in testable])):
        t.p_adj = p
    for t in tests:
        t.verdict = decide(t, alpha)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adj = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adj[i] = running
    return adj


def decide(t: Test, alpha: float) -> str:
    lower, higher = VERDICTS[t.metric]
    if t.exact:
        return "same"
    if t.p is None:
        return "inconclusive"
    if t.ratio_metric:  # effects are ratios: 0 (none left) and inf (from none) are beyond any margin
        e = t.effect
        beyond = e in (0, math.inf) or abs(math.log(e)) >= math.log1p(t.margin)
        inside = t.eq_ci is not None and t.eq_ci[0] >= 1 / (1 + t.margin) and t.eq_ci[1] <= 1 + t.margin
        up = e > 1
    else:
        beyond = abs(t.effect) >= t.margin
        inside = t.eq_ci is not None and -t.margin <= t.eq_ci[0] and t.eq_ci[1] <= t.margin
        up = t.effect > 0
    if t.p_adj is not None and t.p_adj < alpha and beyond:
        return higher if up else lower
    if inside:
        return "same"
    return "inconclusive"


def repeat_values(docs: list[dict]) -> dict:
    """What compare tests, from the ok repeats of one cell (flagged repeats left out)."""
    ok = [d for d in docs if d["status"] == "ok"]
    used, flags = summary.used_repeats(ok)
    walls = [np.asarray(d["wall_ns"], np.float64) for d in used]
    return {"medians": [float(np.median(w)) / 1e6 for w in walls],
            "shares": [float(np.sum(d["gc_ns"]) / w.sum()) for d, w in zip(used, walls)],
            "full": int(sum(int((summary.full_collections(d) > 0).sum()) for d in used)),
            "steps": int(sum(len(w) for w in walls)),
            "repeats": len(used), "flagged": sum(1 for f in flags.values() if f)}


def settings_differ(docs_a: list[dict], docs_b: list[dict]) -> list[str]:
    """The settings two cells differ in, as 'networks 200 in A, 50 in B'."""
    out = []
    for name, get in SETTINGS:
        va = {json_key(get(d)) for d in docs_a if d["status"] == "ok"}
        vb = {json_key(get(d)) for d in docs_b if d["status"] == "ok"}
        if va and vb and va != vb:
            out.append(f"{name} {', '.join(sorted(va))} in A, {', '.join(sorted(vb))} in B")
    return out


def json_key(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items() if v is not None) or "?"
    return str(value)


def pair_cells(a: dict, b: dict) -> tuple[list[tuple[tuple, tuple]], list[str]]:
    """Pairs of cell keys (A's, B's) and notes. Cells pair by backend, workload, policy and
    environment; when no environment is shared but each side has one per cell, the cells
    pair across the environments (the question is then what the environment changed)."""
    pairs = [(k, k) for k in a if k in b]
    notes = []
    if not pairs:
        strip = lambda keys: {k[:3]: k for k in keys}
        sa, sb = strip(a), strip(b)
        if len(sa) == len(a) and len(sb) == len(b) and set(sa) & set(sb):
            pairs = [(sa[k], sb[k]) for k in sa if k in sb]
            envs_a = sorted({k[3] or "(own interpreter)" for k, _ in pairs})
            envs_b = sorted({k[3] or "(own interpreter)" for _, k in pairs})
            notes.append(f"no environment is in both folders: cells paired across environments "
                         f"({', '.join(envs_a)} in A against {', '.join(envs_b)} in B)")
    paired_a, paired_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    notes += [f"{summary.cell_label(k)}: only in A" for k in a if k not in paired_a]
    notes += [f"{summary.cell_label(k)}: only in B" for k in b if k not in paired_b]
    return pairs, notes


def compare_docs(docs_a: list[dict], docs_b: list[dict], min_effect: float = MIN_EFFECT, alpha: float = ALPHA,
                 force: bool = False) -> dict:
    """The comparison of two sets of result documents (see the module docstring)."""
    if not 0 < alpha < 0.5:
        raise UsageError(f"alpha must be between 0 and 0.5, got {alpha:g}")
    if not (math.isfinite(min_effect) and 0 <= min_effect < 1):
        raise UsageError(f"--min-effect must be a fraction from 0 to 1 (0.05 is 5 %), got {min_effect:g}")
    a, b = summary.cells(docs_a), summary.cells(docs_b)
    pairs, notes = pair_cells(a, b)
    rows, refused = [], []
    for ka, kb in pairs:
        label = summary.cell_label(ka) if ka == kb else f"{summary.cell_label(ka)} vs [{kb[3] or 'own'}]"
        da, db = a[ka], b[kb]
        sa = {d["status"] for d in da}
        sb = {d["status"] for d in db}
        if "ok" not in sa or "ok" not in sb:
            notes.append(f"{label}: not compared ({'/'.join(sorted(sa))} in A, {'/'.join(sorted(sb))} in B)")
            continue
        differ = settings_differ(da, db)
        if differ and not force:
            refused.append(f"{label}: {'; '.join(differ)}")
            continue
        va, vb = repeat_values(da), repeat_values(db)
        tests = cell_tests(va, vb, min_effect, alpha)
        rows.append({"cell": label, "key_a": list(ka), "key_b": list(kb), "repeats": [va["repeats"], vb["repeats"]],
                     "flagged": [va["flagged"], vb["flagged"]], "forced": differ, "tests": tests})
    tests = [t for r in rows for t in r["tests"]]
    conclude(tests, alpha)
    for r in rows:
        r["verdict"] = r["tests"][0].verdict
    return {"alpha": alpha, "min_effect": min_effect, "tests": sum(t.p is not None for t in tests), "rows": rows,
            "refused": refused, "notes": notes}


def compare_dirs(dir_a, dir_b, min_effect: float = MIN_EFFECT, alpha: float = ALPHA, force: bool = False) -> dict:
    out = compare_docs(results.load_dir(dir_a), results.load_dir(dir_b), min_effect, alpha, force)
    out.update(a=str(dir_a), b=str(dir_b))
    return out


def to_json(comparison: dict) -> dict:
    return {**comparison, "rows": [{**r, "tests": [t.to_json() for t in r["tests"]]} for r in comparison["rows"]]}


def _change(t: Test) -> str:
    if t.effect is None:
        return "-"
    if t.metric == "gc_share":
        text = f"{100 * t.effect:+.2f} pp"
        return text + (f" ({100 * t.ci[0]:+.2f}..{100 * t.ci[1]:+.2f})" if t.ci and t.ci != (0.0, 0.0) else "")
    if t.effect == math.inf:
        return "from none"
    text = f"{100 * (t.effect - 1):+.1f} %"
    if t.ci and t.ci != (1.0, 1.0):
        hi = "inf" if t.ci[1] == math.inf else f"{100 * (t.ci[1] - 1):+.0f}"
        text += f" ({100 * (t.ci[0] - 1):+.0f}..{hi})"
    return text


def format_comparison(c: dict) -> str:
    """The comparison as a table: per cell and metric, A, B, the change with its interval
    and the verdict; then what was refused or left out."""
    head = ["cell", "median A ms", "median B ms", "change (95 % CI)", "verdict", "GC % A->B", "GC verdict",
            "full/1000 A->B", "full-GC verdict"]
    body = []
    for r in c["rows"]:
        m, g, f = r["tests"]
        body.append([r["cell"] + (" (forced)" if r["forced"] else ""), stats.fmt(m.a), stats.fmt(m.b), _change(m),
                     m.verdict + (f" ({m.note})" if m.note and m.verdict == "inconclusive" else ""),
                     f"{100 * g.a:.2f}->{100 * g.b:.2f}", g.verdict,
                     f"{stats.fmt(f.a)}->{stats.fmt(f.b)}", f.verdict])
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(head)]
    fmt_row = lambda cells: "  ".join(x.ljust(w) if i in (0, 4, 6, 8) else x.rjust(w)
                                      for i, (x, w) in enumerate(zip(cells, widths))).rstrip()
    lines = [f"repeats are the unit; Holm-corrected over {c['tests']} tests at alpha {c['alpha']:g}; "
             f"minimum effect {100 * c['min_effect']:g} %", fmt_row(head), "-" * sum(widths + [2 * (len(head) - 1)])]
    lines += [fmt_row(row) for row in body]
    if not body:
        lines.append("(no cell ran ok in both folders)")
    if c["refused"]:
        lines.append("refused (settings differ; --force compares them anyway):")
        lines += [f"  {x}" for x in c["refused"]]
    lines += c["notes"]
    return "\n".join(lines)
