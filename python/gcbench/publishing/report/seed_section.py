"""The report's first section for `gcbench reproduce`: one table of every seed's claims,
what the seed reported, what was measured here, their ratio and the verdict; then each
case's settings and why they were chosen."""

from __future__ import annotations

from ...analysing.seed_cases import Case, Reproduction, Row
from .document import Bullets, Heading, Para, Table, escape, prose


def setting(value) -> str:
    """A setting as a reader writes it: `a, b, c` for a list, `vit: 1` for a mapping."""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(setting, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}: {setting(v)}" for k, v in value.items())
    return str(value)


def answer(doc: Reproduction) -> str:
    """A reproduction's answer, for the top of its report: every claim of the seeds counted,
    reproduced (those matched only through the widened interval named), partly, not, or not
    run with why; a setting (a figure matched by construction) is not a claim."""
    rows = [(case.seed.split(":")[0], r) for case in doc.cases for r in case.rows]
    claims = [(seed, r) for seed, r in rows if r.verdict != "setting"]
    by: dict[str, list[tuple[str, Row]]] = {}
    for seed, r in claims:
        by.setdefault(r.verdict.split(" (")[0], []).append((seed, r))
    return escape(". ".join([_tally(len(claims), by), *_claims_by_verdict(by)]) + ".")


def _tally(claims: int, by: dict[str, list[tuple[str, Row]]]) -> str:
    """How many claims reproduced (how many only within the widened interval), and how many
    partly, not, or not run."""
    reproduced = by.get("reproduced", [])
    widened = [(seed, r) for seed, r in reproduced if r.verdict != "reproduced"]
    counts = [f"{len(by.get(k, []))} {k}" for k in ("partly", "not", "not run") if by.get(k)]
    return (f"Of the seeds' {claims} claims, {len(reproduced)} reproduced"
            + (f" ({len(widened)} of them only within the interval widened for the hardware)" if widened else "")
            + (", " + ", ".join(counts) if counts else ""))


def _claims_by_verdict(by: dict[str, list[tuple[str, Row]]]) -> list[str]:
    """The claims named under their verdict; those not run grouped by why."""
    parts = []
    if by.get("reproduced"):
        parts.append("reproduced: " + "; ".join(f"{seed}: {r.claim}" + (" (only within the widened interval)"
                                                                            if r.verdict != "reproduced" else "")
                                                for seed, r in by["reproduced"]))
    for kind in ("partly", "not"):
        if by.get(kind):
            parts.append(f"{kind}: " + "; ".join(f"{seed}: {r.claim}" for seed, r in by[kind]))
    if by.get("not run"):
        parts.append(_not_run(by["not run"]))
    return parts


def _not_run(rows: list[tuple[str, Row]]) -> str:
    """The claims not run, grouped by why."""
    why: dict[str, list[str]] = {}
    for seed, r in rows:
        why.setdefault(r.reason or "no reason recorded", []).append(f"{seed}: {r.claim}")
    return "not run: " + "; ".join(f"{', '.join(claims_)} ({reason})" for reason, claims_ in why.items())


def section(doc: Reproduction) -> list:
    """The reproductions: each seed's figures beside what was measured, then each case's settings."""
    rows = []
    for case in doc.cases:
        for r in case.rows:
            verdict = r.verdict + (f" ({r.reason})" if r.reason else "")
            rows.append([escape(case.seed.split(":")[0]), escape(r.claim), escape(r.seed_value),
                         escape(r.measured), escape(r.ratio), prose(verdict)])
    blocks = [Heading("Reproductions"),
              Para("Each seed report's figures next to what gcbench measured here. Verdicts: reproduced, partly, "
                   "not, or not run (with the reason); a setting is a figure matched by construction. Intervals "
                   "are 95 %, over the repeats; full collections are given as their schedule per repeat."),
              Para(escape(doc.rule or "")),
              Table(["seed", "claim", "the seed reported", "measured here", "ratio", "verdict"], rows,
                    align_right=(4,))]
    for case in doc.cases:
        blocks += _case_blocks(case)
    return blocks


def _calibration_table(cal: dict) -> list:
    """The calibration's median step per batch, the batch chosen marked; none without one."""
    if not cal.get("medians_ms"):
        return []
    return [Table(["batch", "median step, ms (equinox-filter, collector off)"],
                  [[b, f"{m:.3g}" + (" (chosen)" if int(b) == cal.get("chosen") else "")]
                   for b, m in cal["medians_ms"].items()], align_right=(0, 1))]


def _case_blocks(case: Case) -> list:
    """A case's heading, why, settings, the batch it calibrated and the JAX family beside it."""
    s = case.settings
    items = [f"{escape(k.replace('_', ' '))}: {escape(setting(v))}" for k, v in s.items() if k != "why"]
    blocks: list = [Heading(f"{case.name}: seed {escape(case.seed)}", 3)]
    if s.get("why"):
        blocks.append(Para(escape(s["why"]) + "."))
    if items:
        blocks.append(Bullets(items))
    blocks += _calibration_table(case.calibration or {})
    if case.context:
        blocks.append(Para("The same networks in the JAX family, beside them:"))
        blocks.append(Table(["cell", "networks", "median ms", "GC %", "full collections"],
                            [[escape(x) for x in row] for row in case.context], align_right=(1, 2, 3)))
    return blocks
