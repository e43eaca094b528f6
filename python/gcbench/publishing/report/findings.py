"""Findings for one workload, written from intervals and tests, never from point values alone.

How it works, and why: docs/internals.md, `gcbench.publishing.report.findings`.
"""

from __future__ import annotations

from ...analysing import claims, comparison, summary
from ...core import wording
from .. import interval_text, summary_text, verdict
from .document import Para, Table, code, escape

NEGLIGIBLE_SHARE = 0.001  # below 0.1 % of step time the collector is not worth ranking


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"



def _name(cs: summary.CellSummary) -> str:
    backend, policy, env = cs.key[0], cs.key[2], summary.context(cs.key)
    return f"{code(backend)}" + (f" [{env}]" if env else "") + f" under {code(policy)}"


def _share_ci(ci, values=None) -> str:
    if ci is None:
        return interval_text.fmt_ci(None, 100, "%", values=values)
    return f"95 % {100 * ci[0]:.2f}-{_pct(ci[1])}"


def between_sentence(cs: summary.CellSummary) -> str:
    """The collections a cell's loop paid for between its steps (its own code outside
    `m.step()`): how many, how many full, and their time."""
    b = cs.measured.between
    n, full = sum(b.collections), b.collections[-1]
    return (f"{_name(cs)}: {n:,} collection{'s' * (n != 1)} ({full:,} full) ran between steps, in the loop's own "
            f"code outside `m.step()`, {wording.fmt(b.gc_ms)} ms in all; they count in its GC share "
            f"({_pct(cs.measured.gc_share)} of the loop's time).")


def findings(cells: list[summary.CellSummary], min_effect: float = comparison.MIN_EFFECT,
             alpha: float = comparison.ALPHA, family: list | None = None) -> list[str]:
    """Sentences about one workload's cells (any status): what the tables do not say, a few
    at most (memory growth, collections between steps, a collector that never ran or costs
    nothing, and the ranking of the backends)."""
    ok = [cs for cs in cells if cs.ok]
    if not ok:
        return ["No cell of this workload ran."]
    out = _growing_memory(ok)
    # collections the loop paid for outside its steps: never "costs nothing"
    between = [cs for cs in ok if any(cs.measured.between.collections)]
    out += [between_sentence(cs) for cs in between]
    collected = bool(between) or any(sum(cs.measured.collections) > 0 for cs in ok)
    out += _quiet_collector(ok, sum(cs.measured.steps for cs in ok), collected)
    family = claims.workload_claims(cells, min_effect, alpha) if family is None else family
    return out + [_claim(kind, t, ctx) for kind, t, ctx in family if kind == "ranking"]


def _growing_memory(ok: list[summary.CellSummary]) -> list[str]:
    """A sentence for each cell whose memory grows step after step."""
    grown = ((cs, summary_text.memory_growth(cs.measured)) for cs in ok)
    return [f"{_name(cs)}: {grows}." for cs, grows in grown if grows]


def _quiet_collector(ok: list[summary.CellSummary], steps: int, collected: bool) -> list[str]:
    """A collector that never ran (said so: a finding, not a failure), or one that cost next
    to nothing, with what it did."""
    if not collected:
        return [f"No collection ran during the timed steps of any cell ({steps:,} steps over "
                f"{sum(cs.measured.repeats for cs in ok)} repeats), nor between them: on this workload the "
                "collector costs nothing here (a finding, not a failure)."]
    if max(cs.measured.gc_share for cs in ok) >= NEGLIGIBLE_SHARE:
        return []
    colls = sum(sum(cs.measured.collections) for cs in ok)
    full = sum(cs.measured.full.count for cs in ok)
    worst = max(ok, key=lambda cs: cs.measured.gc_share)
    return [f"The collector is negligible here: {colls:,} collections ({full} of them full) in "
            f"{steps:,} timed steps, at most {_pct(worst.measured.gc_share)} of wall time ({_name(worst)})."]


