"""A comparison (`analysing.comparison.Comparison`) as the terminal shows it: the table of
cells, counts first, each with its verdicts in words under it (the answer first), then
what the machine kept from being judged, the method, and the smallest detectable change."""

from __future__ import annotations

from ..analysing.comparison import (
    LOAD_MARGIN,
    NAMES,
    NOT_JUDGED,
    POWER_TARGET,
    SAID_ORDER,
    Comparison,
    Detectable,
    PairRow,
    Test,
    overall,
)
from ..core import terminal, wording


def _change(t: Test) -> str:
    """The effect with its interval, in the interval's own words."""
    if t.effect is None:
        return "-"
    if t.metric == "gc_share":
        text = f"{100 * t.effect:+.2f} pp"
        return text + (f" ({100 * t.ci[0]:+.2f}..{100 * t.ci[1]:+.2f})" if t.ci and not t.exact else "")
    if t.metric in ("full_rate", "collections"):
        return f"{wording.fmt_signed(t.effect)}" + ("" if t.exact or not t.ci else
                                                    f" ({wording.fmt_signed(t.ci[0])}..{wording.fmt_signed(t.ci[1])})")
    text = f"{100 * (t.effect - 1):+.1f} %"
    if t.ci:
        text += f" ({100 * (t.ci[0] - 1):+.0f}..{100 * (t.ci[1] - 1):+.0f})"
    return text



def levels(c: Comparison) -> str:
    """The level of the printed intervals, in words."""
    lv = {round(100 * t.level, 2) for r in c.rows for t in r.tests if t.p is not None}
    return f"{'/'.join(f'{x:g}' for x in sorted(lv))} %" if lv else f"{100 * (1 - c.alpha):g} %"



def _more_repeats(d: Detectable) -> str:
    """How many repeats would detect POWER_TARGET; or, two runs apart, that none would."""
    if d.needed:
        return f"; {d.needed} repeats per cell would detect {100 * POWER_TARGET:.0f} %"
    if d.run_sd and (d.single is None or d.single > POWER_TARGET):
        floor = f"{100 * d.floor:.0f} %" if d.floor is not None else "none"
        return (f"; no number of repeats detects {100 * POWER_TARGET:.0f} % across two runs (the floor is {floor}): "
                "measure both sides in one run (--env BASE --env HEAD, then compare --base/--head)")
    return ""


def format_detectable(d: Detectable | None) -> str:
    if d is None:
        return "smallest detectable change: needs 2 or more repeats per cell"
    one = f"{100 * d.single:.0f} %" if d.single is not None else "none below 100x"
    apart = (f" and each run's own level ({100 * d.run_sd:.1f} %: the two sides are two runs apart)"
             if d.run_sd else "")
    text = (f"smallest change of a median detected with 80 % power at {d.repeats} repeats per cell and the "
            f"spread measured here ({100 * d.spread:.1f} % between repeats){apart}: {one} for one test")
    text += _more_repeats(d)
    if d.tests > 1:
        many = f"{100 * d.corrected:.0f} %" if d.corrected is not None else "none below 100x"
        text += f", {many} for one change among {d.tests} tests"
    return text



def _counts(f: Test, colls: Test) -> tuple[str, str]:
    return f"{wording.fmt(f.a)}->{wording.fmt(f.b)}", f"{wording.fmt(colls.a)}->{wording.fmt(colls.b)}"



def machine_lines(c: Comparison) -> list[str]:
    """One line per reason the machine kept times from being judged (a loaded machine,
    another kind of machine), with what still is judged."""
    reasons = {r.cell: t.not_judged for r in c.rows for t in r.tests if t.not_judged}
    if not reasons:
        return []
    other = [w for w in reasons.values() if w.startswith("other machine")]
    loaded = [w for w in reasons.values() if w.startswith("loaded machine")]
    lines = []
    if other:
        lines.append(f"times are not compared across kinds of machine ({other[0].split(': ', 1)[1]}): collection "
                     "counts are, within the phase a different starting heap gives their schedules, and the "
                     "allocations per step exactly")
    if loaded:
        lines.append(_loaded_line(loaded, len(c.rows)))
    return lines


def _loaded_line(loaded: list[str], cells: int) -> str:
    """The cells whose times a loaded machine kept from a verdict, and what is still judged."""
    return (f"times not judged in {len(loaded)} of {cells} cells ({loaded[0]}"
            + (", and alike in the others" if len(loaded) > 1 else "")
            + "): counts are judged, and a time only where it changed by more than load alone moves "
              f"it (median and mean step at least x{LOAD_MARGIN['median']:g}, more under CPU pressure; GC "
              f"share in CPU time x{LOAD_MARGIN['gc_share']:g})")



