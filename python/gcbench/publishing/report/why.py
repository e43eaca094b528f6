"""The report's "Why" section, from the explanations (`gcbench explain`) in a results folder:
the top sources of promotions, what full collections scan, the collector's rule against
what was observed, recommendations, and a plot of promotions and of the oldest generation."""

from __future__ import annotations

import pathlib

from ...analysing import gc_causes
from ...analysing.explanation_records import Explanation, FullInterval, JuliaAllocs, PythonDiagnosis
from ...core import wording
from ...measuring.results import ResultDoc
from .. import explanation_text
from . import plots
from .document import Bullets, Heading, Image, Para, Table, code, escape


def _top(counter: dict, total: int, n: int = 4) -> str:
    return "; ".join(f"{escape(k)} {100 * v / total:.0f} %" for k, v in list(counter.items())[:n]) if total else "-"


def _julia_row(e: Explanation, jl: JuliaAllocs) -> list[str]:
    total = max(sum(v[0] for v in jl.by_package.values()), 1)

    def by(t):
        return "; ".join(f"{escape(k)} {100 * v[0] / total:.0f} %"
                         for k, v in sorted(t.items(), key=lambda kv: -kv[1][0])[:4])
    return [escape(e.label + explanation_text.qualifiers(e)), f"{jl.samples:,} sampled allocations",
            by(jl.by_type), by(jl.by_package), by(jl.by_site), "-", "-"]


def _python_row(e: Explanation, py: PythonDiagnosis, fi: FullInterval) -> list[str]:
    pr, sc = py.promoted, py.scanned
    before = sc.origin.get("before the timed steps", 0) / max(sum(sc.origin.values()), 1)
    scans = (f"{sc.total / sc.collections:,.0f} objects, {100 * before:.0f} % from before the timed steps"
             if sc.collections else f"no full collection (oldest: {fi.oldest_objects:,.0f})")
    predicted = "never" if fi.predicted is None else f"{fi.predicted:,.0f}"
    observed = f"{fi.observed:,.0f}" if fi.observed else f"{fi.full_collections} in {py.steps}"
    traced = gc_causes.traced_sites(pr)
    return [escape(e.label + explanation_text.qualifiers(e)), f"{wording.fmt(fi.promoted_per_step)} per step",
            _top(pr.by_type, pr.total), _top(pr.by_package, pr.total),
            escape(gc_causes.why_no_sites(py) or "") or _top(traced, sum(traced.values()), 3), scans,
            f"{predicted} / {observed}"]


def _row(e: Explanation) -> list[str]:
    if e.julia is not None:
        return _julia_row(e, e.julia)
    if e.python is None or e.full_interval is None:
        return [escape(e.label + explanation_text.qualifiers(e)), "-", "-", "-", "-", "-", "-"]
    return _python_row(e, e.python, e.full_interval)


def _notes(e: Explanation) -> list[str]:
    """What the table does not say of one cell: its cyclic garbage, the user's lines, advice."""
    name = code(e.label) + escape(explanation_text.qualifiers(e))
    notes = []
    if e.python is not None and e.python.garbage.total:
        g = e.python.garbage
        notes.append(f"{name}: {g.total:,} objects of cyclic garbage: {_top(g.by_type, g.total)}.")
    elif e.python is not None:
        notes.append(f"{name}: no cyclic garbage: the collections freed {e.collected:,} objects.")
    called = e.python.promoted.by_user_site if e.python is not None else None
    if called:
        total = sum(called.values())
        notes.append(f"{name}: promoted objects by the line of your code they came from: "
                     + "; ".join(f"{escape(k)} {100 * v / total:.0f} %" for k, v in list(called.items())[:4]) + ".")
    for r in e.recommendations:
        notes.append(f"{name}: {escape(r.text)}" + (f" ({escape(r.effect)})" if r.effect else ""))
    return notes


def section(stored: list[Explanation], docs: list[ResultDoc], out_dir: pathlib.Path, written: list) -> list:
    # the effects' tests are the Findings' (one corrected p-value per comparison in a report)
    explanations = [gc_causes.derive(e, docs, tests=False) for e in stored]
    blocks = [Heading("Why"),
              Para("From `gcbench explain`: each cell ran once more in a diagnostic worker that watches every "
                   "collection (its timings are disturbed and not used above). Promoted objects are those that "
                   "survived a collection of generation 1 into the oldest generation; a full collection scans the "
                   "whole oldest generation. Sites are the innermost frame outside the standard library that "
                   "allocated the object (`loop`: gcbench's own training loop; `gcbench`: its step code), traced "
                   "over the run's last steps (tracemalloc slows the steps tens of times), shares of those traced.")]
    rows = [_row(e) for e in explanations]
    blocks.append(Table(["cell", "promoted", "by type", "by package", "by site", "a full collection scans",
                         "steps between full collections: predicted / observed"], rows))
    notes = [note for e in explanations for note in _notes(e)]
    if notes:
        blocks.append(Bullets(notes))
    figure = plots.why_figure(explanations, out_dir / "why.png")
    if figure is not None:
        blocks.append(Image(figure, "promotions per step and the oldest generation over the diagnostic runs",
                            "One row per explained cell. Left: objects that reached the oldest generation at each "
                            "step (they come in bursts, at the collections of generation 1), on one scale for every "
                            "row, the line their mean, the table's figure; right: the oldest generation's size, with "
                            "a dotted line at each full collection "
                            "(the collector runs one when the objects promoted since the last one reach a quarter "
                            "of those it holds)."))
        written.append(figure)
    return blocks
