"""The answer first: three to five sentences, from the data, that `run` prints before its
table and every report puts on top. Counts first, then times:

How it works, and why: docs/internals.md, `gcbench.publishing.verdict`.
"""

from __future__ import annotations

from ..analysing import claims, comparison, summary
from ..core import wording
from . import interval_text, summary_text

NEGLIGIBLE_SHARE = 0.001  # below 0.1 % of step time the collector is not worth naming


def in_cpu_time(measured: list[summary.CellStats]) -> bool:
    """Which GC share a view of these cells gives, one for all of them: of CPU time where any
    ran loaded and every one recorded it (load stretches the wall time its pauses are a
    share of), else of the loop's wall time."""
    return any(s.loaded for s in measured) and all(s.gc_share_cpu is not None for s in measured)


def share(s: summary.CellStats, cpu: bool) -> float:
    """The GC share a verdict goes by: of CPU time (`cpu`) or of the loop's wall time."""
    return s.share(cpu).value


def _share(s: summary.CellStats, cpu: bool) -> str:
    share = s.share(cpu)
    value, ci, per = share.value, share.ci, share.per_repeat
    if ci is None:
        values = interval_text.fmt_values(per, 100)
        return f"{100 * value:.1f} % ({values}{'' if values == 'one process' else ' %'})"
    return f"{100 * value:.1f} % (95 % {100 * ci[0]:.1f}-{100 * ci[1]:.1f} %)"


def _of_time(cpu: bool) -> str:
    return "of its CPU time" if cpu else "of its wall time"


def _first_of(labels, shown: int = 3) -> str:
    """The first `shown` labels, and "..." where there are more."""
    labels = list(labels)
    return ", ".join(labels[:shown]) + (", ..." if len(labels) > shown else "")


def load_sentence(ok: list[summary.CellSummary]) -> str | None:
    """The machine was loaded: said first, with how much, and what that leaves judged."""
    used = [d for cs in ok for d in cs.used_docs]
    repeats, how = summary.how_loaded(used)
    if not repeats:
        return None
    total = len(used)
    loaded = [cs for cs in ok if summary.how_loaded(cs.used_docs)[0]]
    # Load does not stretch a count, but a JAX step's can move by a collection: its runtime's
    # threads free objects at other moments (the first look loaded: equinox-filter made 2, 2
    # and 1 full collections against 1 in every repeat quiet; nnx's 7 moved by a step or two).
    counts = ("collection counts are judged: load does not stretch them, though a JAX step's can move by a "
              "collection where its runtime's threads free objects at other moments")
    if len(loaded) == len(ok):
        return (f"The machine was loaded: {repeats} of {total} repeats ran while {how}. Times are not judged; the "
                f"{counts}; {_basis_words(ok)}.")
    names = _first_of(cs.label for cs in loaded)
    return (f"The machine was loaded: {repeats} of {total} repeats ran while {how}, in {len(loaded)} of {len(ok)} "
            f"cells ({names}). Their times are not judged, nor any comparison of times with them; the other cells' "
            f"times are, and the {counts}; {_basis_words(ok)}.")


def _basis_words(ok: list[summary.CellSummary]) -> str:
    if in_cpu_time([cs.measured for cs in ok]):
        return "every GC share below is of CPU time, which load stretches less than wall time"
    return "GC shares below are of wall time (a cell did not record its CPU time)"


def _full_cost(cs: summary.CellSummary) -> str:
    """What a step with a full collection costs, as a clause (empty without one, or on a
    loaded machine, whose times are not judged)."""
    f = cs.measured.full
    if not f.count or f.extra_ns is None or f.ratio is None or cs.measured.loaded:
        return ""
    ci = f.extra_ci_ns
    if ci is not None and ci[0] > 0:
        return (f"; a step with a full collection takes {wording.fmt(f.extra_ns / 1e6)} ms longer than the steps "
                f"around it (95 % {wording.fmt_range(ci[0] / 1e6, ci[1] / 1e6)} ms), {f.ratio:.1f} x the median step")
    if ci is None:
        return (f"; a step with a full collection takes {wording.fmt_signed(f.extra_ns / 1e6)} ms against the steps "
                f"around it ({f.ratio:.1f} x; too few repeats with one for an interval)")
    return ""


def _other_policies(cs: summary.CellSummary, ok: list[summary.CellSummary]) -> list[summary.CellSummary]:
    """The cells of the same backend, workload, environment and machine under another policy."""
    b, w, p, env, node = cs.key
    return [o for o in ok if o.key[:2] == (b, w) and o.key[3:] == (env, node) and o.key[2] != p]


