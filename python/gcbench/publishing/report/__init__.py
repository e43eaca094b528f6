"""`gcbench report`: a results folder -> index.md, self-contained index.html, PNG plots and
the raw results (`results.tar.gz`), in a folder of the report's own that gcbench alone
writes (a `.gcbench-report.json` marker lists its files) and that rebuilds from its own
results. Any mix of results reads: failed, unavailable and never-run cells are listed.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from ...analysing import claims, gitbisect, stats, summary
from ...analysing.explanation_records import Explanation
from ...analysing.seed_cases import Reproduction
from ...analysing.version_bisect import VersionTable
from ...core import files, metadata, records, wording
from ...core.errors import UsageError
from ...measuring import plans, program_memory, results
from ...measuring.plans import Plan
from ...measuring.results import ResultDoc
from .. import archive, interval_text, verdict
from . import environments, findings, plots, seed_section
from . import why as why_section
from .document import Bullets, Heading, Image, Para, Table, code, escape, natural_key, prose, to_html, to_markdown

MARKER = ".gcbench-report.json"
MARKER_FORMAT = "gcbench-report-folder"
MARKER_VERSION = 2  # 1: names only (trusted nothing now); 2: names with sizes and SHA-256
STAGING = ".gcbench-staging-"  # + PID + "-": where a report is built before its files move in
# The names a report writes, and only those: a marker listing anything else (thesis.md) is refused
_OWN_NAME = re.compile(r"^(index\.md|index\.html|results\.tar\.gz|bisect\.png|gitbisect\.png|why\.png|"
                       r"(summary|gc_split|cumulative_gc|pauses|ecdf|trace|env_matrix)_[A-Za-z0-9][A-Za-z0-9_.-]*\.png)$")
_TEMP_OF = re.compile(r"^\.(.+)\.[A-Za-z0-9_]+\.tmp$")  # files.write_bytes's temporary of a file
_STAGING_NAME = re.compile(rf"^{re.escape(STAGING)}(\d+)-[A-Za-z0-9_]+$")


def _stale_staging(path: pathlib.Path) -> bool:
    """Whether `path` is a staging folder a killed report left: named as gcbench names them,
    its process gone, and holding nothing but files a report writes. Anything else with a
    similar name is someone else's, never removed."""
    m = _STAGING_NAME.match(path.name)
    if not m or not path.is_dir() or path.is_symlink() or files.process_alive(int(m.group(1))):
        return False
    try:
        return all(p.is_file() and not p.is_symlink() and _OWN_NAME.match(_TEMP_OF.sub(r"\1", p.name))
                   for p in path.iterdir())
    except OSError:
        return False


def _still_ours(path: pathlib.Path, record) -> bool:
    """Whether `path` is a plain file whose size and content are what gcbench recorded."""
    try:
        return (isinstance(record, dict) and path.is_file() and not path.is_symlink()
                and path.stat().st_size == record.get("size") and files.sha256(path) == record.get("sha256"))
    except OSError:
        return False


def default_out(source: pathlib.Path) -> pathlib.Path:
    """Where a report goes by default: a report folder (or its archive) is rebuilt in place;
    a results folder `X` gets `reports/X`."""
    source = pathlib.Path(source)
    folder = source if source.is_dir() else source.parent
    if (folder / MARKER).is_file() and (folder / archive.NAME).is_file():
        return folder
    return pathlib.Path("reports") / (source.resolve().name.removesuffix(".tar.gz") if source.is_file()
                                      else source.resolve().name)


def _marker(out_dir: pathlib.Path) -> dict:
    """What gcbench wrote into `out_dir` before (`files`, `title`); `{}` for a new or empty
    folder; a `UsageError` when the folder holds anything of someone else's."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"report folder {out_dir} exists and is not a folder")
    if not out_dir.exists():
        return {}
    marker = out_dir / MARKER
    if marker.is_file():
        return _read_marker(marker, out_dir)
    if any(p.name != files.LOCK_NAME and not _stale_staging(p) for p in out_dir.iterdir()):
        raise UsageError(f"report folder {out_dir} holds files gcbench did not write; give --out an empty "
                         "or new folder")
    return {}


def _refuse_foreign(marker: pathlib.Path, listed) -> None:
    """A marker that lists a file gcbench never writes into a report folder."""
    bad = [f for f in listed if not (isinstance(f, str) and _OWN_NAME.match(f))]
    if bad:
        raise UsageError(f"{marker}: lists {str(bad[0])[:80]!r}, not a file gcbench writes into a report folder")


def _read_marker(marker: pathlib.Path, out_dir: pathlib.Path) -> dict:
    """The marker's files still as gcbench wrote them, its title, and whether it is an older
    one (names only); a `UsageError` for a marker that is not one, or lists a file gcbench
    never writes."""
    doc = files.read_json(marker, "report folder marker")
    if not (isinstance(doc, dict) and doc.get("format") == MARKER_FORMAT
            and isinstance(doc.get("files"), (list, dict))):
        raise UsageError(f"{marker}: not a gcbench report marker")
    listed = doc["files"]
    _refuse_foreign(marker, listed)
    # A file is ours to replace or remove only while its content is what we wrote (an older
    # marker, names only, proves nothing: its files count as someone else's).
    owned = {f for f, rec in listed.items() if _still_ours(out_dir / f, rec)} if isinstance(listed, dict) else set()
    return {"files": owned, "title": doc.get("title") if isinstance(doc.get("title"), str) else None,
            "legacy": isinstance(listed, list)}


def _commands_line(commands: list[list[str]]) -> str:
    """The command lines that made the results."""
    if not commands:
        return "Command: ?"
    return "Command" + ("s" if len(commands) > 1 else "") + ": " + "; ".join(code(shlex.join(c)) for c in commands)


def _header(docs: list[ResultDoc], plan: Plan) -> list:
    """"What was run": data, machine, interpreter, loop settings, commands, runs, provenance."""
    ok = results.ok(docs)
    meta = (ok or docs)[0].metadata if docs else {}
    devices = sorted({dev for d in ok for dev in results.part(d, "metadata").get("devices") or []})
    items = [
        _data_line(ok),
        _machines(ok, meta, devices),
        _interpreter_line(docs, meta),
        _loop_line(ok),
        _commands_line(_commands(docs, plan)),
        f"Runs: {len(docs)} ({len(ok)} ok, {sum(d.status == 'failed' for d in docs)} failed, "
        f"{sum(d.status == 'unavailable' for d in docs)} unavailable); measured {escape(meta.get('date', '?'))}",
        _provenance(ok),
    ]
    jobs = _jobs(docs)
    if jobs:
        items.insert(2, jobs)
    return [Heading("What was run"), Bullets(items)]


def _data_line(ok: list[ResultDoc]) -> str:
    kinds = sorted({d.data.get("kind", "?") for d in ok})
    return f"Data: {' and '.join(kinds) or 'none'}" + (
        " (a deterministic MNIST-shaped stand-in: no real MNIST was present)" if kinds == ["synthetic"] else "")


def _interpreter_line(docs: list[ResultDoc], meta: Mapping[str, Any]) -> str:
    if any(d.environment for d in docs):
        return f"Environments: {len(environments.environments(docs))}, with the interpreters and versions listed below"
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("packages", {}).items() if v)
    return f"Python {escape(meta.get('python', '?'))}; {escape(versions)}"


def _loop_line(ok: list[ResultDoc]) -> str:
    """The loop's settings gcbench chose (batch, bookkeeping), and the repeats per cell."""
    own = [d for d in ok if d.backend != "user"]  # a loop measured by gcbench.measure has no batch gcbench set
    repeats = sorted({cs.measured.repeats for cs in summary.summarize_all(ok)}) if ok else []
    return _loop_settings(own) + \
        f"repeats per cell (fresh processes, the unit of inference): {', '.join(map(str, repeats)) or '-'}"


