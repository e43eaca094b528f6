"""How numbers, ranges and collection schedules read in gcbench's text, in one place for
every layer: what analysis words into its records' reasons, and what the commands and the
reports print (`fmt` gives 3 significant digits, thousands separated above 1,000). The
intervals' wording, which names the statistics' rules, is publishing's
(`publishing.interval_text`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

SCHEDULE_SHOWN = 8  # steps of a schedule written out before "and N more"


if TYPE_CHECKING:  # a type only, so a worker's heap (which a run measures) holds no more objects than before
    from typing import Protocol

    class Schedule(Protocol):
        """What a schedule's wording reads (`analysing.stats.Schedule`, a frozen record)."""

        @property
        def counts(self) -> list[int]: ...
        @property
        def steps(self) -> list[int]: ...
        @property
        def repeats(self) -> int: ...
        @property
        def constant(self) -> bool: ...
        @property
        def same_steps(self) -> bool | None: ...
        @property
        def at(self) -> list[int] | None: ...
        @property
        def total(self) -> int: ...
        @property
        def total_steps(self) -> int: ...


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for people: 3 significant digits, thousands separated above 1,000."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def fmt_signed(x: float) -> str:
    """+112, -0.0746: a difference, with its sign."""
    return ("+" if x >= 0 else "") + fmt(x)


def fmt_range(lo: float, hi: float) -> str:
    """`12.8-29.8`, or `-0.672 to 0.561` when a bound is negative (a dash would read as a minus)."""
    return f"{fmt(lo)}{' to ' if min(lo, hi) < 0 else '-'}{fmt(hi)}"


def format_schedule(sched: Schedule, what: str = "full collections") -> str:
    """`4 full collections in every repeat of 300 steps, at steps 82, 145, 193, 236`;
    `2, 3, 2 full collections in the repeats of 300 steps (7 in 900)` when they vary."""
    counts, steps = sched.counts, sched.steps
    of = f"{steps[0]:,} steps" if len(set(steps)) == 1 else f"{'/'.join(f'{n:,}' for n in steps)} steps"
    if sched.repeats == 1:
        return f"{_counted(counts[0], what)} in {of} (one repeat)"
    if not sched.total:
        return f"no {what} in any repeat of {of}"
    if not sched.constant:
        each = ", ".join(f"{c:,}" for c in counts)
        return f"{each} {what} in the repeats of {of} ({sched.total:,} in {sched.total_steps:,})"
    return f"{_counted(counts[0], what)} in every repeat of {of}" + _steps_said(sched)


def _counted(n: int, what: str) -> str:
    """`1 full collection`, `4 full collections`."""
    return f"{n:,} {what[:-1] if n == 1 and what.endswith('s') else what}"


def _steps_said(sched: Schedule) -> str:
    """Where a constant count's collections fell: ", at steps 82, 145, ..." where every
    repeat had them at the same steps, " (at different steps)" where not, nothing where
    the steps are not known."""
    if sched.same_steps is None:
        return ""
    if not sched.same_steps:
        return " (at different steps)"
    at = sched.at or []
    shown = ", ".join(str(s) for s in at[:SCHEDULE_SHOWN])
    more = len(at) - SCHEDULE_SHOWN
    return f", at step{'s' if len(at) > 1 else ''} {shown}" + (f" and {more} more" if more > 0 else "")


def short_schedule(sched: Schedule) -> str:
    """`4 in every repeat`, `2, 3, 2 per repeat`, `none`: a schedule for a table cell."""
    counts = sched.counts
    if not sched.total:
        return "none"
    if sched.repeats == 1:
        return f"{counts[0]:,} (one repeat)"
    if sched.constant:
        return f"{counts[0]:,} in every repeat" + (", same steps" if sched.same_steps else "")
    return f"{', '.join(f'{c:,}' for c in counts)} per repeat"
