"""The report's figures (matplotlib, Agg). Every function takes cell summaries and writes
one PNG at 200 dpi; every axis says what it shows and in which unit.

Conventions that hold in every figure:
- one colour per backend, the same everywhere (`backend_color`), none of them black;
- GC marks (pauses, full collections, the GC part of a bar) are black or grey;
- many series become small multiples, one row per series (backend, with its environment
  when there are several), horizontal, so labels never overlap; legends sit outside the
  data; panels of one metric share their axis;
- log axes use matplotlib's own locators and formatters; bars never sit on a log axis.
"""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402

from .. import files, stats, summary  # noqa: E402
from ..errors import UsageError  # noqa: E402
from ..explain import qualifiers as explain_qualifiers  # noqa: E402
from ..backends import BACKENDS  # noqa: E402

DPI = 200
GC_COLOR = "#111111"
FULL_COLOR = "#000000"
BACKEND_COLORS = {  # Okabe-Ito and friends: tell-apart-able, and none is the black of GC marks
    "jax": "#0072B2", "jax-vmap": "#56B4E9", "equinox-filter": "#D55E00", "equinox-partition": "#E69F00",
    "nnx": "#009E73", "nnx-split": "#7CAE7A", "flux": "#CC79A7", "lux": "#8C564B", "simplechains": "#9A7D0A",
}
_EXTRA = ["#4477AA", "#AA3377", "#228833", "#CCBB44", "#66CCEE", "#EE6677", "#BBBBBB"]
GEN_MARKERS = {0: ("o", "gen 0 (Julia: incremental)"), 1: ("s", "gen 1"), 2: ("^", "gen 2: full")}
ROW_IN = 0.34  # inches per series row in the horizontal figures
WIDTH = 12.0  # every figure is as wide, so that text has one size on the page
MAX_TRACE_ROWS = 8


def backend_color(name: str) -> str:
    if name in BACKEND_COLORS:
        return BACKEND_COLORS[name]
    return _EXTRA[sum(map(ord, name)) % len(_EXTRA)]


def series_of(cs: summary.CellSummary) -> tuple[str, str]:
    return cs.key[0], cs.key[3]


def series_label(series: tuple[str, str]) -> str:
    backend, env = series
    return f"{backend} [{env}]" if env else backend


def ordered_series(cells: list[summary.CellSummary]) -> list[tuple[str, str]]:
    order = {name: i for i, name in enumerate(BACKENDS)}
    envs = list(dict.fromkeys(cs.key[3] for cs in cells))
    found = {series_of(cs) for cs in cells}
    return sorted(found, key=lambda s: (order.get(s[0], len(order)), s[0], envs.index(s[1])))


def policies_of(cells: list[summary.CellSummary]) -> list[str]:
    return list(dict.fromkeys(cs.key[2] for cs in cells))


def log_axis(ax, axis: str = "x") -> None:
    """A log axis with matplotlib's own locator (ticks at 1, 2, 5 per decade) and a plain
    number formatter (0.1, 20, 500; not powers), no labels on minor ticks."""
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(mticker.StrMethodFormatter("{x:g}"))
    target.set_minor_locator(mticker.LogLocator(base=10, subs=np.arange(2, 10) * 1.0))
    target.set_minor_formatter(mticker.NullFormatter())


def save(fig, path: pathlib.Path) -> pathlib.Path:
    """Write the figure atomically (a temporary file, then a rename)."""
    tmp = path.with_name(f".{path.name}.part")
    try:
        fig.savefig(tmp, dpi=DPI, format="png")
        files.write_bytes(path, tmp.read_bytes())
    except OSError as e:  # a full disk, a folder made read-only meanwhile
        raise UsageError(f"cannot write {path.name}: {files.describe_os_error(e)}") from None
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return path


def _legend_outside(fig, handles, title=None) -> None:
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8, title=title, title_fontsize=8,
                   frameon=False)


def _backend_handles(series) -> list:
    names = list(dict.fromkeys(b for b, _ in series))
    return [plt.Line2D([], [], color=backend_color(b), marker="o", lw=0, ms=6, label=b) for b in names]