def _loop_settings(own: list[ResultDoc]) -> str:
    """The batch sizes and bookkeeping of gcbench's own loops; a user's loops have their own."""
    if not own:
        return "Loops measured by `gcbench.measure` (their batch and bookkeeping are the user's own); "
    batches = sorted({results.batch_size(d) for d in own}, key=lambda b: (b is None, b or 0))  # old results: None
    books = sorted({d.bookkeeping or "none" for d in own})
    return f"Batch size: {', '.join(map(str, batches))}; bookkeeping in the loop: {', '.join(books)}; "


def _commands(docs: list[ResultDoc], plan: Plan) -> list[list[str]]:
    """The command lines that wrote the folder: the plan's runs, else the results' own; each once."""
    commands: list = [r.command for r in plan.runs if r.command] or \
        sorted({tuple(results.part(d, "metadata").get("command") or []) for d in docs} - {()})
    return list({tuple(c): list(c) for c in commands}.values())  # a command that wrote several times, once


def _provenance(ok: list[ResultDoc]) -> str:
    """Which gcbench measured the ok results (a cell that did not run records no metadata,
    and says nothing of the others): one version, or a mix with its counts."""
    counts: dict[str, int] = {}
    for d in ok:
        who = metadata.describe_gcbench(results.part(d, "metadata").get("gcbench"))
        counts[who] = counts.get(who, 0) + 1
    if not counts:
        return "Measured with: no run ran ok"
    if len(counts) == 1:
        return "Measured with " + escape(next(iter(counts)))
    return "Measured with a mix of versions: " + escape("; ".join(f"{who} ({n} runs)" for who, n in
                                                                   sorted(counts.items(), key=lambda x: -x[1])))


def _machine_kind(kind: str, mine: list[ResultDoc]) -> str:
    """A kind of machine: its runs, and the nodes they ran on (the first four named)."""
    hosts = sorted({results.part(d, "metadata").get("hostname") or "?" for d in mine})
    return (f"{escape(kind)} ({len(mine)} runs on {len(hosts)} node{'s' if len(hosts) > 1 else ''}: "
            f"{escape(', '.join(hosts[:4]))}{', ...' if len(hosts) > 4 else ''})")


def _machines(ok: list[ResultDoc], meta: Mapping[str, Any], devices: list[str]) -> str:
    """The machine, or the kinds of machine side by side (whose repeats are never pooled)."""
    by_kind: dict[str, list[ResultDoc]] = {}
    for d in ok:
        by_kind.setdefault(summary.node_type(d), []).append(d)
    kinds = [k for k in by_kind if k]
    if len(kinds) <= 1:
        return (f"Machine: {escape(meta.get('cpu', '?'))}, {meta.get('cpu_count', '?')} CPUs, "
                f"{escape(meta.get('platform', '?'))}; device: "
                f"{escape(', '.join(devices) or 'CPU (no JAX device recorded)')}")
    each = [_machine_kind(kind, by_kind[kind]) for kind in kinds]
    return (f"Machines: {len(kinds)} kinds, whose repeats are never pooled: each cell appears once per kind of "
            f"machine, named after \"on\" in its label: " + "; ".join(each))


def _jobs(docs: list[ResultDoc]) -> str | None:
    """Which scheduler ran the repeats, in how many jobs on how many nodes."""
    scheds = [s for d in docs if (s := results.part(d, "machine_state").get("scheduler"))]
    if not scheds:
        return None
    executors = sorted({s["executor"] for s in scheds})
    jobs = {s.get("job_id") for s in scheds}
    nodes = sorted({s.get("node") or "?" for s in scheds})
    parts = sorted({str(p) for s in scheds if (p := s.get("partition"))})
    return (f"Scheduler: {escape(', '.join(executors))}; {len(scheds)} of {len(docs)} runs in {len(jobs)} jobs on "
            f"{len(nodes)} node{'s' if len(nodes) > 1 else ''} ({escape(', '.join(nodes[:6]))}"
            f"{', ...' if len(nodes) > 6 else ''})" + (f", partition {escape(', '.join(parts))}" if parts else ""))


def _full_cell(s: summary.CellStats) -> str:
    return wording.short_schedule(s.full.schedule)


