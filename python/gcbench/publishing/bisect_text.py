"""Bisects as tables of text, for the terminal and the report alike: a package's releases
(`analysing.version_bisect.VersionTable`), one row per version with its change from the one
before and what backs it; and its commits (`analysing.gitbisect.CommitTable`), each
tested commit's decision as a reader takes it."""

from __future__ import annotations

from ..analysing import stats
from ..analysing.gitbisect import CommitRow, CommitTable, Culprit, change
from ..analysing.version_bisect import SHOWN_ANYWAY, VersionRow, VersionTable
from ..core import wording


def release_rows(tab: VersionTable, mark: str) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows as strings, for the terminal and the report alike. The
    first change has `mark` after its change; a version that did not run has "-" for its
    numbers and its status and reason in the last column."""
    unit = "" if tab.unit == "x" else f" {tab.unit}"
    own = tab.metric not in SHOWN_ANYWAY  # p99 and max/median get a column of their own
    header = ["version", "python", "jax", "runs", "median ms", "mean ms", "GC %", "full/1000"] + \
        ([f"{tab.metric}{unit}"] if own else []) + ["change"]
    return header, [_release_row(r, len(header), own, mark) for r in tab.rows]


def _release_row(r: VersionRow, columns: int, own: bool, mark: str) -> list[str]:
    """One version's row: what ran, then its numbers and change (`own`: the metric's own
    column too), or "-" and why it did not run."""
    first = [r.version, r.python or "-", r.packages.get("jax", "-"), f"{r.ok}/{r.runs}"
             + (f" ({r.used} used)" if r.used is not None and r.used < r.ok else "")]
    if r.status != "ok" or r.value is None:
        return first + ["-"] * (columns - 5) + [f"{r.status}: {r.reason or ''}"]
    return first + [wording.fmt(r.median_ms or 0.0), wording.fmt(r.mean_ms), f"{r.gc_share_pct or 0.0:.2f}",
                    f"{r.full_per_1000 or 0.0:.1f}"] + ([wording.fmt(r.value)] if own else []) + \
        [_release_change(r) + (mark if r.first_change else "")]



def _release_change(r: VersionRow) -> str:
    """A row's change from the version before, and what backs it."""
    if r.change is None:
        return ""
    return ("inf" if r.change == float("inf") else f"x{r.change:.2f}") + (
        f" (p={r.p_adj:.2g})" if r.p_adj is not None else
        " (exact: fixed schedules)" if r.exact else
        f" (not judged: {r.not_judged})" if r.not_judged else
        (f" (untested: fewer than {stats.MIN_PROCESSES} repeats)" if not r.tested else ""))



def release_table(tab: VersionTable) -> str:
    """The table as text, with the first change marked."""
    header, rows = release_rows(tab, f"  <- first change > {tab.factor:g}x")
    ran = [row for row in rows if row[4] != "-"]
    widths = [max([len(h)] + [len(row[i]) for row in ran] + [len(row[i]) for row in rows if i < 4])
              for i, h in enumerate(header)]

    def line(cells):
        # strict=False: a row without the first change's mark is one cell shorter than the header
        return "  ".join(c.ljust(w) if i < 4 or i == len(header) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=False))).rstrip()

    out = [f"{tab.package} bisect of {tab.cell}: {tab.metric_title}", line(header)]
    out += [line(row) if row[4] != "-" else line(row[:4]) + "  " + row[-1] for row in rows]  # a reason takes the rest
    return "\n".join(out + _release_notes(tab))


def _release_notes(tab: VersionTable) -> list[str]:
    """Under the table: that no version changed the metric (where none did), and the
    versions asked for that have no result."""
    out = []
    if tab.first_change is None:
        out.append(f"no version changes {tab.metric} by more than {tab.factor:g}x over the one before "
                   f"that the repeats show (exactly for fixed schedules, else by a test corrected by "
                   f"Benjamini-Hochberg at {tab.alpha:g})")
    if tab.missing:
        out.append(f"no results for {', '.join(tab.missing)}")
    return out


def marker(tab: CommitTable) -> str:
    """What the first commit with the change is called: "first bad" for a regression; for an
    improvement what it brought, "fewer full collections" (never "bad")."""
    return change(tab) if tab.better else "first bad"



def decision_text(tab: CommitTable, row: CommitRow) -> str:
    """A row's decision as a reader takes it, the first commit with the change marked."""
    shown = shown_decision(tab, row.decision)
    return f"{shown} ({marker(tab)})" if row.sha == tab.first_bad else shown



def shown_decision(tab: CommitTable, decision: str) -> str:
    """A row's decision as a reader takes it: good/bad for a regression, before/after the
    change for an improvement (where "bad" would call the fix a regression)."""
    if not tab.better:
        return decision
    return decision.replace("good", "before").replace("bad", "after")



def commit_table(tab: CommitTable, culprit: Culprit | None = None) -> str:
    """The commit bisect as the terminal shows it: every tested commit, the endpoints, the
    builds it took, and the culprit's message and files where one was found."""
    lines = [f"commit bisect of {tab.package} on {tab.cell}: {tab.metric_title}"
             + (f" ({tab.unit})" if tab.unit else ""), ""]
    head = f"{'commit':<10} {'date':<10} {'value':>10}  {'per repeat':<24} {'decision':<16} subject"
    lines += [head, "-" * len(head)]
    lines += [_commit_line(tab, r) for r in tab.rows]
    lines += ["", f"endpoints: {tab.endpoints}",
              f"builds: {tab.builds} for {tab.commits_between} commits (at most {tab.max_builds})"]
    if tab.first_bad and culprit:
        lines += ["", f"{marker(tab)} from commit {tab.first_bad}" if tab.better else
                  f"first bad commit: {tab.first_bad}", *("    " + x for x in culprit.message.splitlines()),
                  "files changed: " + ", ".join(culprit.files)]
    elif tab.unresolved:
        lines.append(tab.unresolved)
    return "\n".join(lines)


def commit_values(r: CommitRow, width: int) -> tuple[str, str]:
    """A tested commit's value ("-" without one) and its repeats' values, or why it has none
    (cut to `width`): the terminal's table and the report's say the same."""
    value = "-" if r.value is None else f"{r.value:.3g}"
    return value, ", ".join(f"{v:.3g}" for v in r.per_repeat) or (r.why_not or "")[:width]


def _commit_line(tab: CommitTable, r: CommitRow) -> str:
    """A tested commit: its value and per-repeat values (or why it has none), its decision
    and subject, the first bad one marked."""
    value, per = commit_values(r, 24)
    mark = f" <- {marker(tab)}" if r.sha == tab.first_bad else ""
    return (f"{r.sha[:9]:<10} {r.date:<10} {value:>10}  {per[:24]:<24} {shown_decision(tab, r.decision):<16} "
            f"{r.subject[:60]}{mark}")