def _mitigation(cs: summary.CellSummary, ok: list[summary.CellSummary], cpu: bool) -> str | None:
    """The other policies of the same backend, workload and environment, tested on the mean step."""
    w, p = cs.key[1], cs.key[2]
    others = _other_policies(cs, ok)
    if not others:
        return None
    if cs.measured.loaded or any(o.measured.loaded for o in others):  # counts, not times
        return _mitigation_counts(cs, others, cpu)
    family = claims.workload_claims([c for c in ok if c.key[1] == w]) if p == "default" else []
    o, t = _shortest_run(cs, others, family)
    counts = (f"Under `{o.key[2]}` it makes {summary.full_per_repeat(o)} full collections per repeat against "
              f"{summary.full_per_repeat(cs)}. ")
    return counts + _mean_step_words(o.key[2], t, _corrected(family, t))


def _corrected(family: list, t) -> str:
    """How the test's p-value was corrected, where it was tested among the workload's claims."""
    if not family or t.p_adj is None:
        return ""
    return (f" (p = {t.p_adj:.2g} after correcting for this workload's "
            f"{sum(x.p is not None for _, x, _ in family)} tests, as in the Findings)")


def _shortest_run(cs: summary.CellSummary, others: list[summary.CellSummary], family: list) -> tuple:
    """The other policy whose runs take the least time against `cs`'s, with its test: the
    Findings' corrected test where there is one, else one test alone."""
    va = comparison.repeat_values(cs.docs)
    best = None
    for o in others:
        t = claims.policy_test(family, "policy_mean", cs, o)
        if t is None:  # not a test of the Findings (the paying cell is not under default): one test alone
            t = comparison.test_mean(va, comparison.repeat_values(o.docs), comparison.MIN_EFFECT, comparison.ALPHA)
            comparison.conclude([t], comparison.ALPHA)
        if best is None or (t.effect or 9) < (best[1].effect or 9):
            best = (o, t)
    assert best is not None  # others is not empty
    return best


def _time_interval(t) -> str:
    """A ratio of mean steps as less, more or about the same time, with its interval."""
    level = f"{100 * t.level:.3g} %"
    lo, hi = t.ci
    if hi < 1:
        return f"{100 * (1 - t.effect):.0f} % less time ({level} {100 * (1 - hi):.0f}-{100 * (1 - lo):.0f} % less)"
    if lo > 1:
        return f"{100 * (t.effect - 1):.0f} % more time ({level} {100 * (lo - 1):.0f}-{100 * (hi - 1):.0f} % more)"
    return f"{100 * (t.effect - 1):+.0f} % time ({level} {100 * (lo - 1):+.0f} to {100 * (hi - 1):+.0f} %)"


def _mean_step_words(policy: str, t, corrected: str) -> str:
    """What `policy` did to the time a run takes, as its test says."""
    change = f"mean step {wording.fmt(t.a)} -> {wording.fmt(t.b)} ms"
    if t.ci is None or t.effect is None:
        return (f"Its mean step (the time a run takes) is {wording.fmt(t.b)} ms there against "
                f"{wording.fmt(t.a)} ms; {t.note or 'too few processes to test it'}.")
    interval = _time_interval(t)
    if t.verdict == "faster run":
        return f"`{policy}` shortens its runs: they take {interval}, {change}{corrected}."
    if t.verdict == "slower run":
        return f"`{policy}` does not help it: its runs take {interval}, {change}{corrected}."
    if t.verdict == "same":
        return (f"`{policy}` leaves the time its runs take the same within {100 * t.margin:.0f} %: {interval}, "
                f"{change}{corrected}.")
    return f"Whether `{policy}` shortens its runs the repeats cannot tell: {interval}, {change}{corrected}."


def _mitigation_counts(cs: summary.CellSummary, others: list[summary.CellSummary], cpu: bool) -> str:
    """What another policy did to a loaded cell, in counts (and the view's GC share)."""
    parts = []
    for o in others:
        f, fo = summary.full_per_repeat(cs), summary.full_per_repeat(o)
        parts.append(f"under `{o.key[2]}` it makes {fo} full collections per repeat against {f} and spends "
                     f"{_share(o.measured, cpu)} {_of_time(cpu)} in the collector")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + " (its time is not judged: the machine was loaded)."


def _cheapest_backend(cs: summary.CellSummary, ok: list[summary.CellSummary], cpu: bool) -> str | None:
    b, w, p, env, node = cs.key
    peers = [o for o in ok if o.key[1:] == (w, p, env, node) and o.key[0] != b]
    if not peers:
        return None
    low = min(peers, key=lambda o: share(o.measured, cpu))
    where = "workload, policy and environment" if env else "workload and policy"
    s = low.measured
    return f"On the same {where} `{low.key[0]}` spends {_share(s, cpu)} {_of_time(cpu)} in the collector."