def _full_row(cs: summary.CellSummary, cpu: bool) -> list[str]:
    """A cell's full collections: its schedule, what a step holding one cost against its
    neighbours, and its GC share."""
    s, f = cs.measured, cs.measured.full
    share = s.share(cpu)
    what = "full sweeps" if s.language == "julia" else "full collections"
    cost = "-"
    if f.extra_ns is not None:
        ci = f.extra_ci_ns
        cost = f"{wording.fmt_signed(f.extra_ns / 1e6)} ms, {f.ratio:.1f} x" + (
            f" (95 % {wording.fmt_range(ci[0] / 1e6, ci[1] / 1e6)} ms)" if ci else " (no interval)")
    return [_name(cs), escape(wording.format_schedule(f.schedule, what)), cost,
            f"{_pct(share.value)} ({_share_ci(share.ci, share.per_repeat)})"]


def full_table(cells: list[summary.CellSummary]) -> Table | None:
    """The cells that made full collections: their schedule, what a step holding one cost,
    and their GC share, one row each (most full collections per step first)."""
    with_full = sorted((cs for cs in cells if cs.ok and cs.measured.full.count > 0),
                       key=lambda cs: -cs.measured.full.rate.value)
    if not with_full:
        return None
    cpu = verdict.in_cpu_time([cs.measured for cs in cells if cs.ok])  # the verdict's GC share, and the table's
    rows = [_full_row(cs, cpu) for cs in with_full]
    return Table(["cell", "full collections", "a step holding one, against its neighbours",
                  f"GC share of {'CPU' if cpu else 'wall'} time"], rows)


def _cell_text(t: comparison.Test | None) -> str:
    """One test in a table cell: its verdict, the change and its interval, the corrected p."""
    if t is None:
        return "-"
    if t.verdict == comparison.NOT_JUDGED:
        return f"not judged ({escape(t.not_judged.split(':')[0])})"
    p = f"; p = {t.p_adj:.2g} corrected" if t.p_adj is not None and not t.exact else ""
    verdict = "cannot tell" if t.verdict == "inconclusive" else t.verdict
    return f"{verdict}: {_change_text(t)}{p}"


def _change_text(t: comparison.Test) -> str:
    """A test's change and its interval, in its metric's own terms."""
    if t.effect is None:
        return "no change measured"
    if t.metric == "full_rate":
        if t.phase and t.per_repeat is not None:
            return (f"{wording.fmt(t.per_repeat[0])} -> {wording.fmt(t.per_repeat[1])} a repeat, what the "
                    "schedule's phase makes")
        return f"{wording.fmt_signed(t.effect)} per 1,000 steps" + (" (exact)" if t.exact else "")
    if t.metric == "gc_share":
        of_cpu = " of CPU time" if t.note.startswith("in CPU time") else ""
        within = f" ({_level(t)} {100 * t.ci[0]:+.2f} to {100 * t.ci[1]:+.2f})" if t.ci else ""
        return f"{100 * t.effect:+.2f} points{of_cpu}{within}"
    return _ratio(t)


POLICY_TESTS = ("policy_full", "policy_share", "policy_median", "policy_mean")


def _any_decided(tests: list[comparison.Test]) -> bool:
    """A test found a change (not undecided, the same, or not judged)."""
    return any(t.verdict not in ("inconclusive", "same", comparison.NOT_JUDGED) for t in tests)


def tests_table(cells: list[summary.CellSummary], min_effect: float = comparison.MIN_EFFECT,
                alpha: float = comparison.ALPHA, family: list | None = None) -> Table | Para | None:
    """Each policy against `default` for the same backend: full collections, GC share,
    median step and mean step, each the workload's corrected test (analysing.claims). Where
    no test of any row found a change (each undecided, the same or not judged), one line
    says so instead of a table of "cannot tell" (12 rows of them read as 12 findings)."""
    family = claims.workload_claims(cells, min_effect, alpha) if family is None else family
    pairs = _policy_pairs(family)
    if not pairs:
        return None
    tests = [[claims.policy_test(family, k, base, other) for k in POLICY_TESTS] for base, other in pairs]
    known = [t for row in tests for t in row if t is not None]
    if not _any_decided(known):
        return Para(_undecided(pairs, known))
    rows = [[_pair_label(base, other)] + [_cell_text(t) for t in row]
            for (base, other), row in zip(pairs, tests, strict=True)]
    return Table(["policy against default", "full collections", "GC share", "median step", "mean step (a run)"],
                 rows)


