"""The tests a report's Findings and its verdict read, made once per workload and corrected
together (Benjamini-Hochberg over every test of the workload): each policy against
`default` for the same backend and environment (full collections, GC share, median and
mean step), and the fastest backend against the slowest under one policy. The verdict
quotes the same corrected test as the Findings, so the two can never disagree."""

from __future__ import annotations

from . import comparison, summary

KINDS = ("policy_full", "policy_share", "policy_median", "policy_mean", "ranking")


def workload_claims(cells: list[summary.CellSummary], min_effect: float = comparison.MIN_EFFECT,
                    alpha: float = comparison.ALPHA) -> list[tuple[str, comparison.Test, tuple]]:
    """(kind, concluded test, context) for one workload's ok cells: context is (base, other,
    their repeat values) for a policy test, (fastest, slowest, backends ranked) for a ranking."""
    ok = [cs for cs in cells if cs.ok]
    values = {cs.key: comparison.repeat_values(cs.docs) for cs in ok}
    out = _policy_tests(ok, values, min_effect, alpha) + _rankings(ok, values, min_effect, alpha)
    comparison.conclude([t for _, t, _ in out], alpha)
    return out


def _policy_tests(ok: list[summary.CellSummary], values: dict[tuple, comparison.RepeatValues], min_effect: float,
                  alpha: float) -> list[tuple[str, comparison.Test, tuple]]:
    """Each policy against `default` on the same backend, workload and environment."""
    out: list[tuple[str, comparison.Test, tuple]] = []
    for base in (cs for cs in ok if cs.key[2] == "default"):
        for other in ok:
            if _same_cell_other_policy(base, other):
                out += _pair_tests(base, other, values[base.key], values[other.key], min_effect, alpha)
    return out


def _same_cell_other_policy(base: summary.CellSummary, other: summary.CellSummary) -> bool:
    """`other` is `base`'s backend and workload in its environment, under another policy."""
    b, w, p, e = *other.key[:3], summary.context(other.key)
    return (b, w, e) == (base.key[0], base.key[1], summary.context(base.key)) and p != "default"


def _pair_tests(base: summary.CellSummary, other: summary.CellSummary, vb: comparison.RepeatValues,
                vo: comparison.RepeatValues, min_effect: float, alpha: float
                ) -> list[tuple[str, comparison.Test, tuple]]:
    """A policy against `default`: its full collections (where either made any), its GC share
    (where collections ran), its median and its mean step."""
    ctx = (base, other, vb, vo)
    out = []
    if vb.full > 0 or vo.full > 0:
        out.append(("policy_full", comparison.test_full(vb, vo, min_effect, alpha), ctx))
    if sum(base.measured.collections) > 0:  # GC time is credited only where collections ran
        out.append(("policy_share", comparison.test_gc_share(vb, vo, min_effect, alpha), ctx))
    out.append(("policy_median", comparison.test_median(vb, vo, min_effect, alpha), ctx))
    out.append(("policy_mean", comparison.test_mean(vb, vo, min_effect, alpha), ctx))
    return out


def _ranked_in(ok: list[summary.CellSummary], env: str) -> list[summary.CellSummary]:
    """The cells ranked in one environment: its `default` cells, else those of its first policy."""
    here = [cs for cs in ok if cs.key[2] == "default" and summary.context(cs.key) == env] or \
        [cs for cs in ok if summary.context(cs.key) == env]
    return [cs for cs in here if cs.key[2] == here[0].key[2]]


def _rankings(ok: list[summary.CellSummary], values: dict[tuple, comparison.RepeatValues], min_effect: float,
              alpha: float) -> list[tuple[str, comparison.Test, tuple]]:
    """Per environment, the fastest backend against the slowest under one policy."""
    out: list[tuple[str, comparison.Test, tuple]] = []
    for env in dict.fromkeys(summary.context(cs.key) for cs in ok):
        ranked = _ranked_in(ok, env)
        if len(ranked) > 1:
            fastest = min(ranked, key=lambda cs: cs.measured.median_ms)
            slowest = max(ranked, key=lambda cs: cs.measured.median_ms)
            t = comparison.test_median(values[fastest.key], values[slowest.key], min_effect, alpha)
            out.append(("ranking", t, (fastest, slowest, len(ranked))))
    return out


def policy_test(claims: list, kind: str, base: summary.CellSummary,
                other: summary.CellSummary) -> comparison.Test | None:
    """The corrected test of `kind` between `base` and `other` among a workload's claims."""
    return next((t for k, t, ctx in claims if k == kind and ctx[0] is base and ctx[1] is other), None)
