"""`gcbench report`: a results folder -> index.md, self-contained index.html, PNG plots.

Works on any mix of results, failed and unavailable cells included. Plots use the first
repeat of each (backend, workload, policy); the summary table lists every cell.
"""

from __future__ import annotations

import json
import pathlib
import shlex

from .. import memory, results, stats
from ..errors import UsageError
from . import environments, plots
from .document import Bullets, Heading, Image, Para, Table, to_html, to_markdown
from .findings import findings


def _fmt(x, digits=3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"


def _header(docs: list[dict], plan: dict, results_dir: pathlib.Path) -> list:
    ok = [d for d in docs if d["status"] == "ok"]
    meta = ok[0]["metadata"] if ok else docs[0]["metadata"]
    kinds = sorted({d["data"].get("kind", "?") for d in ok})
    pkgs = meta.get("packages", {})
    versions = ", ".join(f"{k} {v}" for k, v in pkgs.items() if v)
    items = [
        f"Data: {' and '.join(kinds) or 'none'}" + (
            " (a deterministic MNIST-shaped stand-in: no real MNIST was present)" if kinds == ["synthetic"] else ""),
        f"Machine: {meta.get('cpu', '?')}, {meta.get('cpu_count', '?')} CPUs, {meta.get('platform', '?')}"
        + (f"; JAX devices: {', '.join(meta['devices'])}" if meta.get("devices") else ""),
        f"Python {meta.get('python', '?')}; {versions}" if not any(d.get("environment") for d in docs) else
        f"Environments: {len(environments.environments(docs))}, with the interpreters and versions listed below",
        f"Command: `{shlex.join(plan.get('command') or meta.get('command') or ['?'])}`",
        f"Cells: {len(docs)} ({len(ok)} ok, {sum(d['status'] == 'failed' for d in docs)} failed, "
        f"{sum(d['status'] == 'unavailable' for d in docs)} unavailable); measured {meta.get('date', '?')}",
    ]
    return [Heading("What was run"), Bullets(items)]


def _summary_table(ok: list[dict], summaries: dict) -> Table:
    header = ["cell", "steps", "median ms (95 % CI)", "p99 ms", "max/median", "GC %", "spikes",
              "spike period", "spikes at full GC", "full GC /1000 steps", "collections /1000 g0/g1/g2"]
    rows = []
    for d in ok:
        s = summaries[d["cell"]]
        lo, hi = s["median_ci_ms"]
        rows.append([
            results.label(d), str(s["steps"]), f"{_fmt(s['median_ms'])} ({_fmt(lo)}-{_fmt(hi)})", _fmt(s["p99_ms"]),
            f"{s['max_over_median']:.1f}", f"{100 * s['gc_share']:.2f}", str(s["spikes"]),
            _fmt(s["spike_period"]), "-" if s["spikes_with_full_gc"] is None else f"{100 * s['spikes_with_full_gc']:.0f} %",
            f"{s['full_per_1000']:.1f}", "/".join(f"{c:.0f}" for c in s["collections_per_1000"]),
        ])
    return Table(header, rows, align_right=tuple(range(1, len(header))))


def _memory_section(doc: dict) -> list:
    fb = memory.fmt_bytes
    blocks = [Heading("Memory of compiled programs"),
              Para(f"From `{' '.join(doc.get('command', []))}`, jax {doc.get('jax', '?')} on {doc.get('device', '?')}. "
                   "Compiled on abstract shapes: XLA's memory analysis, nothing allocated. The floor of a gather "
                   "gradient is its arguments plus its output; the measured column is the peak resident memory a "
                   "real run of the gradient added (small sizes only).")]
    gathers = [r for r in doc["cases"] if r["kind"] == "gather"]
    if gathers:
        rows = []
        for r in gathers:
            meas = r.get("measured", {})
            m = fb(meas["peak_rss_increase_bytes"]) if "peak_rss_increase_bytes" in meas else meas.get("error", "-")
            rows.append([r["size"], r["index_dtype"], r["formulation"], fb(r["forward"]["total_bytes"]),
                         fb(r["gradient"]["temp_bytes"]), fb(r["gradient"]["total_bytes"]),
                         f"{r['gradient_over_forward']:.2f}", f"{r['gradient_over_floor']:.2f}", m])
        blocks.append(Table(["size", "index", "formulation", "forward", "gradient temp", "gradient total",
                             "gradient/forward", "gradient/floor", "measured"], rows, align_right=(3, 4, 5, 6, 7, 8)))
    steps = [r for r in doc["cases"] if r["kind"] == "step"]
    if steps:
        rows = [[r["workload"], r["backend"], r["program"]] + (
            [r["unavailable"], "", "", ""] if "unavailable" in r else
            [fb(r["argument_bytes"]), fb(r["output_bytes"]), fb(r["temp_bytes"]), fb(r["total_bytes"])]) for r in steps]
        blocks += [Heading("Training steps", 3),
                   Table(["workload", "backend", "program", "arguments", "output", "temporaries", "total"], rows,
                         align_right=(3, 4, 5, 6))]
    return blocks


def build_report(results_dir, out_dir, spike_factor: float = stats.DEFAULT_SPIKE_FACTOR,
                 title: str | None = None) -> dict[str, pathlib.Path]:
    """Write the report of `results_dir` into `out_dir`; return the paths written."""
    results_dir, out_dir = pathlib.Path(results_dir), pathlib.Path(out_dir)
    memdoc = memory.load(results_dir)
    bisect_file = results_dir / "bisect.json"
    bisect_tab = json.loads(bisect_file.read_text()) if bisect_file.is_file() else None
    docs = results.load_dir(results_dir, allow_empty=memdoc is not None)
    plan_file = results_dir / "suite.json"
    plan = json.loads(plan_file.read_text()) if plan_file.is_file() else {}
    order = {cell: i for i, cell in enumerate(plan.get("cells", []))}
    docs.sort(key=lambda d: (order.get(d["cell"], len(order)), d["cell"]))  # the order the suite ran in
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"report folder {out_dir} exists and is not a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.png"):  # a rerun must not leave stale plots behind
        old.unlink()

    ok = [d for d in docs if d["status"] == "ok"]
    summaries = {d["cell"]: stats.summary(d, spike_factor) for d in ok}
    first = environments.as_series([d for d in ok if d["repeat"] == 0] or ok)
    workloads = list(dict.fromkeys(d["workload"] for d in first))
    title = title or f"gcbench report: {results_dir.resolve().name}"

    blocks: list = [Heading(title, 1)]
    if docs:
        blocks += _header(docs, plan, results_dir)
    if bisect_tab is not None:
        blocks += environments.bisect_section(bisect_tab, out_dir)
    if ok:
        blocks += [Heading("Summary"),
                   Para(f"Times are per timed step (warm-up excluded). A spike is a step slower than "
                        f"{spike_factor:g} x the cell's median; the spike period is the median gap between "
                        f"spikes, in steps; a full GC is a collection of the oldest generation."),
                   _summary_table(ok, summaries)]
        blocks += environments.section(docs, ok, summaries, out_dir)
        blocks += [Heading("Findings")]
        for w in workloads:
            blocks += [Heading(w, 3), Bullets(findings([d for d in first if d["workload"] == w], summaries))]
        blocks += [Heading("Plots")]
        blocks += [Image(plots.gc_share_and_spikiness(first, summaries, out_dir / "gc_share.png"),
                         "GC share and max/median step per backend, by workload and GC policy"),
                   Image(plots.policy_effect(first, summaries, out_dir / "policy_effect.png"),
                         "median and p99 step time per backend under each GC policy")]
        for w in workloads:
            sub = [d for d in first if d["workload"] == w]
            blocks += [Heading(f"{w}: step-time traces", 3),
                       Image(plots.traces(sub, w, out_dir / f"trace_{w}.png"), f"{w} step-time traces with GC pauses"),
                       Heading(f"{w}: distribution of step times", 3),
                       Image(plots.distributions(sub, w, out_dir / f"ecdf_{w}.png"), f"{w} step-time ECDF")]
    unstable = [f"{results.label(d)}: {'; '.join(summaries[d['cell']]['warnings'])}" for d in ok if summaries[d["cell"]]["warnings"]]
    if unstable:
        blocks += [Heading("Unstable measurements"), Bullets(unstable)]
    not_run = [d for d in docs if d["status"] != "ok"]
    if not_run:
        blocks += [Heading("Not run"),
                   Table(["cell", "status", "reason"],
                         [[results.label(d), d["status"], (d["reason"] or "").strip().splitlines()[0] if d["reason"] else ""]
                          for d in not_run])]

    if memdoc is not None:
        blocks += _memory_section(memdoc)

    md = out_dir / "index.md"
    md.write_text(to_markdown(blocks))
    page = out_dir / "index.html"
    page.write_text(to_html(blocks, title))
    return {"markdown": md, "html": page, **{p.stem: p for p in sorted(out_dir.glob("*.png"))}}