def _counts(cs: summary.CellSummary) -> str:
    """A cell's collections, counted: full ones as a schedule, then every generation's per repeat."""
    st = cs.measured
    used = max(len(st.used), 1)
    per_gen = [(a + b) / used for a, b in zip(st.collections, st.between.collections, strict=True)]
    by_gen = "/".join(wording.fmt(x) for x in per_gen)
    after = st.full_after_last or 0
    text = (f"{wording.format_schedule(st.full.schedule)}"
            + (f" and {wording.fmt(after / used)} more after its last step" if after else "")
            + f"; {wording.fmt(sum(per_gen))} collections of every generation per repeat ({by_gen} by generation)")
    if explicit := st.explicit:
        text += f"; {summary_text.describe_explicit(explicit)}"
    b = [x / used for x in st.between.collections]
    if any(b):  # paid for by the loop all the same: counted, and said where they fell
        text += (f", {wording.fmt(sum(b))} of them ({wording.fmt(b[-1])} full) between steps, in the loop's own code "
                 "outside `m.step()`")
    return text


def sentences(cells: list[summary.CellSummary]) -> list[str]:
    """The verdict on a set of results (`summary.summarize_all` of them, as the table beside
    it shows them), in sentences, counts first; empty when nothing ran ok."""
    ok = [cs for cs in cells if cs.ok]
    if not ok:
        return []
    load = load_sentence(ok)
    out = [load] if load else []
    cpu = in_cpu_time([cs.measured for cs in ok])  # one share for the whole verdict
    # who pays most: by its GC share (a count alone would name a cell whose many full
    # collections are cheap, as `freeze` makes them), said by its counts first
    worst = max(ok, key=lambda cs: (share(cs.measured, cpu), cs.measured.full.count))
    # a collector turned off is what the numbers mean: said first, with what it implies
    off = [f"In {cs.label} {summary_text.describe_collector(c)}." for cs in ok if (c := cs.measured.collector)][:3]
    if _costs_nothing(ok, worst, cpu):
        return out + off + _negligible(ok, worst, cpu)
    fix = _mitigation(worst, ok, cpu) or _cheapest_backend(worst, ok, cpu)
    return out + _who_pays(worst, len(ok), cpu) + off + ([fix] if fix else []) + \
        ([_cells_with_full(ok)] if len(ok) > 1 else [])


def _costs_nothing(ok: list[summary.CellSummary], worst: summary.CellSummary, cpu: bool) -> bool:
    """The collector is negligible: the cell that pays most pays under NEGLIGIBLE_SHARE, with
    no full collection, and no cell collected between its steps."""
    s = worst.measured
    between = sum(sum(cs.measured.between.collections) for cs in ok)
    return share(s, cpu) < NEGLIGIBLE_SHARE and not s.full.count and not between


def _who_pays(worst: summary.CellSummary, cells: int, cpu: bool) -> list[str]:
    """The cell that pays the collector most, among `cells`: its counts, its share and its
    times, and its memory where it grows. (One cell, a user's loop or a single cell run,
    pays nothing "most": its counts are the answer.)"""
    s = worst.measured
    out = [f"{worst.label} pays the collector most. It makes {_counts(worst)}." if cells > 1 else
           f"{worst.label} makes {_counts(worst)}."]
    times = ("" if s.loaded else
             f"; its mean step is {wording.fmt(s.mean_ms)} ms against a median of {wording.fmt(s.median_ms)} ms")
    out.append(f"It spends {_share(s, cpu)} {_of_time(cpu)} in the collector{times}{_full_cost(worst)}.")
    grows = summary_text.memory_growth(s)
    if grows:
        out.append(f"{grows[0].upper()}{grows[1:]}.")
    return out


def _negligible(ok: list[summary.CellSummary], worst: summary.CellSummary, cpu: bool) -> list[str]:
    """Where the collector took next to nothing: a memory that grows is the larger effect,
    when one does; then what little the collector did."""
    growing = [(cs, why) for cs in ok if (why := summary_text.memory_growth(cs.measured))]
    lead = [f"{cs.label}: {why[0].upper()}{why[1:]}." for cs, why in growing[:2]]
    young = sum(sum(cs.measured.collections) for cs in ok)
    ran = (f"{young:,} young collections and no full one" if young else "no collection at all")
    return [*lead, f"The collector took at most {_share(worst.measured, cpu)} {_of_time(cpu)} in all {len(ok)} "
                   f"cells ({worst.label}): {ran} inside the timed steps."]


def _cells_with_full(ok: list[summary.CellSummary]) -> str:
    with_full = [cs for cs in ok if cs.measured.full.count]
    named = f" ({', '.join(cs.label for cs in with_full[:4])}{', ...' if len(with_full) > 4 else ''})."
    head = f"{len(with_full)} of {len(ok)} cells had full collections inside timed steps"
    return head + (named if with_full else ".")