def _comparison_row(r: PairRow) -> list[str]:
    """One cell's row of the comparison table: counts A->B, then the times and their changes."""
    by = {t.metric: t for t in r.tests}
    m, g, f, mean, colls = by["median"], by["gc_share"], by["full_rate"], by["mean"], by["collections"]
    pressure = by.get("pressure")
    cpu = " cpu" if g.note.startswith("in CPU time") else ""
    return [r.cell + (" (forced)" if r.forced else "") + (" (paired by round)" if m.paired else ""),
            *_counts(f, colls), f"{wording.fmt(pressure.a)}->{wording.fmt(pressure.b)}" if pressure else "-",
            f"{100 * (g.a or 0.0):.2f}->{100 * (g.b or 0.0):.2f}{cpu}",
            f"{wording.fmt(m.a)}->{wording.fmt(m.b)}", _judged_change(m),
            f"{wording.fmt(mean.a)}->{wording.fmt(mean.b)}", _judged_change(mean)]


def _judged_change(t: Test) -> str:
    """A time's change and interval, or that it was not judged."""
    return NOT_JUDGED if t.not_judged else _change(t)



def _comparison_words(r: PairRow) -> str:
    """One cell's verdicts in words, under its row."""
    by = {t.metric: t for t in r.tests}
    f, memory = by["full_rate"], by.get("peak_rss")
    words = r.summary or overall(r.tests)
    why = _why_undecided(r.tests[0]) if r.tests else ""
    extra = f"; peak memory {wording.fmt(memory.a)}->{wording.fmt(memory.b)} MiB {_change(memory)}" if memory else ""
    return (f"  {words}" + (f" ({why})" if why else "") +
            (" (full collections exact: fixed schedules)" if f.exact and not f.phase and (f.a or f.b) else "") + extra)


def _why_undecided(t: Test) -> str:
    """Why the first test could not be tested at all (too few repeats, ...); empty otherwise."""
    return t.note if t.note and t.verdict == "inconclusive" and t.p is None else ""



def _what_was_tested(c: Comparison) -> str:
    """What was tested, and how: the metrics, the correction and the intervals' levels."""
    named = ", ".join(NAMES[m] for m in SAID_ORDER if any(t.metric == m for r in c.rows for t in r.tests))
    if not named:
        return "nothing tested"
    return (f"tests of the {named}: {c.tests} with a p-value, corrected together (Benjamini-Hochberg, false "
            f"discovery rate {c.alpha:g}); intervals at {levels(c)} (false coverage rate {c.alpha:g})")



def format_comparison(c: Comparison) -> str:
    """The comparison as a table, counts first: per cell, full collections and collections
    per 1,000 steps, the GC share, then the typical step (median) and the time a run takes
    (mean step) with their changes and intervals, then the cell's verdicts in words: the
    answer first. After it, where the machine did not allow times to be judged, one line
    says so; the method; the smallest detectable change and what was refused or left out."""
    head = ["cell", "full/1000 A->B", "colls/1000 A->B", "allocs/step A->B", "GC % A->B", "median ms A->B",
            "median change (CI)", "mean ms A->B", "mean change (CI)"]
    body = [_comparison_row(r) for r in c.rows]
    verdicts = [_comparison_words(r) for r in c.rows]
    # the table and its verdicts first (the command's answer), then what they rest on
    # too wide for the terminal: the A->B values go before the changes and their intervals
    lines = terminal.table(head, body, drop=(7, 5, 3, 2, 4),
                           extra={i: [terminal.wrap(w.strip(), "  ", "    ")] for i, w in enumerate(verdicts)})
    if not body:
        lines.append("(no cell ran ok in both folders)")
    return "\n".join(lines + _evidence_lines(c))


def _evidence_lines(c: Comparison) -> list[str]:
    """After the table: what the machine kept from being judged, the method, the smallest
    detectable change (where a median was judged), what was refused, and the notes."""
    lines = [terminal.wrap(x) for x in machine_lines(c)]
    lines.append(terminal.wrap("repeats are the unit; counts first (exact where schedules are fixed); "
                               f"{_what_was_tested(c)}; minimum effect {100 * c.min_effect:g} %"))
    if any(t.metric == "median" and not t.not_judged for r in c.rows for t in r.tests):
        lines.append(terminal.wrap(format_detectable(c.detectable)))
    if c.refused:
        lines.append("refused (settings differ; --force compares them anyway):")
        lines += [terminal.wrap(x, "  ", "    ") for x in c.refused]
    return lines + [terminal.wrap(x) for x in c.notes]
