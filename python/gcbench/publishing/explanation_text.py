"""An explanation (`analysing.explanation_records.Explanation`) as the terminal shows it:
counts, what is promoted and from where, what a full collection scans, the predicted and
observed full collections, then the advice."""

from __future__ import annotations

from ..analysing.explanation_records import Explanation, FullInterval, JuliaAllocs, PythonDiagnosis
from ..analysing.gc_causes import sampled_intervals, traced_sites, why_no_sites
from ..core import wording
from ..measuring import diagnose


def _table(title: str, counter: dict, total: int, top: int = 5) -> list[str]:
    rows = _share(counter, total, top)
    if not rows:
        return []
    return [f"  {title}: " + "; ".join(f"{k} {100 * s:.0f} %" for k, _, s in rows)]



def qualifiers(expl: Explanation) -> str:
    """What sets an explanation apart from its cell's label: its environment, and the loop's
    bookkeeping when the loop kept some (` [py3.12] with bookkeeping metrics`)."""
    env = f" [{expl.environment}]" if expl.environment else ""
    bookkeeping = expl.bookkeeping
    return env + (f" with bookkeeping {bookkeeping}" if bookkeeping != "none" else "")



def format_text(expl: Explanation) -> str:
    """An explanation as the terminal shows it: counts, what is promoted and from where,
    what a full collection scans, the predicted and observed full collections, advice."""
    lines = [f"{expl.label}{qualifiers(expl)}: {expl.note}"]
    if expl.julia is not None:
        return "\n".join(lines + _julia_lines(expl.julia))
    py, fi = expl.python, expl.full_interval
    if py is None or fi is None:
        return "\n".join(lines)
    model = py.collector
    lines.append(f"collector: {model.model} (Python {expl.python_version}), thresholds "
                 f"{'/'.join(map(str, py.thresholds))}; {model.note}")
    lines.append(_collections_line(expl, py))
    if py.analysed_until_step is not None:
        when = f"at step {py.analysed_until_step:,}" if py.analysed_until_step >= 0 else "before the first timed step"
        lines.append(f"explain's own time ran past {diagnose.OWN_TIME_S:g} s of CPU {when}: "
                     "the collections after it are counted, not analysed (what they promoted, scanned and freed is "
                     "missing from the figures below)")
    lines += _promoted_lines(py, fi)
    lines += _scanned_lines(py, fi)
    lines.append(_full_interval_line(expl, py, fi))
    if py.garbage.total:
        lines += _table("cyclic garbage by type", py.garbage.by_type, py.garbage.total)
    for r in expl.recommendations:
        lines.append(f"- {r.text}" + (f" ({r.effect})" if r.effect else ""))
    return "\n".join(lines)



def _julia_lines(jl: JuliaAllocs) -> list[str]:
    total = max(sum(v[0] for v in jl.by_package.values()), 1)
    lines = [f"Julia allocations, sampled at {jl.sample_rate:g} over {jl.steps} steps: {jl.samples:,} samples"]
    for title, table in (("by type", jl.by_type), ("by top frame's package", jl.by_package),
                         ("by site", jl.by_site)):
        ordered = sorted(table.items(), key=lambda kv: -kv[1][0])[:6]
        lines.append(f"  {title}: " + "; ".join(f"{k} {100 * v[0] / total:.0f} % ({v[1] / 2**10:,.0f} KiB sampled)"
                                                 for k, v in ordered))
    return lines



def _where_collected(between: list[int], explicit: list[int]) -> str:
    """The collections outside every step and the loop's own gc.collect() calls, where any."""
    return "; ".join(part for part in (
        f"between steps: {sum(between):,}, {between[2]:,} full" if any(between) else "",
        f"explicit gc.collect() calls: {sum(explicit):,}, {explicit[2]:,} full" if any(explicit) else "") if part)


