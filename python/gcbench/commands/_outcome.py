"""What a finished run prints (`gcbench run`, and each run of bisect and reproduce): the
verdict first, then one line per cell, the flags' legend, the smallest detectable change
and the counts of runs."""

from __future__ import annotations

from collections.abc import Callable

from ..analysing import comparison, summary
from ..core import terminal, wording
from ..flows.pipeline import RunOutcome
from ..measuring import results
from ..measuring.results import ResultDoc
from ..publishing import comparison_text, interval_text, verdict


def _detectable_line(docs: list[ResultDoc]) -> str:
    """The smallest change the repeats would detect; none from a loaded machine, whose
    spread says nothing of a quiet one's power."""
    ok_cells = [comparison.repeat_values(ds) for ds in summary.cells(docs).values() if results.ok(ds)]
    if any(v.loaded for v in ok_cells):
        return ("smallest detectable change: none given, the repeats ran on a loaded machine (their times are not "
                "judged); measure on a quiet machine for one")
    return comparison_text.format_detectable(comparison.detectable(ok_cells, comparison.ALPHA))


def present(outcome: RunOutcome, out_fn: Callable[..., None]) -> None:
    """What a finished run prints: the verdict, the table, the flags' legend, the smallest
    detectable change and the counts of runs."""
    docs, out_dir, seconds, superseded = outcome.docs or [], outcome.folder, outcome.seconds, outcome.superseded
    measured, failed = outcome.tally()
    out_fn()
    cells_summarized = summary.summarize_all(docs)
    answer = verdict.sentences(cells_summarized)
    if answer:  # the answer first, the table after it
        out_fn(format_verdict(answer))
        out_fn()
    out_fn(format_summary(docs, cells_summarized))
    if any(cs.stats and cs.stats.flagged for cs in cells_summarized):
        out_fn(terminal.wrap(FLAG_LEGEND))
    out_fn(terminal.wrap(_detectable_line(docs)))
    out_fn(f"\n{len(docs)} runs in {seconds:.0f} s: {measured} ok, {failed} failed, "
           f"{len(docs) - measured - failed} unavailable; results in {out_dir}")
    if superseded:
        out_fn(f"gcbench: {len(superseded)} runs failed this time and their earlier ok results were kept (the table "
               "above shows those earlier results): " + ", ".join(superseded[:5]))
    if not measured:
        out_fn("gcbench: nothing was measured")


FLAG_LEGEND = ("flags: \"N flagged\" counts a cell's repeats whose step times drifted within the repeat or whose "
               "machine was loaded meanwhile; they are left out of its times where 3 unflagged repeats remain (a run "
               "measures one replacement repeat per such cell, none while the machine stays loaded), and their "
               "collections always count (the report's \"Unstable measurements\" says which and why); \"loaded\": "
               "the cell's times rest on loaded repeats, so they are not judged and its GC % is of CPU time")


def format_verdict(sentences: list[str]) -> str:
    """The verdict for a terminal: one paragraph per sentence, wrapped to the width."""
    return "\n".join(["verdict:"] + [terminal.wrap(x, "  ", "    ") for x in sentences])


def _not_run_row(cs: summary.CellSummary, reasons: dict[str, int]) -> list[str]:
    """A cell that did not run: its status, and the number of its reason, written once below
    the table (`reasons` numbers them as they come)."""
    d = cs.docs[0]
    reason = d.reason.splitlines()[0] if d.reason else ""
    note = f"[{reasons.setdefault(reason, len(reasons) + 1)}]" if reason else ""
    return [cs.label, d.status, "", "", "", "", "", "", note]  # the columns of `format_summary`


def _cell_row(label: str, s: summary.CellStats, cpu: bool) -> list[str]:
    """A cell that ran: counts first, then its shares and times, then its flags."""
    flags = ", ".join(([f"{len(s.flagged)} flagged"] if s.flagged else []) + (["loaded"] if s.loaded else []))
    # a loaded machine's times are not judged: the value alone, no interval to read as one
    median = wording.fmt(s.median_ms) if s.loaded else \
        interval_text.fmt_paren(s.median_ms, s.median_ci_ms, values=s.repeat_medians_ms)
    return [label, f"ok x{s.repeats}", wording.short_schedule(s.full.schedule) if s.full.count else "none",
            f"{100 * verdict.share(s, cpu):.2f}", median, wording.fmt(s.mean_ms), wording.fmt(s.p99_ms),
            f"{100 * s.host_share:.1f}" if s.host_share is not None else "-", flags]


def format_summary(docs: list[ResultDoc], cells: list[summary.CellSummary] | None = None) -> str:
    """One line per cell, its repeats combined, counts first: full collections, GC share, then
    median with interval, mean step, p99, host share and flags; cells that did not run point
    to their reason, written once below
    the table however many cells share it. `cells`: `summary.summarize_all(docs)`, when the
    caller has it already."""
    rows: list[list[str]] = []
    reasons: dict[str, int] = {}
    cells = summary.summarize_all(docs) if cells is None else cells
    cpu = verdict.in_cpu_time([cs.measured for cs in cells if cs.ok])  # one GC share for the table, said in its head
    for cs in cells:
        rows.append(_not_run_row(cs, reasons) if cs.stats is None else _cell_row(cs.label, cs.stats, cpu))
    # counts first (exact, and judged under load), then the shares and times
    head = ["cell", "status", "full collections", "GC % of CPU" if cpu else "GC % of wall", "median ms (95 % CI)",
            "mean ms", "p99 ms", "host %", "flags"]
    notes = [terminal.wrap(f"[{n}] {reason}", "", "    ") for reason, n in reasons.items()]
    # wider than the terminal: p99 and host share go first, then the cell moves above its row
    return "\n".join(terminal.table(head, rows, left={0, 1, 2, 8}, drop=(6, 7)) + notes)