# -- the summary: median, GC share and full collections, with intervals ----------------------------

def summary_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path:
    """Per policy (rows of panels) and series (rows inside a panel): median step with its
    95 % interval, GC share with its interval, full collections per 1,000 steps with the
    interval of the repeats (none for a fixed schedule). Panels of one metric share their axis."""
    ok = [cs for cs in cells if cs.ok]
    series = ordered_series(ok)
    policies = policies_of(ok)
    metrics = [("median step, ms", _median), ("GC share of step time, %", _share),
               ("full collections per 1,000 steps", _full)]
    height = max(1.3, ROW_IN * len(series) + 0.7) * len(policies) + 0.9
    fig, axes = plt.subplots(len(policies), len(metrics), figsize=(WIDTH, height), squeeze=False,
                             sharey=True, sharex="col", layout="constrained")
    ys = {s: len(series) - 1 - i for i, s in enumerate(series)}
    for r, policy in enumerate(policies):
        for c, (title, get) in enumerate(metrics):
            ax = axes[r][c]
            for cs in ok:
                if cs.key[2] != policy:
                    continue
                value, lo, hi = get(cs.stats)
                y = ys[series_of(cs)]
                color = backend_color(cs.key[0])
                ax.plot([lo, hi], [y, y], color=color, lw=2.2, solid_capstyle="butt")
                ax.plot(value, y, "o", color=color, ms=6, mec="white", mew=0.6)
            ax.grid(axis="x", alpha=0.3, which="both")
            if r == len(policies) - 1:
                ax.set_xlabel(title, fontsize=9)
            if c == 0:
                ax.set_ylabel(f"policy: {policy}", fontsize=9)
            ax.tick_params(labelsize=8)
        axes[r][0].set_yticks(range(len(series)), [series_label(s) for s in reversed(series)])
        axes[r][0].set_ylim(-0.6, len(series) - 0.4)
    log_axis(axes[0][0], "x")
    for c in (1, 2):
        axes[0][c].set_xlim(left=0)
    fig.suptitle(f"{workload}: median step, GC share and full collections (dot: estimate; bar: 95 % interval)",
                 fontsize=10)
    _legend_outside(fig, _backend_handles(series), "backend")
    return save(fig, path)


def _median(s):
    return (s["median_ms"], *stats.bounds(s["median_ms"], s["median_ci_ms"]))


def _share(s):
    lo, hi = stats.bounds(s["gc_share"], s["gc_share_ci"])
    return 100 * s["gc_share"], 100 * lo, 100 * hi


def _full(s):
    r = s["full"]["rate"]
    return (r["value"], *stats.bounds(r["value"], r["ci"]))


# -- traces: every step of one repeat -------------------------------------------------------------