def _full_cost(s: summary.CellStats) -> str:
    f = s.full
    if not f.count or f.extra_ns is None or f.ratio is None:
        return "-"
    ci = f.extra_ci_ns
    text = wording.fmt_signed(f.extra_ns / 1e6)
    text += f" ({wording.fmt_range(ci[0] / 1e6, ci[1] / 1e6)})" if ci else ""
    return text + f", {f.ratio:.1f} x"


def _share_cell(s: summary.CellStats, cpu: bool) -> str:
    share = s.share(cpu)
    value, ci, per = share.value, share.ci, share.per_repeat
    return f"{100 * value:.2f}" + (f" ({100 * ci[0]:.2f}-{100 * ci[1]:.2f})" if ci else
                                   f" ({interval_text.fmt_values(per, 100)})")


def summary_table(cells: list[summary.CellSummary]) -> Table:
    # counts first (they do not depend on load), then the times; flags beside the cell they qualify;
    # one GC share for every row, its kind in the head (verdict.in_cpu_time)
    cpu = verdict.in_cpu_time([cs.measured for cs in cells])
    header = ["cell", "repeats", "full collections per repeat",
              f"GC % of {'CPU' if cpu else 'wall'} time (95 % CI)", "median ms (95 % CI)",
              "mean ms (95 % CI)", "full-GC step: extra ms (95 % CI), x median", "timed steps, all repeats"]
    rows = []
    for cs in cells:
        s = cs.measured
        used = len(s.used)
        rows.append([escape(cs.label) + (f" ({len(s.flagged)} flagged)" if s.flagged else ""),
                     f"{used}" + (f" of {s.repeats}" if used != s.repeats else ""),
                     _full_cell(s), _share_cell(s, cpu),
                     *_times(s),
                     _full_cost(s), f"{s.steps:,}"])
    return Table(header, rows, align_right=(1, 3, 4, 5, 6, 7))  # the schedule's words wrap


def _times(s: summary.CellStats) -> tuple[str, str]:
    """A cell's median and mean step with their intervals; a loaded machine's without: the
    verdict refuses to judge them, and an interval would read as a judgement."""
    if s.loaded:
        return f"{wording.fmt(s.median_ms)} (loaded: not judged)", f"{wording.fmt(s.mean_ms)} (loaded: not judged)"
    return (interval_text.fmt_paren(s.median_ms, s.median_ci_ms, values=s.repeat_medians_ms),
            interval_text.fmt_paren(s.mean_ms, s.mean_ci_ms, values=s.repeat_means_ms))


def _with_ci(value: float, ci, fmt=wording.fmt, values=None) -> str:
    return fmt(value) + (f" ({fmt(ci[0])} to {fmt(ci[1])})" if ci else
                         f" ({interval_text.fmt_values(values)})" if values is not None else "")


def memory_table_section(cells: list[summary.CellSummary]) -> list:
    """Memory beside time, for the cells that sampled it (a user's loop under
    `gcbench.measure`): peak resident set size over the timed steps, its growth, and the
    growth of the objects the collector tracks."""
    rows = []
    for cs in cells:
        m = cs.measured.memory
        if not m:
            continue
        rows.append(
            [
                escape(cs.label),
                _with_ci(m.peak_rss_mb, m.peak_rss_ci_mb, values=m.repeat_peak_rss_mb)
                if m.peak_rss_mb is not None
                else "-",
                _with_ci(m.rss_growth_mb_per_1000, m.rss_growth_ci, wording.fmt_signed, m.repeat_rss_growth)
                if m.rss_growth_mb_per_1000 is not None
                else "-",
                _with_ci(m.tracked_growth_per_1000, m.tracked_growth_ci, wording.fmt_signed, m.repeat_tracked_growth)
                if m.tracked_growth_per_1000 is not None
                else "-",
            ]
        )
    if not rows:
        return []
    return [Heading("Memory"),
            Para("Beside time, what the loop holds: the resident set size, sampled every few steps after the step's "
                 "clock stopped (its peak over the timed steps, and its growth from a least-squares line through the "
                 "samples of each repeat), and the objects the collector tracks, counted when the timed steps began "
                 "and ended. Each with Student's t interval over the repeats. A fix that trades time for memory shows "
                 "here: compare both."),
            Table(["cell", "peak RSS MiB (95 % CI)", "RSS growth MiB per 1,000 steps (95 % CI)",
                   "tracked objects per 1,000 steps (95 % CI)"], rows, align_right=(1, 2, 3))]


def _counts_per_repeat(counts: list[int]) -> str:
    if not any(counts):
        return "none"
    if len(set(counts)) == 1:
        return f"{counts[0]:,} in every repeat" if len(counts) > 1 else f"{counts[0]:,} (one repeat)"
    return f"{', '.join(f'{c:,}' for c in counts)} per repeat"


def _warmup_row(cs: summary.CellSummary) -> list[str]:
    """A cell's warm-up (its steps, time, pauses, collections, objects collected; "-" where
    none was recorded) and its collections between steps."""
    w, between = cs.measured.warmup, cs.measured.between
    outside = sum(between.collections)
    warm = ["-"] * 6 if not w else [
        f"{w.steps}", wording.fmt(w.wall_ms), wording.fmt(w.gc_ms), " / ".join(f"{c:,.0f}" for c in w.collections),
        _counts_per_repeat(w.full_per_repeat), f"{w.collected:,.0f}"]
    return [escape(cs.label), *warm, f"{outside:,} ({wording.fmt(between.gc_ms)} ms)" if outside else "none"]


