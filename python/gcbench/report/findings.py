"""Findings for one workload, written from intervals and tests, never from point values alone.

- GC is credited only where collections happened, and every rate says how many events
  it rests on (below five events, the count itself is given).
- A policy "removes" or "reduces" full collections only when the exact rate test says
  so; a change of the median step is claimed only when the repeat-level test says so
  and the change is at least the minimum effect; otherwise the finding says that the
  data cannot tell.
- The fastest and slowest backends are named as such only when the test between them
  supports it. All tests of a workload are corrected together (Holm).
"""

from __future__ import annotations

from .. import compare, stats, summary
from .document import code

NEGLIGIBLE_SHARE = 0.001  # below 0.1 % of step time the collector is not worth ranking


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _ms(ns: float) -> str:
    return f"{stats.fmt(ns / 1e6)} ms"


def _name(cs: summary.CellSummary) -> str:
    backend, _, policy, env = cs.key
    return f"{code(backend)}" + (f" [{env}]" if env else "") + f" under {code(policy)}"


def full_gc_sentence(cs: summary.CellSummary) -> str:
    """What the steps with a full collection cost in one cell."""
    s = cs.stats
    f = s["full"]
    what = "full sweeps" if s["language"] == "julia" else "full collections"
    text = f"{_name(cs)}: {stats.format_rate(f['rate'], what)}"
    if f.get("extra_ns") is not None:
        ci = f.get("extra_ci_ns")
        if ci is not None and ci[0] <= 0 <= ci[1]:
            text += (f"; such a step took no longer than the steps around it "
                     f"({stats.fmt_signed(f['extra_ns'] / 1e6)} ms, 95 % {stats.fmt_range(ci[0] / 1e6, ci[1] / 1e6)} ms)")
        elif ci is not None:
            text += (f"; each such step took {_ms(f['extra_ns'])} longer than the steps around it "
                     f"(95 % {stats.fmt_range(ci[0] / 1e6, ci[1] / 1e6)} ms), {f['ratio']:.1f} x "
                     f"(95 % {f['ratio_ci'][0]:.1f}-{f['ratio_ci'][1]:.1f})")
        else:
            values = ", ".join(f"{stats.fmt_signed(v / 1e6)} ms" for v in (f.get("extra_values_ns") or [f["extra_ns"]]))
            text += f"; against the steps around them: {values} ({f['ratio']:.1f} x at the median)"
        if f.get("period") is not None:
            text += f", one every {stats.fmt(f['period'])} steps"
        text += f"; together {_pct(f['cost_share'])} of step time"
    lo, hi = s["gc_share_ci"]
    return text + f". GC share {_pct(s['gc_share'])} (95 % {100 * lo:.2f}-{_pct(hi)})."


def findings(cells: list[summary.CellSummary], min_effect: float = compare.MIN_EFFECT,
             alpha: float = compare.ALPHA) -> list[str]:
    """Sentences about one workload's cells (any status)."""
    ok = [cs for cs in cells if cs.ok]
    if not ok:
        return ["No cell of this workload ran."]
    out: list[str] = []
    steps = sum(cs.stats["steps"] for cs in ok)
    collected = [cs for cs in ok if sum(cs.stats["collections"]) > 0]
    with_full = sorted((cs for cs in ok if cs.stats["full"]["count"] > 0),
                       key=lambda cs: -cs.stats["full"]["rate"]["rate"])
    if not collected:
        out.append(f"No collection ran during the timed steps of any cell ({steps:,} steps over "
                   f"{sum(cs.stats['repeats'] for cs in ok)} repeats): on this workload the collector costs "
                   "nothing here (a finding, not a failure).")
    elif max(cs.stats["gc_share"] for cs in ok) < NEGLIGIBLE_SHARE:
        colls = sum(sum(cs.stats["collections"]) for cs in ok)
        full = sum(cs.stats["full"]["count"] for cs in ok)
        worst = max(ok, key=lambda cs: cs.stats["gc_share"])
        out.append(f"The collector is negligible here: {colls:,} collections ({full} of them full) in "
                   f"{steps:,} timed steps, at most {_pct(worst.stats['gc_share'])} of step time "
                   f"({_name(worst)}).")
    out += [full_gc_sentence(cs) for cs in with_full]
    young_only = [cs for cs in collected if cs.stats["full"]["count"] == 0 and cs.stats["gc_share"] >= NEGLIGIBLE_SHARE]
    if young_only:
        out.append("Young collections only, no full one: " + "; ".join(
            f"{_name(cs)} {_pct(cs.stats['gc_share'])} of step time" for cs in young_only) + ".")

    claims: list[tuple[str, compare.Test, object]] = []
    values = {cs.key: compare.repeat_values(cs.docs) for cs in ok}
    for base in ok:
        if base.key[2] != "default":
            continue
        vb = values[base.key]
        for other in ok:
            b, w, p, e = other.key
            if (b, w, e) != (base.key[0], base.key[1], base.key[3]) or p == "default":
                continue
            vo = values[other.key]
            if vb["full"] > 0:
                claims.append(("policy_full", compare.test_rate(vb["full"], vb["steps"], vo["full"], vo["steps"],
                                                                min_effect, alpha), (base, other, vb, vo)))
            if sum(base.stats["collections"]) > 0:  # GC time is credited only where collections ran
                claims.append(("policy_share", compare.test_gc_share(vb["shares"], vo["shares"], min_effect, alpha),
                               (base, other, vb, vo)))
            claims.append(("policy_median", compare.test_median(vb["medians"], vo["medians"], min_effect, alpha),
                           (base, other, vb, vo)))
    for env in dict.fromkeys(cs.key[3] for cs in ok):
        base = [cs for cs in ok if cs.key[2] == "default" and cs.key[3] == env] or \
            [cs for cs in ok if cs.key[3] == env]
        policy = base[0].key[2]
        base = [cs for cs in base if cs.key[2] == policy]
        if len(base) > 1:
            fastest = min(base, key=lambda cs: cs.stats["median_ms"])
            slowest = max(base, key=lambda cs: cs.stats["median_ms"])
            t = compare.test_median(values[fastest.key]["medians"], values[slowest.key]["medians"], min_effect, alpha)
            claims.append(("ranking", t, (fastest, slowest, len(base))))
    compare.conclude([t for _, t, _ in claims], alpha)
    out += [_claim(kind, t, ctx) for kind, t, ctx in claims]
    return out