def trace_figures(cells: list[summary.CellSummary], workload: str, folder: pathlib.Path) -> list[pathlib.Path]:
    """Step time of every timed step (log scale) of each cell's first used repeat, with the
    GC pause of each step and the steps with a full collection marked; one row of panels
    per series (sharing their y axis), one column per policy; several files when there are
    many series."""
    ok = [cs for cs in cells if cs.ok]
    series = ordered_series(ok)
    policies = policies_of(ok)
    out = []
    for part, start in enumerate(range(0, len(series), MAX_TRACE_ROWS)):
        rows = series[start: start + MAX_TRACE_ROWS]
        name = f"trace_{workload}.png" if part == 0 else f"trace_{workload}_{part + 1}.png"
        fig, axes = plt.subplots(len(rows), len(policies), figsize=(WIDTH, 1.55 * len(rows) + 1.0),
                                 squeeze=False, sharex=True, sharey="row", layout="constrained")
        for r, s in enumerate(rows):
            for c, policy in enumerate(policies):
                ax = axes[r][c]
                cs = next((x for x in ok if series_of(x) == s and x.key[2] == policy), None)
                if cs is None:
                    ax.set_axis_off()
                    continue
                doc = _first_used(cs)
                wall = np.asarray(doc["wall_ns"]) / 1e6
                gc_ms = np.asarray(doc["gc_ns"]) / 1e6
                steps = np.arange(len(wall))
                ax.plot(steps, wall, lw=0.7, color=backend_color(s[0]))
                has = gc_ms > 0
                ax.scatter(steps[has], gc_ms[has], s=5, color=GC_COLOR, zorder=3, lw=0)
                full = summary.full_collections(doc) > 0
                ax.scatter(steps[full], wall[full], marker="v", s=22, color=FULL_COLOR, zorder=4, lw=0)
                log_axis(ax, "y")
                ax.tick_params(labelsize=7)
                ax.set_title(f"{series_label(s)} / {policy}", fontsize=8, loc="left")
                if c == 0:
                    ax.set_ylabel("ms", fontsize=8)
                if r == len(rows) - 1:
                    ax.set_xlabel("timed step", fontsize=8)
        handles = [plt.Line2D([], [], color="#777777", lw=1, label="step time (backend colour)"),
                   plt.Line2D([], [], color=GC_COLOR, marker="o", lw=0, ms=3, label="GC pause in the step"),
                   plt.Line2D([], [], color=FULL_COLOR, marker="v", lw=0, ms=5, label="step with a full collection")]
        fig.suptitle(f"{workload}: every timed step of one repeat" +
                     (f" (part {part + 1})" if len(series) > MAX_TRACE_ROWS else ""), fontsize=10)
        _legend_outside(fig, handles)
        out.append(save(fig, folder / name))
    return out


def _first_used(cs: summary.CellSummary) -> dict:
    used = cs.stats["used"]
    return next(d for d in cs.docs if d["status"] == "ok" and d["repeat"] == used[0])


def _used_docs(cs: summary.CellSummary) -> list[dict]:
    used = set(cs.stats["used"])
    return [d for d in cs.docs if d["status"] == "ok" and d["repeat"] in used]


# -- distributions ------------------------------------------------------------------------------

def ecdf_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path:
    """ECDF of step times (every used repeat's steps pooled), one panel per policy and, when
    cells ran in several environments, one row of panels per environment."""
    ok = [cs for cs in cells if cs.ok]
    policies = policies_of(ok)
    envs = list(dict.fromkeys(cs.key[3] for cs in ok))
    fig, axes = plt.subplots(len(envs), len(policies), figsize=(WIDTH, 2.9 * len(envs) + 0.8),
                             squeeze=False, sharex=True, sharey=True, layout="constrained")
    for r, env in enumerate(envs):
        for c, policy in enumerate(policies):
            ax = axes[r][c]
            for cs in ok:
                if cs.key[2] != policy or cs.key[3] != env:
                    continue
                wall = np.sort(np.concatenate([np.asarray(d["wall_ns"]) for d in _used_docs(cs)])) / 1e6
                ax.step(wall, np.arange(1, len(wall) + 1) / len(wall), where="post", lw=1.2,
                        color=backend_color(cs.key[0]))
            log_axis(ax, "x")
            ax.grid(alpha=0.3, which="both")
            ax.tick_params(labelsize=8)
            ax.set_title(f"{policy}" + (f" [{env}]" if env else ""), fontsize=9, loc="left")
            if r == len(envs) - 1:
                ax.set_xlabel("step time, ms", fontsize=9)
            if c == 0:
                ax.set_ylabel("share of steps at most this long", fontsize=8)
    fig.suptitle(f"{workload}: distribution of step times", fontsize=10)
    _legend_outside(fig, _backend_handles(ordered_series(ok)), "backend")
    return save(fig, path)


# -- where the time goes: GC against the rest ---------------------------------------------------------