def warmup_section(cells: list[summary.CellSummary]) -> list:
    """The warm-up steps (compilation) of each cell, which the summary leaves out: their
    time, GC pauses, collections and objects collected (means over the repeats); and the
    collections that fell between steps, which the GC share counts."""
    rows = [_warmup_row(cs) for cs in cells if cs.measured.warmup or sum(cs.measured.between.collections)]
    if not rows:
        return []
    return [Heading("Warm-up and between steps"),
            Para("The warm-up steps (where compilation happens) are kept out of the summary and shown here, per "
                 "repeat on average: their time, GC pauses, collections by generation (young / middle / full) and "
                 "objects collected. The last column counts the collections that ran outside every step (a loop's "
                 "own code between steps), summed over the repeats; the GC share above counts their pauses."),
            Table(["cell", "warm-up steps", "warm-up ms", "GC ms", "collections (0 / 1 / 2)", "full collections",
                   "objects collected", "collections between steps"], rows, align_right=(1, 2, 3, 4, 5, 6, 7))]


def host_section(cells: list[summary.CellSummary]) -> list:
    """How much of a step is host time (Python and dispatch, until the step function
    returned) and how much waits for the results; only for cells that recorded it."""
    timed = [cs for cs in cells if cs.measured.host_share is not None]
    if not timed:
        return []
    rows = []
    for cs in timed:
        s = cs.measured
        ci, share = s.host_share_ci, s.host_share or 0.0
        host = f"{100 * share:.1f}" + (
            f" ({100 * ci[0]:.1f}-{100 * ci[1]:.1f})"
            if ci
            else f" ({'one process' if s.repeats == 1 else 'too few processes for an interval'})"
        )
        of_host = f"{100 * s.gc_share / share:.1f}" if share > 0 else "-"
        rows.append([escape(cs.label), wording.fmt(s.median_ms), host, f"{100 - 100 * share:.1f}",
                     f"{100 * s.gc_share:.2f}", of_host])
    return [Heading("Host and device"),
            Para("JAX dispatches asynchronously: a step's host time runs until its step function has returned (the "
                 "Python of the loop and the framework, and the dispatch), the rest waits for the results. On a GPU "
                 "the wait is the device computing; a collector's pause is host time, so the device idles through it "
                 "and a step whose host share is high pays for every pause in full. Shares are means of the "
                 "per-repeat shares with Student's t interval over the repeats."),
            Table(["cell", "median ms", "host % of step (95 % CI)", "waiting %", "GC % of wall time",
                   "GC % of host time"], rows, align_right=(1, 2, 3, 4, 5))]


def _never_ran(state: str | None) -> str:
    """Why a cell of the plan has no result, from the plan's state."""
    if state == "interrupted":
        return "never ran: the run was interrupted first"
    return "never ran: the run is still going or stopped without a word" if state == "running" else "no result"


def _first_of(names: list[str], shown: int) -> str:
    """The first `shown` names, and how many more."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def not_run_section(docs: list[ResultDoc], plan: Plan) -> list:
    """Cells that did not run, grouped by reason; cells of the plan with no result at all."""
    groups: dict[tuple[str, str], list[str]] = {}
    for d in docs:
        if d.status != "ok":
            reason = (d.reason or "").strip().splitlines()[0] if d.reason else ""
            groups.setdefault((d.status, reason), []).append(results.label(d))
    have = {d.cell for d in docs}
    missing = [label for c, label in plan.label_of().items() if c not in have]
    if missing:
        groups.setdefault(("not run", _never_ran(plan.state)), []).extend(missing)
    if not groups:
        return []
    rows = [[escape(status), prose(reason), f"{len(cells)}", escape(_first_of(cells, 12))]
            for (status, reason), cells in groups.items()]
    return [Heading("Not run"), Table(["status", "reason", "runs", "which"], rows, align_right=(2,))]


def _gather_answer(doc: program_memory.MemoryDoc, gathers: list) -> str:
    """The gather gradients' memory over their forward programs', and the largest case's."""
    fb = program_memory.fmt_bytes
    ratios = [r.gradient_over_forward for r in gathers]
    big = max(gathers, key=lambda r: r.forward.total_bytes)
    return (f"The gradient of a gather takes {min(ratios):.2f}-{max(ratios):.2f} x the memory of its "
            f"forward program over {len(gathers)} cases; at the largest, {escape(big.size)} with an "
            f"{escape(big.index_dtype)} index ({escape(big.formulation)}, "
            f"{program_memory.compiler_of(doc, big).upper()} compiler), "
            f"{fb(big.forward.total_bytes)} forward against {fb(big.gradient.total_bytes)} for the gradient "
            f"({big.gradient_over_forward:.2f} x; {big.gradient_over_floor:.2f} x its floor).")


def memory_answer(doc: program_memory.MemoryDoc) -> str | None:
    """The answer of `gcbench memory`: how much more the gradient of a gather takes than its
    forward program (the seed's question), at the largest size measured; and the largest
    training step's program."""
    fb = program_memory.fmt_bytes
    gathers = doc.gathers()
    steps = [c for c in doc.steps() if c.total_bytes is not None]
    said = [_gather_answer(doc, gathers)] if gathers else []
    if steps:
        step = max(steps, key=lambda c: c.total_bytes or 0)
        said.append(f"The largest training step's program is {code(step.backend)} on {escape(step.workload)}: "
                    f"{fb(step.total_bytes or 0)} ({fb(step.temp_bytes or 0)} of temporaries).")
    return " ".join(said) or None


def _accelerator_cell(acc) -> str:
    """The accelerator's forward / gradient totals, or why there are none."""
    fb = program_memory.fmt_bytes
    if acc and acc.forward and acc.gradient:
        return f"{fb(acc.forward.total_bytes)} / {fb(acc.gradient.total_bytes)}"
    return escape((acc.error if acc else None) or "-")


def _gather_row(doc: program_memory.MemoryDoc, r: program_memory.GatherCase, accelerator: bool) -> list[str]:
    """A gather case's row: its programs' bytes, the accelerator's where there is one, and a
    real run's peak memory (or why there is none)."""
    fb = program_memory.fmt_bytes
    run = r.measured
    if run is not None and run.peak_rss_increase_bytes is not None:
        measured = fb(run.peak_rss_increase_bytes)
    else:
        measured = escape((run.error if run else None) or "-")
    extra = [_accelerator_cell(r.accelerator)] if accelerator else []
    return [escape(r.size), escape(r.index_dtype), escape(r.formulation), program_memory.compiler_of(doc, r).upper(),
            fb(r.forward.total_bytes), fb(r.gradient.temp_bytes), fb(r.gradient.total_bytes),
            f"{r.gradient_over_forward:.2f}", f"{r.gradient_over_floor:.2f}", *extra, measured]


