"""The answer first: three to five sentences, from the data, that `run` prints before its
table and every report puts on top.

1. Who pays the collector most, and how much of its step time (with the interval over
   the repeats, or the values where fewer than 3 processes give none).
2. That cell's full collections: the schedule, and what a step with one costs.
3. What removes it, measured: the same backend and workload under another policy
   (`disable`, `freeze`, ...), tested on the time a run takes (the mean step), with the
   interval of that very test; failing that, the backend of the same workload that pays
   least, named with its share (no test claimed).
4. Where the collector is negligible everywhere, one sentence says so instead.

Each verdict here is one test on its own (not corrected with others): the Findings of a
report test every pair of a workload together.
"""

from __future__ import annotations

from . import compare, stats, summary

NEGLIGIBLE_SHARE = 0.001  # below 0.1 % of step time the collector is not worth naming


def _share(s: dict) -> str:
    ci = s.get("gc_share_ci")
    if ci is None:
        return f"{100 * s['gc_share']:.1f} % ({stats.fmt_values(s.get('repeat_gc_shares'), 100)} %)"
    return f"{100 * s['gc_share']:.1f} % (95 % {100 * ci[0]:.1f}-{100 * ci[1]:.1f} %)"


def _full(cs: summary.CellSummary) -> str | None:
    f = cs.stats["full"]
    if not f["count"]:
        return None
    text = f"It makes {stats.format_schedule(f['schedule'])}"
    if f.get("extra_ns") is not None:
        ci = f.get("extra_ci_ns")
        if ci is not None and ci[0] > 0:
            text += (f"; a step with one takes {stats.fmt(f['extra_ns'] / 1e6)} ms longer than the steps around it "
                     f"(95 % {stats.fmt_range(ci[0] / 1e6, ci[1] / 1e6)} ms), {f['ratio']:.1f} x the median step")
        elif ci is None:
            text += (f"; a step with one takes {stats.fmt_signed(f['extra_ns'] / 1e6)} ms against the steps around "
                     f"it ({f['ratio']:.1f} x; too few repeats with one for an interval)")
    return text + "."


def _mitigation(cs: summary.CellSummary, ok: list[summary.CellSummary]) -> str | None:
    """The other policies of the same backend, workload and environment, tested on the mean step."""
    b, w, p, env, node = cs.key
    others = [o for o in ok if o.key[:2] == (b, w) and o.key[3:] == (env, node) and o.key[2] != p]
    if not others:
        return None
    va = compare.repeat_values(cs.docs)
    best = None
    for o in others:
        t = compare.test_mean(va, compare.repeat_values(o.docs), compare.MIN_EFFECT, compare.ALPHA)
        compare.conclude([t], compare.ALPHA)
        if best is None or (t.effect or 9) < (best[1].effect or 9):
            best = (o, t)
    o, t = best
    policy = o.key[2]
    change = f"mean step {stats.fmt(t.a)} -> {stats.fmt(t.b)} ms"
    if t.ci is None:
        return (f"Under `{policy}` its mean step (the time a run takes) is {stats.fmt(t.b)} ms against "
                f"{stats.fmt(t.a)} ms; {t.note or 'too few processes to test it'}.")
    level = f"{100 * t.level:.3g} %"
    lo, hi = t.ci
    if hi < 1:
        interval = f"{100 * (1 - t.effect):.0f} % less time ({level} {100 * (1 - hi):.0f}-{100 * (1 - lo):.0f} % less)"
    elif lo > 1:
        interval = f"{100 * (t.effect - 1):.0f} % more time ({level} {100 * (lo - 1):.0f}-{100 * (hi - 1):.0f} % more)"
    else:
        interval = f"{100 * (t.effect - 1):+.0f} % time ({level} {100 * (lo - 1):+.0f} to {100 * (hi - 1):+.0f} %)"
    if t.verdict == "faster run":
        return f"`{policy}` shortens its runs: they take {interval}, {change}."
    if t.verdict == "slower run":
        return f"`{policy}` does not help it: its runs take {interval}, {change}."
    if t.verdict == "same":
        return f"`{policy}` leaves the time its runs take the same within {100 * t.margin:.0f} %: {interval}, {change}."
    return f"Whether `{policy}` shortens its runs the repeats cannot tell: {interval}, {change}."


def _cheapest_backend(cs: summary.CellSummary, ok: list[summary.CellSummary]) -> str | None:
    b, w, p, env, node = cs.key
    peers = [o for o in ok if o.key[1:] == (w, p, env, node) and o.key[0] != b]
    if not peers:
        return None
    low = min(peers, key=lambda o: o.stats["gc_share"])
    where = "workload, policy and environment" if env else "workload and policy"
    return f"On the same {where} `{low.key[0]}` spends {_share(low.stats)} of its step time in the collector."


def sentences(cells: list[summary.CellSummary]) -> list[str]:
    """The verdict on a set of results (`summary.summarize_all` of them, as the table beside
    it shows them), in sentences; empty when nothing ran ok."""
    ok = [cs for cs in cells if cs.ok]
    if not ok:
        return []
    worst = max(ok, key=lambda cs: (cs.stats["gc_share"], cs.stats["full"]["count"]))
    s = worst.stats
    if s["gc_share"] < NEGLIGIBLE_SHARE and not s["full"]["count"]:
        return [f"The collector costs next to nothing in all {len(ok)} cells: at most {_share(s)} of step time "
                f"({worst.label}), and no full collection inside a timed step."]
    out = [f"{worst.label} pays the collector most: {_share(s)} of its step time, mean step "
           f"{stats.fmt(s['mean_ms'])} ms against a median of {stats.fmt(s['median_ms'])} ms."]
    full = _full(worst)
    if full:
        out.append(full)
    fix = _mitigation(worst, ok) or _cheapest_backend(worst, ok)
    if fix:
        out.append(fix)
    with_full = [cs for cs in ok if cs.stats["full"]["count"]]
    if len(ok) > 1:
        out.append(f"{len(with_full)} of {len(ok)} cells had full collections inside timed steps"
                   + (f" ({', '.join(cs.label for cs in with_full[:4])}{', ...' if len(with_full) > 4 else ''})."
                      if with_full else "."))
    return out