def gc_split_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path:
    """Per series and policy: the mean step split into GC pause (black) and the rest
    (backend colour), in ms on a linear axis starting at zero."""
    ok = [cs for cs in cells if cs.ok]
    series = ordered_series(ok)
    policies = policies_of(ok)
    fig, axes = plt.subplots(1, len(policies), figsize=(WIDTH, ROW_IN * len(series) + 1.5),
                             squeeze=False, sharey=True, sharex=True, layout="constrained")
    ys = {s: len(series) - 1 - i for i, s in enumerate(series)}
    for c, policy in enumerate(policies):
        ax = axes[0][c]
        for cs in ok:
            if cs.key[2] != policy:
                continue
            y = ys[series_of(cs)]
            gc_ms = cs.stats["gc_ms_per_step"]
            rest = cs.stats["mean_ms"] - gc_ms
            ax.barh(y, rest, 0.7, color=backend_color(cs.key[0]))
            ax.barh(y, gc_ms, 0.7, left=rest, color=GC_COLOR)
        ax.set_xlim(left=0)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(policy, fontsize=9, loc="left")
        ax.set_xlabel("mean step, ms", fontsize=9)
        ax.tick_params(labelsize=8)
    axes[0][0].set_yticks(range(len(series)), [series_label(s) for s in reversed(series)])
    fig.suptitle(f"{workload}: where a step's time goes (mean step = the rest + GC pause)", fontsize=10)
    _legend_outside(fig, _backend_handles(series) +
                    [matplotlib.patches.Patch(color=GC_COLOR, label="GC pause")], "the rest, by backend")
    return save(fig, path)


def cumulative_gc_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path | None:
    """Cumulative GC pause time over the steps of one repeat, per series; one panel per
    policy under which any collection ran. None when no cell of the workload collected."""
    ok = [cs for cs in cells if cs.ok and cs.stats["gc_ms_per_step"] > 0]
    if not ok:
        return None
    policies = policies_of(ok)
    envs = list(dict.fromkeys(cs.key[3] for cs in ok))
    styles = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(1, len(policies), figsize=(WIDTH, 3.2),
                             squeeze=False, sharey=True, layout="constrained")
    for c, policy in enumerate(policies):
        ax = axes[0][c]
        for cs in ok:
            if cs.key[2] != policy:
                continue
            doc = _first_used(cs)
            cum = np.cumsum(np.asarray(doc["gc_ns"])) / 1e6
            ax.plot(np.arange(len(cum)), cum, color=backend_color(cs.key[0]), lw=1.3,
                    ls=styles[envs.index(cs.key[3]) % len(styles)])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_title(policy, fontsize=9, loc="left")
        ax.set_xlabel("timed step", fontsize=9)
        ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel("GC pause so far, ms", fontsize=9)
    fig.suptitle(f"{workload}: cumulative GC time over one repeat", fontsize=10)
    _legend_outside(fig, _backend_handles(ordered_series(ok)), "backend")
    return save(fig, path)


def pauses(cs: summary.CellSummary) -> dict[int, np.ndarray]:
    """Pause lengths in ms by generation over the used repeats: from the collection log
    where there is one (Python), else from the steps with exactly one collection (Julia:
    incremental counts as generation 0, full as 2)."""
    out: dict[int, list] = {}
    for doc in _used_docs(cs):
        events = doc.get("gc_events")
        if events:
            for gen, pause in zip(events["generation"], events["pause_ns"]):
                if pause > 0:
                    out.setdefault(int(gen), []).append(pause / 1e6)
            continue
        colls = summary.collections(doc)
        full_gen = 2 if colls.shape[1] == 2 else colls.shape[1] - 1
        for row, ns in zip(colls, doc["gc_ns"]):
            if row.sum() == 1 and ns > 0:
                gen = int(np.argmax(row))
                out.setdefault(full_gen if gen == colls.shape[1] - 1 else gen, []).append(ns / 1e6)
    return {g: np.asarray(v) for g, v in sorted(out.items())}