def _step_row(c: program_memory.StepCase) -> list[str]:
    """A training step's row: its program's bytes, or why it was not compiled."""
    fb = program_memory.fmt_bytes
    head = [escape(c.workload), escape(c.backend), escape(c.program)]
    if c.unavailable is not None or c.total_bytes is None:
        return [*head, escape(c.unavailable or "-"), "", "", ""]
    return [*head, fb(c.argument_bytes or 0), fb(c.output_bytes or 0), fb(c.temp_bytes or 0), fb(c.total_bytes)]


def _gather_table(doc: program_memory.MemoryDoc, gathers: list) -> Table:
    """The gather cases, a column for the accelerator's compiler where one compiled them."""
    other = next((r.accelerator.platform for r in gathers if r.accelerator), None)
    rows = [_gather_row(doc, r, other is not None) for r in gathers]
    return Table(["size", "index", "formulation", "compiler", "forward", "gradient temp", "gradient total",
                  "gradient/forward", "gradient/floor"]
                 + ([f"{escape(other.upper())} compiler: forward / gradient"] if other else [])
                 + ["measured"], rows, align_right=tuple(range(4, 10 + (other is not None))))


def memory_section(doc: program_memory.MemoryDoc) -> list:
    blocks = [
        Heading("Memory of compiled programs"),
        Para(
            f"From {code(' '.join(doc.command))}, jax {escape(doc.jax or '?')} on "
            f"{escape(doc.device or '?')}. Compiled on abstract shapes: XLA's memory analysis, nothing "
            "allocated. The compiler column says whose figures they are: the seed read XLA's CPU compiler, "
            "which gcbench uses for the gather programs wherever it runs (a document that does not record "
            "the compiler compiled for the default device it names). The floor of a gather gradient is its "
            "arguments plus its output; the measured "
            "column is the peak resident memory a real run of the gradient added (small sizes only)."
        ),
    ]
    gathers = doc.gathers()
    if gathers:
        blocks.append(_gather_table(doc, gathers))
    steps = doc.steps()
    if steps:
        rows = [_step_row(c) for c in steps]
        blocks += [Heading("Training steps", 3),
                   Table(["workload", "backend", "program", "arguments", "output", "temporaries", "total"], rows,
                         align_right=(3, 4, 5, 6))]
    return blocks


def build_report(source, out_dir, spike_factor: float = summary.DEFAULT_SPIKE_FACTOR, title: str | None = None,
                 bisect_table: VersionTable | None = None) -> dict:
    """Write the report of `source` (results folder, archive, or report folder) into
    `out_dir`; return the paths written, by name, and `warnings`.

    Everything is built in a staging folder first; only then are the files moved into
    `out_dir`, none of them over a file gcbench did not write there.
    """
    source, out_dir = pathlib.Path(source), pathlib.Path(out_dir)
    before = _marker(out_dir)
    in_place = source.resolve() in (out_dir.resolve(), (out_dir / archive.NAME).resolve())
    kept = before.get("title") if in_place else None  # a rebuild keeps the title it was published with
    if kept == f"gcbench report: {out_dir.resolve().name}":  # 0.2's default, chosen by no one: the question now
        kept = None
    title = title or kept
    made = not out_dir.exists()
    # Everything from the folder's creation to the archive's cleanup is inside the try: a Ctrl-C
    # that lands just after mkdir, or while the unpacked archive is removed at the end, still
    # leaves no folder of a first build behind (seen under load).
    try:
        with archive.opened(source) as folder:
            files.make_folder(out_dir, "report folder")
            with files.FolderLock(out_dir, f"report folder {out_dir} is in use by another gcbench report"):
                for stale in out_dir.glob(STAGING + "*"):  # left by a report that was killed
                    if _stale_staging(stale):
                        shutil.rmtree(stale, ignore_errors=True)
                return _stage_and_move(folder, source, out_dir, before, spike_factor, title, bisect_table)
    except BaseException:
        if made:  # a failed first build leaves no folder behind, even with part of its files moved in
            shutil.rmtree(out_dir, ignore_errors=True)
        raise


def _refuse_clash(out_dir: pathlib.Path, clash: list[str], legacy: bool) -> None:
    """Files in the report folder that gcbench did not write (or that changed since): never
    overwritten."""
    if not clash:
        return
    if legacy:
        raise UsageError(f"report folder {out_dir} was made by an older gcbench, whose marker cannot show "
                         f"that {clash[0]} is still what it wrote; rebuild into a new folder "
                         f"(gcbench report {out_dir} --out NEW)")
    raise UsageError(f"report folder {out_dir} holds {clash[0]}, which gcbench did not write (or changed "
                     "since); give --out an empty or new folder")


def _move_in(written: list[pathlib.Path], out_dir: pathlib.Path, stale: set[str]) -> None:
    """The staged files into the report folder, and our own files from an earlier build that
    this one did not write out of it."""
    try:
        for path in written:
            pathlib.Path(path).replace(out_dir / path.name)
        for name in stale:
            (out_dir / name).unlink(missing_ok=True)
    except OSError as e:
        raise UsageError(f"cannot write the report into {out_dir}: {files.describe_os_error(e)}") from None