def _ratio(t: compare.Test) -> str:
    if t.ci is None:
        return f"{t.effect:.2f} x"
    return f"{t.effect:.2f} x (95 % {t.ci[0]:.2f}-{t.ci[1]:.2f})"


def _claim(kind: str, t: compare.Test, ctx) -> str:
    if kind == "ranking":
        fastest, slowest, ranked = ctx
        policy = fastest.key[2]
        f, s = fastest.stats, slowest.stats
        env = fastest.key[3]
        head = (f"Median step under {code(policy)}" + (f" [{env}]" if env else "") + f": {code(fastest.key[0])} {stats.fmt(f['median_ms'])} ms "
                f"(95 % {stats.fmt(f['median_ci_ms'][0])}-{stats.fmt(f['median_ci_ms'][1])}), "
                f"{code(slowest.key[0])} {stats.fmt(s['median_ms'])} ms "
                f"(95 % {stats.fmt(s['median_ci_ms'][0])}-{stats.fmt(s['median_ci_ms'][1])})")
        if t.verdict == "slower":
            # the test is of the two ends only: it says nothing of the backends between them
            between = (f" (the fastest and the slowest median of {ranked} backends; those between are not ranked)"
                       if ranked > 2 else "")
            return f"{head}: {code(slowest.key[0])} takes {_ratio(t)} the time of {code(fastest.key[0])}{between}."
        if t.verdict == "same":
            return f"{head}: within {100 * t.margin:.0f} % of each other; no backend is faster here."
        why = t.note or (f"p = {t.p:.2g}, {t.p_adj:.2g} after correcting for this workload's tests"
                         if t.p_adj is not None else "the repeats cannot tell them apart")
        return f"{head}: no ranking is claimed ({why})."
    base, other, vb, vo = ctx
    b, _, p, env = other.key
    who = code(b) + (f" [{env}]" if env else "")
    if kind == "policy_full":
        counts = f"{vo['full']} in {vo['steps']:,} steps against {vb['full']} in {vb['steps']:,} under {code('default')}"
        if t.verdict.startswith("fewer"):
            verb = "removes" if vo["full"] == 0 else "reduces"
            return f"{code(p)} {verb} the full collections of {who}: {counts} (p = {t.p_adj:.2g})."
        if t.verdict.startswith("more"):
            return f"{code(p)} brings more full collections to {who}: {counts} (p = {t.p_adj:.2g})."
        return f"{code(p)} does not change the full collections of {who} beyond chance: {counts}."
    if kind == "policy_share":
        shares = (f"GC share {_pct(t.a)} under {code('default')}, {_pct(t.b)} under {code(p)}"
                  + (f", difference {100 * t.effect:+.2f} points (95 % {100 * t.ci[0]:+.2f} to {100 * t.ci[1]:+.2f})"
                     if t.ci else ""))
        if t.verdict in ("less GC", "more GC"):
            return f"{code(p)} gives {who} {t.verdict.replace(' GC', '')} GC time: {shares} (p = {t.p_adj:.2g})."
        if t.verdict == "same":
            return f"{code(p)} leaves the GC time of {who} the same: {shares}."
        return f"{code(p)} and the GC time of {who}: the repeats cannot tell ({shares})."
    # policy_median
    if vb["full"] == 0 and sum(base.stats["collections"]) == 0:
        lead = f"{who} collected nothing under {code('default')}, so {code(p)} has nothing to remove"
    else:
        lead = f"{who} under {code(p)} against {code('default')}"
    if t.verdict in ("faster", "slower"):
        return f"{lead}: median step {t.verdict}, {_ratio(t)}."
    if t.verdict == "same":
        return f"{lead}: median step the same within {100 * t.margin:.0f} % ({_ratio(t)})."
    return f"{lead}: the median step does not differ beyond noise ({_ratio(t)}{'; ' + t.note if t.note else ''})."