def pauses_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path | None:
    """Every collection's pause, by generation (marker) and series (row), on a log axis;
    one panel per policy. None when no pause was recorded."""
    ok = [cs for cs in cells if cs.ok]
    data = {cs.key: pauses(cs) for cs in ok}
    ok = [cs for cs in ok if data[cs.key]]
    if not ok:
        return None
    series = ordered_series(ok)
    policies = policies_of(ok)
    fig, axes = plt.subplots(1, len(policies), figsize=(WIDTH, ROW_IN * 1.3 * len(series) + 1.5),
                             squeeze=False, sharey=True, sharex=True, layout="constrained")
    ys = {s: len(series) - 1 - i for i, s in enumerate(series)}
    rng = np.random.default_rng(0)
    for c, policy in enumerate(policies):
        ax = axes[0][c]
        for cs in ok:
            if cs.key[2] != policy:
                continue
            for gen, values in data[cs.key].items():
                marker, _ = GEN_MARKERS.get(gen, ("D", f"gen {gen}"))
                offset = {0: 0.22, 1: 0.0, 2: -0.22}.get(gen, 0)
                y = ys[series_of(cs)] + offset + rng.uniform(-0.07, 0.07, len(values))
                ax.scatter(values, y, s=10 if gen < 2 else 22, marker=marker, color=backend_color(cs.key[0]),
                           alpha=0.6 if gen < 2 else 0.9, lw=0)
        log_axis(ax, "x")
        ax.grid(axis="x", alpha=0.3, which="both")
        ax.set_title(policy, fontsize=9, loc="left")
        ax.set_xlabel("pause, ms", fontsize=9)
        ax.tick_params(labelsize=8)
    axes[0][0].set_yticks(range(len(series)), [series_label(s) for s in reversed(series)])
    handles = [plt.Line2D([], [], color="#555555", marker=m, lw=0, ms=6, label=label)
               for m, label in GEN_MARKERS.values()]
    fig.suptitle(f"{workload}: length of every GC pause, by generation", fontsize=10)
    _legend_outside(fig, handles + _backend_handles(series))
    return save(fig, path)


# -- bisect -------------------------------------------------------------------------------------

def bisect_figure(tab: dict, path: pathlib.Path) -> pathlib.Path:
    """The bisected metric per version (every repeat a dot, the median a line) above the
    median step; the first version with a tested change is marked."""
    rows = [r for r in tab["rows"] if r["status"] == "ok"]
    versions = [r["version"] for r in tab["rows"]]
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 5.6), sharex=True,
                             height_ratios=[3, 2], layout="constrained")
    unit = "" if tab["unit"] == "x" else f", {tab['unit']}"
    x = {v: i for i, v in enumerate(versions)}
    for r in rows:
        i = x[r["version"]]
        color = "#D55E00" if r.get("first_change") else "#0072B2"
        axes[0].hlines(r["value"], i - 0.3, i + 0.3, color=color, lw=2.5)
        axes[0].scatter([i] * len(r["values"]), r["values"], color=color, s=18, zorder=3)
        axes[1].hlines(r["median_ms"], i - 0.3, i + 0.3, color="#555555", lw=2.5)
    for r in tab["rows"]:
        if r["status"] != "ok":
            axes[0].annotate(r["status"], (x[r["version"]], 0), xytext=(0, 4), textcoords="offset points",
                             ha="center", fontsize=8, color="#555555")
    if tab["first_change"] is not None:
        i = x[tab["first_change"]]
        axes[0].axvline(i - 0.5, color="#D55E00", ls="--", lw=1)
        axes[0].annotate(f"first change > {tab['factor']:g} x", (i - 0.5, 1.0),
                         xycoords=("data", "axes fraction"), xytext=(4, -4), textcoords="offset points",
                         ha="left", va="top", fontsize=8, color="#D55E00")
    axes[0].set_ylabel(f"{tab['metric_title']}{unit}", fontsize=9)
    axes[0].set_ylim(bottom=0)
    axes[0].grid(axis="y", alpha=0.3)
    axes[1].set_ylabel("median step, ms", fontsize=9)
    axes[1].set_ylim(bottom=0)
    axes[1].grid(axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(versions)), versions, fontsize=8)
    axes[1].set_xlim(-0.5, len(versions) - 0.5)
    axes[1].set_xlabel(f"{tab['package']} version", fontsize=9)
    fig.suptitle(f"{tab['cell']}: {tab['metric_title']} per {tab['package']} version "
                 "(dots: repeats; line: their median)", fontsize=10)
    return save(fig, path)