def _stage_and_move(folder, source, out_dir, before, spike_factor, title, bisect_table) -> dict:
    owned = before.get("files", set())
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=f"{STAGING}{os.getpid()}-") as tmp:
        staged = _build(folder, source, pathlib.Path(tmp), spike_factor, title, bisect_table)
        names = {p.name for p in staged["written"]}
        _refuse_clash(out_dir, sorted(n for n in names if (out_dir / n).exists() and n not in owned),
                      bool(before.get("legacy")))
        _move_in(staged["written"], out_dir, owned - names)
        files.write_json(
            out_dir / MARKER,
            {
                "format": MARKER_FORMAT,
                "version": MARKER_VERSION,
                "title": staged["title"],
                "built_by": metadata.gcbench_identity(),
                "files": {
                    n: {"size": (out_dir / n).stat().st_size, "sha256": files.sha256(out_dir / n)}
                    for n in sorted(names)
                },
            },
        )
    out = {"markdown": out_dir / "index.md", "html": out_dir / "index.html", "archive": out_dir / archive.NAME,
           "warnings": staged["warnings"]}
    out.update({p.stem: out_dir / p.name for p in staged["written"] if p.suffix == ".png"})
    return out


def _compared_policies(docs: list[ResultDoc]) -> bool:
    """Whether a command of the run asked for several GC policies (`--gc A,B`): a policy
    comparison, whose report answers what each policy did."""
    return any("," in policies for d in docs
               for policies in _gc_values([str(a) for a in results.part(d, "metadata").get("command") or []]))


def _gc_values(argv: list[str]) -> list[str]:
    """What a command line gave --gc (`--gc X` or `--gc=X`)."""
    return [argv[i + 1] if a == "--gc" else a[5:] for i, a in enumerate(argv)
            if (a == "--gc" and i + 1 < len(argv)) or a.startswith("--gc=")]


def _in_order(docs: list[ResultDoc], plan: Plan, git_plan: gitbisect.CommitPlan | None = None) -> list[ResultDoc]:
    """The documents in the suite's order of backends, workloads and policies (the plan's,
    which interleaves repeats in a shuffled order), and within one of those by environment:
    a commit bisect's in the order of its history (oldest first), others in natural order
    (versions ascending); then by repeat."""
    history: dict[str, int] = {}
    if git_plan is not None:
        rank = {c.sha: i for i, c in enumerate([git_plan.good, *git_plan.commits])}
        history = {env: rank.get(sha, len(rank)) for sha, env in git_plan.tested.items()}

    def env_key(d: ResultDoc) -> tuple:
        spec = str(results.part(d, "environment").get("spec") or "")
        return (history.get(spec, len(history)) if history else 0, natural_key(results.env_name(d) or ""))

    order = {cell: i for i, cell in enumerate(plan.cells)}
    docs = sorted(docs, key=lambda d: (order.get(d.cell, len(order)), d.cell))
    first: dict[tuple, int] = {}
    for d in docs:
        first.setdefault((d.backend, d.workload, d.gc_policy), len(first))
    return sorted(docs, key=lambda d: (first[d.backend, d.workload, d.gc_policy], env_key(d), d.repeat))


def _question(docs, cells, families, memdoc, repro, git_table, bisect_table) -> str | None:
    """The answer to the question the command asked: a bisect's culprit, a reproduction's rows,
    the environments' matrix, the policies' comparison or the memory table's; None where the
    cells alone answer."""
    from ...analysing import seed_cases

    question = None
    if git_table is not None:
        question = environments.gitbisect_answer(git_table)
    elif bisect_table is not None:
        question = environments.bisect_answer(bisect_table)
    elif repro is not None:
        question = seed_section.answer(seed_cases.rebuild(repro, docs, memdoc))
    else:
        question = environments.env_matrix_answer(cells, docs)
    if question is None and _compared_policies(docs):
        question = findings.policy_answer(families)
    if question is None and memdoc is not None:
        question = memory_answer(memdoc)
    return question


def _summary_and_findings(ok, cells, docs, workloads, families) -> list:
    """The summary table, the host, memory, warm-up and environment sections, and each
    workload's findings."""
    blocks = [Heading("Summary"),
              Para("Each cell ran in several fresh processes (repeats); times are per timed step, warm-up "
                   "excluded. The median is the typical step, the mean the time a run takes per step (what GC "
                   "spikes cost): each the geometric mean of the per-repeat values; the GC share the "
                   "mean of the per-repeat shares, each with Student's t interval over the repeats (one "
                   "value per process). Full collections (Julia: full sweeps) are a schedule: their count in "
                   "each repeat (\"in every repeat\" when it is the same in all of them, which makes a "
                   "difference exact), and each step that holds one is compared with the steps around it, "
                   "per repeat. Repeats that drifted or ran on a "
                   "loaded machine are flagged and left out (see Unstable measurements)."),
              summary_table(ok)]
    blocks += host_section(ok)
    blocks += memory_table_section(ok)
    blocks += warmup_section(ok)
    blocks += environments.section(docs)
    blocks += [Heading("Findings"),
               Para("Per workload: the cells at a glance (GC share, of the time its table's head says; full "
                    "collections per repeat; "
                    "mean step, the time a run takes per step); the cells that made full collections, with what "
                    "a step holding one cost; each policy against `default`, every test of the workload "
                    "corrected together (Benjamini-Hochberg) and its interval at the level that goes with that "
                    "correction; then what the tables do not say.")]
    for w in workloads:
        mine = [cs for cs in cells if cs.key[1] == w]
        family = families[w]
        tables = [t for t in (findings.table(mine), findings.full_table(mine),
                              findings.tests_table(mine, family=family)) if t]
        blocks += [Heading(escape(w), 3), *tables, Bullets(findings.findings(mine, family=family))]
    return blocks


def _plots(ok, docs, workloads, out_dir, written) -> list:
    """Each workload's figures, drawn into `out_dir`; every file drawn is added to `written`."""
    blocks: list = [Heading("Plots")]
    differ = environments.differing(environments.environments(docs))
    shown = [p for p in environments.KEY_PACKAGES if p in differ]  # the env matrix's columns
    for w in workloads:
        figs, traced = _workload_figures([cs for cs in ok if cs.key[1] == w], w, out_dir, shown)
        blocks += [Heading(escape(w), 3)]
        if not traced:
            blocks.append(Para("No cell made a full collection in any repeat: no trace is drawn (the steps' "
                               "times are in the distributions below)."))
        for path, alt, caption in figs:
            if path is not None:
                blocks.append(Image(path, alt, caption))
                written.append(path)
    return blocks