def _pair_label(base: summary.CellSummary, other: summary.CellSummary) -> str:
    """`jax [py3.12]: freeze vs default`: the backend, its environment, the two policies."""
    env = summary.context(other.key)
    return f"{code(other.key[0])}" + (f" [{escape(env)}]" if env else "") + \
        f": {code(other.key[2])} vs {code(base.key[2])}"


def _undecided(pairs: list, tests: list[comparison.Test]) -> str:
    """The policies' tests folded into one line where none decided: what was compared, and
    the smallest change of a time the narrowest interval would have shown."""
    policies = sorted({other.key[2] for _, other in pairs})
    repeats = min(len(cs.measured.used) for pair in pairs for cs in pair)
    ratios = [max(t.ci[1] - 1, 1 - t.ci[0]) for t in tests if t.ci is not None and t.ratio_metric]
    smallest = f"; the narrowest interval of a time spans +-{100 * min(ratios):.0f} %" if ratios else ""
    return (f"No policy ({', '.join(code(p) for p in policies)}) changed anything here beyond what "
            f"{repeats} repeats a cell resolve: {len(pairs)} comparisons with `default`, every test the same, "
            f"undecided or not judged{smallest}.")


def _level(t: comparison.Test) -> str:
    return f"{100 * t.level:.3g} %"


def _ratio(t: comparison.Test) -> str:
    if t.ci is None:
        return f"{t.effect:.2f} x"
    return f"{t.effect:.2f} x ({_level(t)} {t.ci[0]:.2f}-{t.ci[1]:.2f})"


def _cell_median(s: summary.CellStats) -> str:
    ci = s.median_ci_ms
    return f"{wording.fmt(s.median_ms)} ms ({interval_text.fmt_ci(ci, values=s.repeat_medians_ms)})"


def _why_not(t: comparison.Test) -> str:
    """Why an inconclusive test says nothing: its note, or its interval."""
    if t.note and t.ci is None:
        return t.note
    return f"p = {t.p:.2g}, {t.p_adj:.2g} after correcting for this workload's tests" if t.p_adj is not None else t.note


def _claim(kind: str, t: comparison.Test, ctx) -> str:
    """One test's sentence: the ranking of backends, or a policy against `default` in one metric."""
    if kind == "ranking":
        return _ranking_claim(t, *ctx)
    base, other, vb, vo = ctx
    b, p, env = other.key[0], other.key[2], summary.context(other.key)
    who = code(b) + (f" [{env}]" if env else "")
    if t.verdict == comparison.NOT_JUDGED:
        return f"{code(p)} and the {comparison.NAMES[t.metric]} of {who}: not judged ({t.not_judged})."
    return _POLICY_CLAIMS[kind](t, who, p, base, vb, vo)


def _ranking_claim(t: comparison.Test, fastest, slowest, ranked: int) -> str:
    policy = fastest.key[2]
    env = summary.context(fastest.key)
    head = (
        f"Median step under {code(policy)}"
        + (f" [{env}]" if env else "")
        + f": {code(fastest.key[0])} {_cell_median(fastest.measured)}, "
        f"{code(slowest.key[0])} {_cell_median(slowest.measured)}"
    )
    if t.verdict == comparison.NOT_JUDGED:
        return f"{head}: no ranking is claimed ({t.not_judged})."
    if t.verdict == "slower":
        # the test is of the two ends only: it says nothing of the backends between them
        between = (f" (the fastest and the slowest median of {ranked} backends; those between are not ranked)"
                   if ranked > 2 else "")
        return f"{head}: {code(slowest.key[0])} takes {_ratio(t)} the time of {code(fastest.key[0])}{between}."
    if t.verdict == "same":
        return f"{head}: within {100 * t.margin:.0f} % of each other ({_ratio(t)}); no backend is faster here."
    return f"{head}: no ranking is claimed: the repeats cannot tell ({_ratio(t)}; {_why_not(t)})."


def _how_known(t: comparison.Test) -> str:
    """How a count's difference is known: exactly (fixed schedules), by its corrected test,
    or as its note says."""
    if t.exact:
        return "both schedules fixed: an exact difference"
    return f"the counts vary between repeats; p = {t.p_adj:.2g}" if t.p_adj is not None else t.note