def gitbisect_figure(tab: dict, path: pathlib.Path) -> pathlib.Path:
    """The bisected metric of every tested commit, in history order (every repeat a dot, the
    cell's value a line); untested commits are ticks without a value, the first bad one is marked."""
    rows = {r["index"]: r for r in tab["rows"]}
    n = tab["commits_between"] + 1
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8), layout="constrained")
    for i, r in rows.items():
        bad = r["decision"].startswith("bad")
        color = "#D55E00" if bad else "#0072B2" if r["decision"].startswith("good") else "#777777"
        if r["value"] is None:
            ax.annotate("skip", (i, 0), xytext=(0, 4), textcoords="offset points", ha="center", fontsize=8, color=color)
            continue
        ax.hlines(r["value"], i - 0.35, i + 0.35, color=color, lw=2.5)
        ax.scatter([i] * len(r["per_repeat"]), r["per_repeat"], color=color, s=18, zorder=3)
    if tab["first_bad"]:
        i = next(r["index"] for r in tab["rows"] if r["sha"] == tab["first_bad"])
        ax.axvline(i - 0.5, color="#D55E00", ls="--", lw=1)
        ax.annotate(f"first bad: {tab['first_bad'][:9]}", (i - 0.5, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(4, -4), textcoords="offset points", ha="left", va="top", fontsize=8, color="#D55E00")
    labels = [""] * n
    for i, r in rows.items():
        labels[i] = r["sha"][:7]
    ax.set_xticks(range(n), labels, fontsize=7, rotation=90)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    unit = f", {tab['unit']}" if tab["unit"] else ""
    ax.set_ylabel(f"{tab['metric_title']}{unit}", fontsize=9)
    ax.set_xlabel(f"{tab['package']} first-parent commits, oldest (the good endpoint) to newest; "
                  "labelled where tested (blue: like good, orange: like bad)", fontsize=9)
    ax.set_title(f"{tab['cell']}: {tab['metric_title']} per tested commit (dots: repeats; line: the cell's value)",
                 fontsize=10)
    return save(fig, path)

# -- why: what the collector had to do ---------------------------------------------------------------

def why_figure(explanations: list[dict], path: pathlib.Path) -> pathlib.Path | None:
    """Per explained cell: objects promoted to the oldest generation per step (left) and the
    size of the oldest generation over the diagnostic run (right), full collections marked."""
    rows = [e for e in explanations if "python" in e]
    if not rows:
        return None
    fig, axes = plt.subplots(len(rows), 2, figsize=(WIDTH, 2.2 * len(rows) + 1.0), squeeze=False,
                             layout="constrained")
    for r, e in enumerate(rows):
        py = e["python"]
        color = backend_color(e["cell"]["backend"])
        name = e["label"] + explain_qualifiers(e)
        promoted = np.asarray(py["promoted_per_step"])
        axes[r][0].bar(np.arange(len(promoted)), promoted, width=1.0, color=color)
        axes[r][0].set_ylabel("objects", fontsize=8)
        axes[r][0].set_title(f"{name}: promoted per step (at collections of generation 1)", fontsize=8, loc="left")
        oldest = np.asarray(py["oldest"], dtype=float).reshape(-1, 2)
        axes[r][1].step(oldest[:, 0], oldest[:, 1], where="post", color=color, lw=1.3)
        for s in py["full_steps"]:
            axes[r][1].axvline(s, color=FULL_COLOR, ls=":", lw=0.9)
        axes[r][1].set_ylabel("objects (axis not from 0)", fontsize=8)  # its growth is the point
        for ax in axes[r]:
            ax.yaxis.set_major_formatter(mticker.StrMethodFormatter("{x:,.0f}"))
        axes[r][1].set_title(f"{name}: the oldest generation (dotted: full collections)", fontsize=8, loc="left")
        for ax in axes[r]:
            ax.tick_params(labelsize=7)
            ax.grid(axis="y", alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("diagnostic step", fontsize=8)
    fig.suptitle("why: what the collector had to do (diagnostic runs: timings disturbed)", fontsize=10)
    return save(fig, path)