def _workload_figures(mine: list, w: str, out_dir: pathlib.Path, shown: list[str]
                      ) -> tuple[list[tuple[pathlib.Path | None, str, str]], bool]:
    """One workload's figures, drawn in the order the page shows them, each with its alt
    text and caption (None where a figure has nothing to draw); and whether any trace was."""
    matrix = plots.env_matrix_figure(mine, w, out_dir / f"env_matrix_{w}.png", shown)
    figs: list[tuple[pathlib.Path | None, str, str]] = []  # (figure, alt text, caption)
    if matrix:
        figs += [(matrix, f"{w}: GC share by interpreter and package versions",
                  "One panel per backend and policy, one row per environment that was measured, named by "
                  "its Python and the versions of the packages that differ, ascending: the GC share of "
                  "step time as a dot with its 95 % interval over the repeats, and the full collections "
                  "per repeat at the right.")]
    traces = plots.trace_figures(mine, w, out_dir, shown)
    figs += [(plots.summary_figure(mine, w, out_dir / f"summary_{w}.png"),
             f"{w}: median step, GC share and full collections",
             "One row per backend (and environment), one row of panels per GC policy. Dots are the "
             f"estimates, bars their 95 % intervals over the repeats where a cell has {stats.MIN_PROCESSES} "
             "or more (the title says where none has); a fixed schedule of full collections has no bar. "
             "The median axis is logarithmic.")]
    figs += [(path, f"{w}: every timed step of one repeat",
              "One panel per cell that made a full collection, showing one repeat (named in its title: r1 "
              "is the first, with its count of full collections and its median step). The line is the step "
              "time on a log axis, every panel on the same range, the dashed line its median; a cell that ran "
              "in an environment is named by the Python and the package versions it resolved; a black dot is "
              "the pause of a full collection, drawn at its own length on the step that held it (young "
              "collections are left unmarked). Cells without a full collection are named above the panels.")
             for path in traces]
    figs += [(plots.gc_split_figure(mine, w, out_dir / f"gc_split_{w}.png"),
              f"{w}: mean step split into GC and the rest",
              "Bars are the mean step (all used repeats), black the part spent in GC pauses, the whisker "
              "the mean step's 95 % interval over the repeats; the label gives the GC share.")]
    figs += [(plots.cumulative_gc_figure(mine, w, out_dir / f"cumulative_gc_{w}.png"),
              f"{w}: cumulative GC time",
              "GC pause time summed over the steps of each cell's first used repeat; each jump is a "
              "long collection. Where cells ran in several environments, each backend has its own row "
              "and each environment its own colour.")]
    figs += [(plots.pauses_figure(mine, w, out_dir / f"pauses_{w}.png"),
              f"{w}: GC pause lengths by generation",
              "Every collection of the used repeats, by generation (hollow circle: 0, hollow square: 1, "
              "filled triangle: 2, the full collections), on a log axis.")]
    figs += [(plots.ecdf_figure(mine, w, out_dir / f"ecdf_{w}.png"), f"{w}: distribution of step times",
              "For each step time, the share of steps at most that long, pooled over the used repeats; "
              "a long flat stretch before 1 is a tail of slow steps.")]
    return figs, bool(traces)


@dataclasses.dataclass
class _Inputs:
    """What a results folder holds, read once: its results in report order, its plan, and
    the documents of the commands that wrote it (each None where the folder has none)."""

    docs: list[ResultDoc]
    plan: Plan
    memdoc: program_memory.MemoryDoc | None
    why: list[Explanation] | None
    repro: Reproduction | None
    git_plan: gitbisect.CommitPlan | None
    git_table: gitbisect.CommitTable | None  # the commit bisect's table, from its plan and the results, once
    bisect_table: VersionTable | None
    carried: dict[str, bytes]


def _read_inputs(folder: pathlib.Path, bisect_table: VersionTable | None) -> _Inputs:
    from ...analysing import gc_causes, seed_cases, version_bisect

    memdoc = program_memory.load(folder)
    # A table given by the caller (`bisect --results DIR --report`, which only reads DIR) goes into
    # the report's archive, so that a rebuild from the archive shows the same table.
    carried = {} if bisect_table is None else {"bisect.json": files.json_bytes(records.to_json(bisect_table))}
    if bisect_table is None and (folder / "bisect.json").is_file():
        bisect_table = version_bisect.load_table(folder / "bisect.json")
    why = gc_causes.load(folder)
    repro = seed_cases.load(folder)
    git_plan = gitbisect.load(folder / gitbisect.FILE)
    plan = plans.read(folder) or Plan()
    docs = results.load_dir(folder, allow_empty=any(x is not None for x in (memdoc, repro, why)))
    docs = _in_order(docs, plan, git_plan)
    if bisect_table is not None:
        bisect_table = version_bisect.rebuild(bisect_table, docs)
    git_table = gitbisect.table(git_plan, gitbisect.docs_by_env(docs)) if git_plan is not None else None
    return _Inputs(docs, plan, memdoc, why, repro, git_plan, git_table, bisect_table, carried)


def _title(name: str, got: _Inputs, cells: list[summary.CellSummary], workloads: list[str]) -> str:
    """The report's title where its command gave none: the question it answers, then the
    folder it was made from."""
    if got.git_plan is not None:
        plan = got.git_plan
        question = (f"Which {plan.package} commit changed "
                    f"{gitbisect.get_metric(plan.metric).title} of {plan.cell}?")
    elif got.bisect_table is not None:
        tab = got.bisect_table
        question = f"Which {tab.package} release changed {tab.metric_title.lower()} of {tab.cell}?"
    elif got.repro is not None:
        question = "Do the seed reports' garbage-collector findings reproduce here?"
    elif len(gitbisect.docs_by_env(got.docs)) > 1:
        question = "Which versions of Python and the packages move the collector's work?"
    elif cells:
        ok = [cs for cs in cells if cs.ok]
        question = (f"How much of each training step goes to the garbage collector? {len(ok)} cells"
                    + (f" on {', '.join(workloads)}" if workloads else ""))
    else:
        question = "gcbench report"
    return f"{question} ({name})"