def _full_claim(t: comparison.Test, who: str, p: str, base, vb, vo) -> str:
    sb, so = vb.schedule, vo.schedule
    counts = (f"{wording.format_schedule(so)} under {code(p)}, against {wording.format_schedule(sb)} under "
              f"{code('default')}")
    how = _how_known(t)
    if t.verdict.startswith("fewer"):
        verb = "removes" if vo.full == 0 else "reduces"
        return f"{code(p)} {verb} the full collections of {who}: {counts} ({how})."
    if t.verdict.startswith("more"):
        return f"{code(p)} brings more full collections to {who}: {counts} ({how})."
    if t.verdict == "same":
        where = ", at the same steps" if sb.same_steps and so.same_steps and sb.at == so.at else ""
        return f"{code(p)} leaves the full collections of {who} as they were{where}: {counts}."
    if t.verdict == comparison.SAME_PHASE:
        return (f"{code(p)} moves the full collections of {who} no more than the phase of their schedule does "
                f"(a different starting heap moves a count by one): {counts}.")
    return f"{code(p)} and the full collections of {who}: the repeats cannot tell ({counts}; {how})."


def _share_claim(t: comparison.Test, who: str, p: str, base, vb, vo) -> str:
    if t.a is None or t.b is None or t.effect is None:
        raise ValueError("a GC share test without the shares it compares")
    shares = f"GC share {_pct(t.a)} under {code('default')}, {_pct(t.b)} under {code(p)}" + (
        f", difference {100 * t.effect:+.2f} points ({_level(t)} {100 * t.ci[0]:+.2f} to {100 * t.ci[1]:+.2f})"
        if t.ci
        else ""
    )
    if t.verdict in ("less GC", "more GC"):
        return (
            f"{code(p)} gives {who} {t.verdict.replace(' GC', '')} GC time: {shares} (p = {t.p_adj:.2g} corrected)."
        )
    if t.verdict == "same":
        return f"{code(p)} leaves the GC time of {who} the same: {shares}."
    return f"{code(p)} and the GC time of {who}: the repeats cannot tell ({shares}; {_why_not(t)})."


def _mean_claim(t: comparison.Test, who: str, p: str, base, vb, vo) -> str:
    lead = f"{who} under {code(p)} against {code('default')}"
    if t.verdict in ("faster run", "slower run"):
        return (f"{lead}: the time a run takes (mean step) {'shorter' if t.verdict == 'faster run' else 'longer'}, "
                f"{_ratio(t)} (p = {t.p_adj:.2g} corrected).")
    if t.verdict == "same":
        return f"{lead}: the time a run takes (mean step) the same within {100 * t.margin:.0f} % ({_ratio(t)})."
    return f"{lead}: the repeats cannot tell whether the time a run takes changed ({_ratio(t)}; {_why_not(t)})."


def _median_claim(t: comparison.Test, who: str, p: str, base, vb, vo) -> str:
    if vb.full == 0 and sum(base.measured.collections) == 0:
        lead = f"{who} collected nothing under {code('default')}, so {code(p)} has nothing to remove"
    else:
        lead = f"{who} under {code(p)} against {code('default')}"
    if t.verdict in ("faster", "slower"):
        return f"{lead}: the typical step (median) {t.verdict}, {_ratio(t)}."
    if t.verdict == "same":
        return f"{lead}: the typical step (median) the same within {100 * t.margin:.0f} % ({_ratio(t)})."
    return f"{lead}: the repeats cannot tell whether the typical step (median) changed ({_ratio(t)}; {_why_not(t)})."


_POLICY_CLAIMS = {"policy_full": _full_claim, "policy_share": _share_claim, "policy_mean": _mean_claim,
                  "policy_median": _median_claim}


