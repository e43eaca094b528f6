"""How an estimate and its interval read: `10.4 (10.1-10.8)`, `95 % 10.1-10.8 ms`, and,
where fewer than `stats.MIN_PROCESSES` repeats give no interval, the values it would rest
on."""

from __future__ import annotations

from ..analysing.stats import LEVEL, MIN_PROCESSES
from ..core.wording import fmt, fmt_range


def fmt_paren(value: float, ci, scale: float = 1.0, values=None) -> str:
    """`10.4 (10.1-10.8)`; without an interval, the values of the processes it rests on:
    `10 (processes 7.5, 13.3)`, or `10.4 (one process)`."""
    v = fmt(value * scale)
    if ci is not None:
        return f"{v} ({fmt_range(ci[0] * scale, ci[1] * scale)})"
    return f"{v} ({fmt_values(values, scale)})"


def fmt_values(values, scale: float = 1.0) -> str:
    """`processes 7.5, 13.3` (the per-process values where too few give no interval), or
    `one process`."""
    if values is None or len(values) < 2:
        return "one process"
    return "processes " + ", ".join(fmt(x * scale) for x in values)


def fmt_ci(ci, scale: float = 1.0, unit: str = "", level: float = LEVEL, values=None) -> str:
    """`95 % 10.1-10.8 ms`; without an interval, the per-process values it would rest on."""
    if ci is None:
        return f"no interval from fewer than {MIN_PROCESSES} processes" + (
            f" ({fmt_values(values, scale)}{(' ' + unit) if unit else ''})"
            if values is not None and len(values) > 1
            else ""
        )
    return f"{100 * level:g} % {fmt_range(ci[0] * scale, ci[1] * scale)}{(' ' + unit) if unit else ''}"