LEAD_SENTENCES = 3  # the verdict's first paragraph, where the command asked nothing of its own
GLANCE_ROWS = 5  # cells in the first screen's table


def _verdict(question: str | None, answer: list[str], headline: list) -> list:
    """The first screen: the command's question answered (else the cells' verdict in at most
    three sentences), one headline table, then the rest of what the cells say."""
    if not (question or answer):
        return []
    lead, rest = (question, answer) if question else \
        (" ".join(prose(x) for x in answer[:LEAD_SENTENCES]), answer[LEAD_SENTENCES:])
    return [Heading("Verdict"), Para(lead), *headline] + ([Para(" ".join(prose(x) for x in rest))] if rest else [])


def _headline(got: _Inputs, cells: list[summary.CellSummary]) -> list:
    """The one table a reader looks at first: a bisect's versions or commits, else the cells
    that pay the collector most."""
    if got.git_table is not None:
        return [environments.gitbisect_headline(got.git_table)]
    if got.bisect_table is not None:
        return [environments.bisect_headline(got.bisect_table)]
    ok = [cs for cs in cells if cs.ok]
    return [glance_table(ok)] if ok else []


def glance_table(ok: list[summary.CellSummary]) -> Table:
    """The cells that pay the collector most, by their GC share (one kind of share for the
    whole report, named in the head): full collections, the share, the mean step."""
    cpu = verdict.in_cpu_time([cs.measured for cs in ok])
    top = sorted(ok, key=lambda cs: (-cs.measured.share(cpu).value, cs.label))[:GLANCE_ROWS]
    rows = [[escape(cs.label), _full_cell(cs.measured), _share_cell(cs.measured, cpu),
             "-" if cs.measured.loaded else wording.fmt(cs.measured.mean_ms)] for cs in top]
    if len(ok) > len(top):
        rows.append([f"and {len(ok) - len(top)} more cells: see the Summary", "", "", ""])
    return Table(["cell (the most GC first)", "full collections per repeat",
                  f"GC % of {'CPU' if cpu else 'wall'} time (95 % CI)", "mean step ms"], rows, align_right=(2, 3))


def _bisect_blocks(got: _Inputs, out_dir: pathlib.Path, written: list[pathlib.Path]) -> list:
    """The release bisect's table and the commit bisect's, where the folder holds them."""
    blocks: list = []
    if got.bisect_table is not None:
        blocks += environments.bisect_section(got.bisect_table, out_dir)
        written.append(out_dir / "bisect.png")
    if got.git_plan is not None and got.git_table is not None:
        blocks += environments.gitbisect_section(got.git_table, got.git_plan.culprit, out_dir)
        written.append(out_dir / "gitbisect.png")
    return blocks


def _unstable(ok: list) -> list:
    """The cells whose measurements warned of something, each with its warnings."""
    unstable = [f"{escape(cs.label)}: {escape('; '.join(cs.measured.warnings))}"
                for cs in ok if cs.measured.warnings]
    return [Heading("Unstable measurements"), Bullets(unstable)] if unstable else []


def _evidence(folder: pathlib.Path, got: _Inputs, cells: list, families: dict, out_dir: pathlib.Path,
              written: list[pathlib.Path]) -> list:
    """Everything after the verdict, in the order a reader checks it: the reproduction's
    rows, what was run, the bisect tables, summary and findings, why, plots, what was
    unstable or never ran, and the memory tables. Files drawn are added to `written`."""
    from ...analysing import seed_cases

    docs, plan = got.docs, got.plan
    ok = [cs for cs in cells if cs.ok]
    workloads = list(families)  # the workloads that ran ok, in order
    blocks: list = []
    if got.repro is not None:
        blocks += seed_section.section(seed_cases.rebuild(got.repro, docs, got.memdoc))
    if docs:
        blocks += _header(docs, plan)
    blocks += _bisect_blocks(got, out_dir, written)
    if ok:
        blocks += _summary_and_findings(ok, cells, docs, workloads, families)
    if got.why is not None:
        blocks += why_section.section(got.why, docs, out_dir, written)
    if ok:
        blocks += _plots(ok, docs, workloads, out_dir, written) + _unstable(ok)
    blocks += not_run_section(docs, plan)
    if got.memdoc is not None:
        blocks += memory_section(got.memdoc)
    return blocks


def _build(folder, source, out_dir, spike_factor, title, bisect_table) -> dict:
    got = _read_inputs(folder, bisect_table)
    docs = got.docs
    written: list[pathlib.Path] = [archive.pack(folder, out_dir / archive.NAME, got.carried)]
    warnings = [w for w in [archive.check_size(written[0])] if w]

    cells = summary.summarize_all(docs, spike_factor)
    workloads = list(dict.fromkeys(cs.key[1] for cs in cells if cs.ok))
    name = source.resolve().name if source.is_dir() else source.name
    title = title or _title(name, got, cells, workloads)

    # the answer to the question the command asked, first: a bisect's culprit, a reproduction's
    # rows; then what the cells say (the suite's verdict); the evidence after it
    # a workload's tests, made and corrected once: the Findings show them and the verdict quotes them
    families = {w: claims.workload_claims([cs for cs in cells if cs.key[1] == w]) for w in workloads}
    question = _question(docs, cells, families, got.memdoc, got.repro, got.git_table, got.bisect_table)
    blocks: list = [Heading(escape(title), 1), *_verdict(question, verdict.sentences(cells), _headline(got, cells)),
                    *_evidence(folder, got, cells, families, out_dir, written)]

    markdown = to_markdown(blocks)
    md = files.write_text(out_dir / "index.md", markdown)
    page = files.write_text(out_dir / "index.html", to_html(markdown, title, out_dir))
    written += [md, page]
    return {"markdown": md, "html": page, "archive": written[0], "written": written, "warnings": warnings,
            "title": title}