def table(cells: list[summary.CellSummary]) -> Table | None:
    """The findings at a glance: one row per backend (and environment), one column per
    policy, each cell its GC share, its full collections per repeat and its mean step (the
    time a run takes per step); the sentences below it hold the tests and intervals."""
    ok = [cs for cs in cells if cs.ok]
    if not ok:
        return None
    policies = list(dict.fromkeys(cs.key[2] for cs in ok))
    cpu = verdict.in_cpu_time([cs.measured for cs in ok])  # one GC share for the table, as the verdict's
    rows: dict[tuple, dict[str, summary.CellSummary]] = {}
    for cs in ok:
        rows.setdefault((cs.key[0], summary.context(cs.key)), {})[cs.key[2]] = cs

    def entry(cs: summary.CellSummary | None) -> str:
        if cs is None:
            return "-"
        s = cs.measured
        full = wording.short_schedule(s.full.schedule) if s.full.count else "no full"
        return f"GC {100 * verdict.share(s, cpu):.1f} %; {escape(full)}; mean {wording.fmt(s.mean_ms)} ms"

    return Table([f"backend (GC % of {'CPU' if cpu else 'wall'} time)"] + [code(p) for p in policies],
                 [[code(b) + (f" [{escape(env)}]" if env else "")] + [entry(by.get(p)) for p in policies]
                  for (b, env), by in rows.items()])


def policy_answer(families: dict[str, list]) -> str | None:
    """The answer of a run that compared GC policies (`--gc A,B,...`): per workload and policy,
    what it did against `default` on each backend, counts first (full collections per repeat),
    then the GC share and the time a run takes (mean step), each the corrected test the
    Findings show (`families`: workload -> analysing.claims.workload_claims)."""
    parts = []
    for workload, family in families.items():
        pairs = _policy_pairs(family)
        for policy in dict.fromkeys(other.key[2] for _, other in pairs):
            mine = [(b, o) for b, o in pairs if o.key[2] == policy]
            parts.append(_policy_part(workload, policy, mine, family))
    if not parts:
        return None
    return "What each policy did, against `default` on the same backend, as the Findings' corrected tests say. " + \
        " ".join(parts)


def _policy_pairs(family: list) -> list:
    """The (default, policy) cell pairs a workload's claims compare, each once."""
    return list({(id(ctx[0]), id(ctx[1])): (ctx[0], ctx[1]) for kind, _, ctx in family if kind != "ranking"}.values())


def _full_counts(mine: list) -> tuple[str, list[str]]:
    """The pairs (default, policy) that made full collections, their counts per repeat in
    words; and the policies' names of those that made none either way."""
    made = [(b, o) for b, o in mine if b.measured.full.rate.value or o.measured.full.rate.value]
    none = [_who(o) for b, o in mine if not (b.measured.full.rate.value or o.measured.full.rate.value)]
    return ", ".join(f"{_who(o)} {summary.full_per_repeat(b)} -> {summary.full_per_repeat(o)}" for b, o in made), none


def _policy_part(workload: str, policy: str, mine: list, family: list) -> str:
    """What one policy did on one workload, against `default` on each backend (`mine`)."""
    counts, none = _full_counts(mine)
    share = _grouped("policy_share", {}, _points, mine, family)
    runs = _grouped("policy_mean", {"faster": "shorter", "slower": "longer", "same": "about the same"}, _ratio,
                    mine, family)
    return (f"`{escape(policy)}` on {escape(workload)}: full collections per repeat against `default` "
            + (counts if counts else "none either way")
            + (f" ({', '.join(none)} made none either way)" if counts and none else "")
            + (f"; the GC share: {share}" if share else "")
            + (f"; the time a run takes (mean step, {policy} over default): {runs}" if runs else "")
            + ".")


def _who(cs: summary.CellSummary) -> str:
    env = summary.context(cs.key)
    return code(cs.key[0]) + (f" [{escape(env)}]" if env else "")


def _grouped(kind: str, words: dict[str, str], effect, mine: list, family: list) -> str:
    """The backends' tests of `kind`, grouped by what they said (`words` renames a verdict)."""
    groups: dict[str, list[str]] = {}
    for b, o in mine:
        t = claims.policy_test(family, kind, b, o)
        if t is None:
            continue
        key = "not judged (loaded machine)" if t.verdict == comparison.NOT_JUDGED else \
            words.get(t.verdict, "cannot tell" if t.verdict == "inconclusive" else t.verdict)
        groups.setdefault(key, []).append(f"{_who(o)} {effect(t)}")
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())


def _points(t: comparison.Test) -> str:
    if t.effect is None:
        return ""
    return f"{100 * t.effect:+.1f} points of {'CPU' if t.note.startswith('in CPU time') else 'wall'} time"