def _collections_line(expl: Explanation, py: PythonDiagnosis) -> str:
    c = expl.counts
    where = _where_collected(expl.between or [0, 0, 0], expl.explicit or [0, 0, 0])
    return (f"collections in {py.steps} steps: {c[0]:,} of generation 0, {c[1]:,} of generation 1, {c[2]:,} full"
            + (f" ({where})" if where else "")
            + f"; objects collected: {expl.collected:,}"
            + (" (no cyclic garbage)" if not expl.collected else "")
            + (f"; uncollectable: {expl.uncollectable}" if expl.uncollectable else ""))



def _promoted_lines(py: PythonDiagnosis, fi: FullInterval) -> list[str]:
    """What reaches the oldest generation: by type, package and (where traced) allocation site."""
    pr = py.promoted
    lines = [f"promoted to the oldest generation: {wording.fmt(fi.promoted_per_step)} objects per step "
             f"({pr.total:,} made during the steps; {pr.made_before_the_steps:,} more made "
             "before them, a one-off)"]
    lines += _table("by type", pr.by_type, pr.total)
    lines += _table("by package defining the type", pr.by_package, pr.total)
    no_sites = why_no_sites(py)
    if no_sites:
        return [*lines, f"  by allocation site: {no_sites}"]
    traced = traced_sites(pr)
    known = sum(traced.values()) if pr.traced is None else pr.traced
    rows = dict(traced)
    if pr.total > known:  # a row of its own: never spread over the sites that were traced
        rows["not traced (a free list's object, or made before tracing began)"] = pr.total - known
    rows = dict(sorted(rows.items(), key=lambda kv: -kv[1]))
    where = f"in {sampled_intervals(py)}" if pr.sampled is not None else f"from step {py.sites_from_step or 0}"
    return lines + _table(f"by allocation site ({known:,} of {pr.total:,} promoted objects traced, {where})", rows,
                          pr.total, top=6)



def _scanned_lines(py: PythonDiagnosis, fi: FullInterval) -> list[str]:
    """What a full collection scans, and how much of it existed before the timed steps."""
    sc = py.scanned
    if not sc.collections:
        return [f"no full collection ran; the oldest generation holds about {fi.oldest_objects:,.0f} objects"]
    per = sc.total / sc.collections
    origin = sc.origin
    before = origin.get("before the timed steps", 0) / max(sum(origin.values()), 1)
    return [f"a full collection scans {per:,.0f} objects: {100 * before:.0f} % existed before the timed "
            f"steps (imports, the model, compiled functions), {100 * (1 - before):.0f} % were made during "
            f"them; frozen (never scanned): {sc.frozen:,}",
            *_table("by type", sc.by_type, sc.total), *_table("by package", sc.by_package, sc.total)]



def _full_interval_line(expl: Explanation, py: PythonDiagnosis, fi: FullInterval) -> str:
    """The full collections the collector's rule predicts, against those observed."""
    x = expl.explicit or [0, 0, 0]
    predicted = "never" if fi.predicted is None else f"every {fi.predicted:,.0f} steps"
    observed = f"every {fi.observed:,.0f} steps" if fi.observed else \
        f"{fi.full_collections} in {py.steps} steps"
    asked = x[2] if len(x) > 2 else 0
    if asked and asked >= fi.full_collections:  # the rule did not make them: the loop called them
        observed = f"none of the collector's own; the {asked:,} full collections were gc.collect() calls"
    elif asked:
        observed += f" ({asked:,} of them gc.collect() calls)"
    return (f"full collections: the collector's rule predicts {predicted} (a quarter of the oldest generation, "
            f"{fi.oldest_objects / 4:,.0f} objects, over {wording.fmt(fi.promoted_per_step)} promoted per step; "
            f"and at least {fi.threshold2 + 1} collections of generation 1); observed {observed}")


def _share(counter: dict, total: int, top: int = 5) -> list[list]:
    return [[k, v, v / total if total else 0.0] for k, v in list(counter.items())[:top]]
