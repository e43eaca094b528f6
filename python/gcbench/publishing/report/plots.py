"""The report's figures (matplotlib, Agg). Every function takes cell summaries and writes
one PNG, 10 inches wide at 150 dpi (1,500 px: shown at about 0.9 x in a 1,400 px window,
and linked at full size from the page); every axis says what it shows and in which unit.

How it works, and why: docs/internals.md, `gcbench.publishing.report.plots`.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np

from ...analysing import stats, summary
from ...analysing.explanation_records import Explanation
from ...analysing.gitbisect import CommitTable
from ...analysing.version_bisect import VersionTable
from ...core import files, wording
from ...core.errors import UsageError
from ...measuring import results
from ...measuring.backends import BACKENDS
from ...measuring.results import ResultDoc
from .. import bisect_text, verdict
from ..explanation_text import qualifiers as explain_qualifiers
from .document import natural_key

DPI = 150
WIDTH = 10.0  # every figure is as wide, so that text has one size on the page
# the smallest text in a figure (ticks, legends, annotations): at 800 px a 1,500 px figure is
# shown at about half size, where 11 pt at 150 dpi is still 11-12 px
TEXT_PT = 11
STYLE: dict[str, Any] = {"font.size": 12, "axes.titlesize": 12, "axes.labelsize": 12, "xtick.labelsize": TEXT_PT,
         "ytick.labelsize": TEXT_PT, "legend.fontsize": TEXT_PT, "legend.title_fontsize": TEXT_PT,
         "figure.titlesize": 13}
matplotlib.rcParams.update(STYLE)  # type: ignore[arg-type]  # the stubs spell every key as a literal
GC_COLOR = "#111111"
FULL_COLOR = "#000000"
BACKEND_COLORS = {  # Okabe-Ito and friends: tell-apart-able, and none is the black of GC marks
    "jax": "#0072B2", "jax-vmap": "#56B4E9", "equinox-filter": "#D55E00", "equinox-partition": "#E69F00",
    "nnx": "#009E73", "nnx-split": "#7CAE7A", "flux": "#CC79A7", "lux": "#8C564B", "simplechains": "#9A7D0A",
}
_EXTRA = ["#4477AA", "#AA3377", "#228833", "#CCBB44", "#66CCEE", "#EE6677", "#BBBBBB"]
ENV_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C564B", "#9A7D0A",
              "#AA3377", "#4477AA", "#228833", "#EE6677", "#66CCEE", "#777777"]
# marker, size (points^2), filled, label: three shapes that differ at a glance
GEN_MARKERS = {0: ("o", 16, False, "gen 0 (Julia: incremental)"), 1: ("s", 20, False, "gen 1"),
               2: ("^", 42, True, "gen 2: full")}
ROW_IN = 0.3  # inches per series row in the horizontal figures
MAX_TRACE_ROWS = 4  # a file of traces at most about 1,300 px tall (eight rows were 2,595 px)


def backend_color(name: str) -> str:
    if name in BACKEND_COLORS:
        return BACKEND_COLORS[name]
    return _EXTRA[sum(map(ord, name)) % len(_EXTRA)]


def env_colors(envs: list[str]) -> dict[str, str]:
    """One colour per environment, in the order given (they repeat after 14)."""
    return {env: ENV_COLORS[i % len(ENV_COLORS)] for i, env in enumerate(envs)}


def series_of(cs: summary.CellSummary) -> tuple[str, str]:
    return cs.key[0], summary.context(cs.key)


def _common_words(among: list[tuple[str, str]]) -> set[str]:
    """The words of the environment every series has (none where a series has none)."""
    return set.intersection(*(set(e.split()) for _, e in among)) if all(e for _, e in among) else set()


def series_label(series: tuple[str, str], among: list[tuple[str, str]] | None = None) -> str:
    """`backend [environment]`; beside the other series `among`, without what all of them
    share (the backend when there is one, words of the environment every series has, such
    as `py3.11`), wrapped to two lines when long, so that labels leave the panels room."""
    import textwrap

    backend, env = series
    if not among:
        return f"{backend} [{env}]" if env else backend
    common = _common_words(among)
    env = " ".join(w for w in env.split() if w not in common)
    one_backend = len({b for b, _ in among}) == 1
    label = env if (one_backend and env) else (f"{backend} [{env}]" if env else backend)
    return textwrap.fill(label, 34, break_on_hyphens=False)


def _row_in(series: list[tuple[str, str]]) -> float:
    """Inches a series row takes: more where a label wraps to two lines."""
    return ROW_IN * (1.6 if any("\n" in series_label(s, series) for s in series) else 1.0)


def ordered_series(cells: list[summary.CellSummary]) -> list[tuple[str, str]]:
    order = {name: i for i, name in enumerate(BACKENDS)}
    envs = envs_of(cells)
    found = {series_of(cs) for cs in cells}
    return sorted(found, key=lambda s: (order.get(s[0], len(order)), s[0], envs.index(s[1])))


def policies_of(cells: list[summary.CellSummary]) -> list[str]:
    return list(dict.fromkeys(cs.key[2] for cs in cells))


def envs_of(cells: list[summary.CellSummary]) -> list[str]:
    """The environments (and node types, where several are in play) of `cells`, in order."""
    return list(dict.fromkeys(summary.context(cs.key) for cs in cells))


def log_axis(ax, axis: str = "x") -> None:
    """A log axis; `save` gives it its ticks and its "(log scale)" label once the data are in."""
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")


# room a tick label of 9 pt text ("0.45", "200") takes along an axis, with a gap: its width
# along an x axis, its height along a y axis
TICK_LABEL_IN = {"x": 0.5, "y": 0.27}


def _finish_log_axes(fig) -> None:
    """Every linear axis with as many ticks as its labels fit side by side (labels at most
    4 significant digits), and every log axis with at least three labelled ticks in view, as few as that
    allows (decades; else 1-3, 1-2-5 or every integer multiple per decade; evenly spaced
    values when the data span less than a factor of two, or when the multiples would not
    fit the axis's length side by side), plain numbers (0.1, 20, 500), and "(log scale)"
    in its label."""
    for ax in fig.axes:
        box = ax.get_position()
        for name, axis, scale, limits, inches in (
                ("x", ax.xaxis, ax.get_xscale(), ax.get_xlim(), box.width * fig.get_figwidth()),
                ("y", ax.yaxis, ax.get_yscale(), ax.get_ylim(), box.height * fig.get_figheight())):
            room = max(3, int(inches / TICK_LABEL_IN[name]))  # labels that fit side by side
            if scale == "log":
                lo, hi = sorted(limits)
                _log_ticks(axis, lo, hi, room)
            elif scale == "linear" and type(axis.get_major_formatter()) is mticker.ScalarFormatter:
                # as many ticks as fit, short labels ("0.005", not "0.0050")
                axis.set_major_locator(mticker.MaxNLocator(nbins=max(2, min(room - 1, 6))))
                axis.set_major_formatter(mticker.FuncFormatter(lambda x, _: f"{x:,.4g}"))


def _log_ticks(axis, lo: float, hi: float, room: int) -> None:
    """A log axis's ticks: the fewest of decades, 1-3, 1-2-5 or every multiple that label
    three or more in view and fit side by side (else evenly spaced values), plain numbers,
    and "(log scale)" in its label."""
    for locator in (mticker.LogLocator(base=10, subs=(1.0,)), mticker.LogLocator(base=10, subs=(1.0, 3.0)),
                    mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)),
                    mticker.LogLocator(base=10, subs=tuple(float(k) for k in range(1, 10))),
                    mticker.MaxNLocator(nbins=max(2, min(room - 1, 5)), min_n_ticks=3)):
        if 3 <= sum(lo <= t <= hi for t in locator.tick_values(lo, hi)) <= room:
            break
    axis.set_major_locator(locator)
    axis.set_major_formatter(mticker.FuncFormatter(lambda x, _: f"{x:.3g}"))
    axis.set_minor_locator(mticker.LogLocator(base=10, subs=tuple(float(k) for k in range(2, 10))))
    axis.set_minor_formatter(mticker.NullFormatter())
    label = axis.get_label_text()
    if label and "log scale" not in label:
        axis.set_label_text(f"{label} (log scale)")


def _fit_suptitle(fig) -> None:
    """The figure's title from the left edge, wrapped to the width a legend at the upper right,
    outside the axes, leaves it (a legend below the panels takes none), so that the two
    never overlap."""
    import textwrap

    text = fig.get_suptitle()
    if not text:
        return
    room = fig.get_figwidth()
    beside = [lg for lg in fig.legends if getattr(lg, "_outside_loc", "right") in ("right", None)]  # not below
    if beside:
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        room -= max(lg.get_window_extent(renderer).width for lg in beside) / fig.dpi + 0.3
    size = matplotlib.rcParams["figure.titlesize"]
    chars = max(30, int(room * 72 / (0.56 * size)))  # an average character is about 0.56 em wide
    fig.suptitle("\n".join(textwrap.fill(line, chars, break_on_hyphens=False) for line in text.split("\n")),
                 x=0.01, ha="left")


def save(fig, path: pathlib.Path) -> pathlib.Path:
    """Write the figure atomically (a temporary file, then a rename)."""
    _finish_log_axes(fig)
    _fit_suptitle(fig)
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
        fig.legend(handles=handles, loc="outside right upper", title=title, frameon=False)


def _backend_handles(series) -> list:
    names = list(dict.fromkeys(b for b, _ in series))
    return [plt.Line2D([], [], color=backend_color(b), marker="o", lw=0, ms=6, label=b) for b in names]


def _env_handles(colors: dict[str, str]) -> list:
    return [plt.Line2D([], [], color=c, lw=2, label=env or "(this machine's Python)") for env, c in colors.items()]


def _no_data(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#555555")


# -- the summary: median, GC share and full collections, with intervals ----------------------------

def summary_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path:
    """Per policy (rows of panels) and series (rows inside a panel): median step with its
    95 % interval, GC share with its interval, full collections per 1,000 steps with the
    interval of the repeats (none for a fixed schedule). Panels of one metric share their
    axis; a panel where no cell had a full collection says so instead of a row of zeros, and
    a figure where none had one leaves the column out; a GC share under 0.1 % in every cell
    of a panel reads "negligible" instead of a full axis of 0-0.01 %."""
    ok = [cs for cs in cells if cs.ok]
    series = ordered_series(ok)
    policies = policies_of(ok)
    cpu = verdict.in_cpu_time([cs.measured for cs in ok])  # the report's one kind of GC share
    has_full = any(cs.measured.full.rate.value for cs in ok)  # else no panel of zeros: the title says none
    metrics = _summary_metrics(cpu, has_full)
    height = max(1.3, _row_in(series) * len(series) + 0.8) * len(policies) + 1.0
    fig, axes = plt.subplots(len(policies), len(metrics), figsize=(WIDTH, height), squeeze=False,
                             sharey=True, sharex="col", layout="constrained")
    ys = {s: len(series) - 1 - i for i, s in enumerate(series)}
    for r, policy in enumerate(policies):
        mine = [cs for cs in ok if cs.key[2] == policy]
        for c, (_, _, get) in enumerate(metrics):
            _summary_panel(axes[r][c], c, mine, get, ys, cpu)
            axes[r][c].grid(axis="x", alpha=0.3, which="major")
        axes[r][0].set_ylabel(f"policy: {policy}")
        _series_axis(axes[r][0], series)
    for c, (title, unit, _) in enumerate(metrics):
        axes[0][c].set_title(title, loc="left")
        axes[-1][c].set_xlabel(unit)
    log_axis(axes[0][0], "x")
    for c in range(1, len(metrics)):
        axes[0][c].set_xlim(0, axes[0][c].get_xlim()[1] * 1.06)  # a dot at the top stays whole
    fig.suptitle(f"{workload}: median step, GC share and full collections ({_bars(ok)})" if has_full else
                 f"{workload}: median step and GC share ({_bars(ok)}); no full collection in any repeat")
    _legend_outside(fig, _backend_handles(series), "backend")
    return save(fig, path)


def _summary_metrics(cpu: bool, has_full: bool) -> list[tuple]:
    """The summary's columns: title, unit and how a cell's value and interval are read."""
    return [("median step", "ms", _median),
            ("GC share", f"% of {'CPU' if cpu else 'wall'} time", lambda s: _share(s, cpu)),
            *([("full collections", "per 1,000 steps", _full)] if has_full else [])]


def _summary_panel(ax, column: int, mine: list[summary.CellSummary], get, ys: dict, cpu: bool) -> None:
    """One panel of the summary: a dot and its interval per cell, or why there is none (no
    full collection in any repeat; a GC share too small to draw on an axis of its own)."""
    if column == 2 and all(cs.measured.full.rate.value == 0 for cs in mine):
        _no_data(ax, "none in\nany repeat")
        return
    if column == 1 and all(_share(cs.measured, cpu)[2] < 100 * verdict.NEGLIGIBLE_SHARE for cs in mine):
        # a share of 0.009 % drawn on its own 0-0.01 % axis looked as large as 35 % elsewhere
        _no_data(ax, f"negligible: under\n{100 * verdict.NEGLIGIBLE_SHARE:g} % in every cell")
        return
    for cs in mine:
        value, lo, hi = get(cs.measured)
        y = ys[series_of(cs)]
        color = backend_color(cs.key[0])
        ax.plot([lo, hi], [y, y], color=color, lw=2.2, solid_capstyle="butt")
        ax.plot(value, y, "o", color=color, ms=6, mec="white", mew=0.6)


def _median(s):
    return (s.median_ms, *stats.bounds(s.median_ms, s.median_ci_ms))


def _share(s, cpu: bool):
    """A cell's GC share in %, of CPU or wall time (the report's one kind), and its interval."""
    estimate = s.share(cpu)
    lo, hi = stats.bounds(estimate.value, estimate.ci)
    return 100 * estimate.value, 100 * lo, 100 * hi


def _bars(ok: list[summary.CellSummary]) -> str:
    """What a figure's bars are: 95 % intervals where every cell has the repeats for one; where
    none has, why none is drawn (an interval needs stats.MIN_PROCESSES repeats)."""
    with_ci = sum(cs.measured.median_ci_ms is not None for cs in ok)
    if with_ci == len(ok):
        return "dot: estimate; bar: 95 % interval"
    if not with_ci:
        return f"dot: estimate; no intervals: fewer than {stats.MIN_PROCESSES} repeats a cell"
    return f"dot: estimate; bar: 95 % interval, where a cell has {stats.MIN_PROCESSES} repeats or more"


def _full(s):
    r = s.full.rate
    return (r.value, *stats.bounds(r.value, r.ci))


# -- traces: every step of one repeat -------------------------------------------------------------

def trace_doc(cs: summary.CellSummary) -> ResultDoc:
    """The repeat a trace shows: the first used one that made a full collection, else the first used."""
    return next((d for d in cs.used_docs if summary.full_collections(d).any()), cs.used_docs[0])


def trace_repeat(cs: summary.CellSummary) -> str:
    """Which repeat a trace shows, in words."""
    return f"r{trace_doc(cs).repeat + 1}"


def trace_cells(cells: list[summary.CellSummary]) -> tuple[list[summary.CellSummary], list[summary.CellSummary]]:
    """The cells that made a full collection in a used repeat (drawn in the trace), and the
    others (named above it, with their median step: a flat line says nothing a number does not)."""
    ok = [cs for cs in cells if cs.ok]
    order = {s: i for i, s in enumerate(ordered_series(ok))}
    policies = policies_of(ok)
    ok.sort(key=lambda cs: (order[series_of(cs)], policies.index(cs.key[2])))
    events: list[summary.CellSummary] = []
    quiet: list[summary.CellSummary] = []
    for cs in ok:
        (events if summary.full_collections(trace_doc(cs)).any() else quiet).append(cs)
    return events, quiet


def resolved_label(cs: summary.CellSummary, packages: list[str]) -> str | None:
    """`backend [py3.11 jax 0.10.2 equinox 0.13.8]`: a cell's environment by what it resolved
    (a spec such as `python=3.11` pins nothing, and `[py3.11]` hid which jax and equinox ran),
    for the `packages` that differ among the report's environments; None for a cell that ran
    in none."""
    env = results.part(results.ok(cs.docs)[0], "environment")
    if not env.get("python") or not packages:
        return None
    python = ".".join(str(env.get("python")).split(".")[:2])
    versions = env.get("packages") or {}
    shown = without_paired_jaxlib(packages, [versions])
    return f"{cs.key[0]} [py{python} " + " ".join(f"{p} {versions.get(p) or '-'}" for p in shown) + "]"


def _trace_panel(ax, cs: summary.CellSummary, label: str) -> None:
    """One repeat's every step as a line, each full collection's pause a dot on its step,
    the median step dashed and in the title."""
    doc = trace_doc(cs)
    wall = np.asarray(doc.wall_ns) / 1e6
    gc_ms = np.minimum(np.asarray(doc.gc_ns) / 1e6, wall)
    steps = np.arange(len(wall))
    fc = summary.full_collections(doc)
    full = (fc > 0) & (gc_ms > 0)
    ax.plot(steps, wall, lw=0.9, color=backend_color(cs.key[0]))
    ax.scatter(steps[full], gc_ms[full], marker="o", s=22, color=FULL_COLOR, zorder=4, lw=0)
    typical = float(np.median(wall))
    ax.axhline(typical, color="#555555", ls="--", lw=0.8, zorder=1)
    log_axis(ax, "y")
    ax.set_title(_wrapped(f"{label} / {cs.key[2]}, {trace_repeat(cs)}: "
                          f"{int(fc.sum())} full, median {typical:.3g} ms", (WIDTH - 1.0) / 2), loc="left")


def _trace_panels(axes: list, shown: list[summary.CellSummary], labels: list[str]) -> None:
    """Two panels a row, the spare one off; y labels on the left, step labels at the bottom."""
    for k, ax in enumerate(axes):
        if k >= len(shown):
            ax.set_axis_off()
            continue
        _trace_panel(ax, shown[k], labels[k])
        if k % 2 == 0:
            ax.set_ylabel("ms")
        if k >= len(shown) - 2:
            ax.set_xlabel("timed step")
            ax.xaxis.set_tick_params(labelbottom=True)


def trace_figures(cells: list[summary.CellSummary], workload: str, folder: pathlib.Path,
                  packages: list[str] | None = None) -> list[pathlib.Path]:
    """Every timed step of one repeat (the first used one with a full collection) of each cell
    that made one, two panels a row on one log y range: the step time as a line in the backend's
    colour, the pause of each full collection as a black dot on its step (at its own length:
    a 150 ms pause in a 160 ms step sits just under the step's peak), and a dashed line at
    the repeat's median step, whose number the panel's title gives. Cells without a
    full collection get no panel: the title names them with their median step.
    Several files when there are many cells; none when no cell made a full collection."""
    events, quiet = trace_cells(cells)
    if not events:
        return []
    among = ordered_series(events + quiet)
    per_file = 2 * MAX_TRACE_ROWS
    out = []
    for part, start in enumerate(range(0, len(events), per_file)):
        shown = events[start: start + per_file]
        rows = (len(shown) + 1) // 2
        name = f"trace_{workload}.png" if part == 0 else f"trace_{workload}_{part + 1}.png"
        last = start + per_file >= len(events)
        fig, axes = plt.subplots(rows, 2, figsize=(WIDTH, 2.0 * rows + 1.3),
                                 squeeze=False, sharex=True, sharey=True, layout="constrained")
        _trace_panels(list(axes.flat), shown, [resolved_label(cs, packages or []) or
                                               series_label(series_of(cs), among) for cs in shown])
        handles = [plt.Line2D([], [], color="#777777", lw=1, label="step time (backend colour)"),
                   plt.Line2D([], [], color=FULL_COLOR, marker="o", lw=0, ms=5,
                              label="pause of a full collection, on its step"),
                   plt.Line2D([], [], color="#555555", ls="--", lw=0.8, label="median step")]
        note = ("\nno full collection, not drawn: " + "; ".join(
            f"{series_label(series_of(cs), among)} / {cs.key[2]} (median {cs.measured.median_ms:.3g} ms)"
            for cs in quiet)) if last and quiet else ""
        fig.suptitle(f"{workload}: every timed step of one repeat, cells that made a full collection" +
                     (f" (part {part + 1})" if len(events) > per_file else "") + note)
        # below the panels, in one row: at the right it would take a third of their width
        fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
        out.append(save(fig, folder / name))
    return out


def _wrapped(text: str, inches: float) -> str:
    """A panel title wrapped to the panel's width (12 pt text: about 12 characters an inch)."""
    import textwrap

    return textwrap.fill(text, max(12, int(inches * 12)), break_on_hyphens=False)


# -- distributions ------------------------------------------------------------------------------

def _line_panels(ok: list[summary.CellSummary], row_in: float, title: str, draw, xlabel: str, ylabel: str,
                 path: pathlib.Path) -> pathlib.Path:
    """Panels of lines, one column per policy: one line per backend in its colour; when the
    cells ran in several environments, one row of panels per backend and one line (colour)
    per environment, the environments named in the legend. `draw(ax, cs, color)` draws a
    cell's line."""
    policies = policies_of(ok)
    envs = envs_of(ok)
    by_env = len(envs) > 1
    rows = list(dict.fromkeys(b for b, _ in ordered_series(ok))) if by_env else [None]
    colors = env_colors(envs)
    fig, axes = plt.subplots(len(rows), len(policies), figsize=(WIDTH, row_in * len(rows) + 1.0),
                             squeeze=False, sharex=True, sharey=True, layout="constrained")
    for r, backend in enumerate(rows):
        for c, policy in enumerate(policies):
            mine = [cs for cs in ok if cs.key[2] == policy and (not by_env or cs.key[0] == backend)]
            for cs in mine:
                draw(axes[r][c], cs, colors[summary.context(cs.key)] if by_env else backend_color(cs.key[0]))
            axes[r][c].grid(alpha=0.3)
            axes[r][c].set_title(policy + (f" / {backend}" if by_env else ""), loc="left")
        axes[r][0].set_ylabel(ylabel)
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
    fig.suptitle(title)
    if by_env:
        _legend_outside(fig, _env_handles(colors), "environment")
    else:
        _legend_outside(fig, _backend_handles(ordered_series(ok)), "backend")
    return save(fig, path)


def ecdf_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path:
    """ECDF of step times (every used repeat's steps pooled), one panel per policy (see
    `_line_panels` for environments)."""
    def draw(ax, cs, color):
        wall = np.sort(np.concatenate([np.asarray(d.wall_ns) for d in cs.used_docs])) / 1e6
        ax.step(wall, np.arange(1, len(wall) + 1) / len(wall), where="post", lw=1.2, color=color)
        log_axis(ax, "x")

    return _line_panels([cs for cs in cells if cs.ok], 2.6, f"{workload}: distribution of step times", draw,
                        "step time, ms", "share of steps\nat most this long", path)


# -- where the time goes: GC against the rest ---------------------------------------------------------

def _split_bar(ax, cs: summary.CellSummary, y: float) -> None:
    """A cell's mean step as a bar: the rest in the backend's colour, then the GC pause; the
    mean's interval as a whisker, and the GC share beside it."""
    mean = cs.measured.mean_ms
    gc_ms = cs.measured.gc_ms_per_step
    ax.barh(y, mean - gc_ms, 0.7, color=backend_color(cs.key[0]))
    ax.barh(y, gc_ms, 0.7, left=mean - gc_ms, color=GC_COLOR)
    ci = cs.measured.mean_ci_ms
    if ci is not None:  # the mean step's 95 % interval over the repeats, as a whisker
        ax.errorbar(mean, y, xerr=[[mean - ci[0]], [ci[1] - mean]], fmt="none", ecolor="#555555",
                    elinewidth=1.0, capsize=3)
    share = 100 * gc_ms / mean if mean > 0 else 0.0
    ax.annotate(f"GC {share:.0f} %" if share >= 0.5 else "GC < 1 %" if gc_ms > 0 else "no GC",
                (max(mean, ci[1]) if ci is not None else mean, y), xytext=(3, 0),
                textcoords="offset points", va="center", fontsize=TEXT_PT, color="#333333")


def gc_split_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path:
    """Per series and policy: the mean step split into GC pause (black) and the rest
    (backend colour), in ms on a linear axis starting at zero, each bar labelled with its
    GC share (a pause too short to see as a bar is still read as a number)."""
    ok = [cs for cs in cells if cs.ok]
    series = ordered_series(ok)
    policies = policies_of(ok)
    fig, axes = plt.subplots(1, len(policies), figsize=(WIDTH, _row_in(series) * len(series) + 1.6),
                             squeeze=False, sharey=True, sharex=True, layout="constrained")
    ys = {s: len(series) - 1 - i for i, s in enumerate(series)}
    longest = max(max(cs.measured.mean_ms, (cs.measured.mean_ci_ms or (0, 0))[1]) for cs in ok)
    for c, policy in enumerate(policies):
        ax = axes[0][c]
        for cs in ok:
            if cs.key[2] == policy:
                _split_bar(ax, cs, ys[series_of(cs)])
        ax.set_xlim(0, longest * 1.3)  # room for the labels
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(policy, loc="left")
        ax.set_xlabel("mean step, ms (whisker: 95 % interval)")
    axes[0][0].set_yticks(range(len(series)), [series_label(s, series) for s in reversed(series)])
    fig.suptitle(f"{workload}: where a step's time goes (mean step = the rest + GC pause)")
    _legend_outside(fig, [*_backend_handles(series), matplotlib.patches.Patch(color=GC_COLOR, label="GC pause")],
                    "the rest, by backend")
    return save(fig, path)


def cumulative_gc_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path | None:
    """Cumulative GC pause time over the steps of each cell's first used repeat, one panel
    per policy under which any collection ran (see `_line_panels` for environments). None
    when no cell of the workload collected."""
    ok = [cs for cs in cells if cs.ok and cs.measured.gc_ms_per_step > 0]
    if not ok:
        return None

    def draw(ax, cs, color):
        cum = np.cumsum(np.asarray(cs.used_docs[0].gc_ns)) / 1e6
        ax.plot(np.arange(len(cum)), cum, lw=1.3, color=color)
        # from 0, and high enough for every line drawn so far (a limit set once would cut off later ones)
        # (panels share their y axis: the highest line of any panel sets it)
        ax.set_ylim(0, max(ax.get_ylim()[1], float(cum.max()) * 1.05 if len(cum) else 0))

    return _line_panels(ok, 2.5, f"{workload}: cumulative GC time over the first used repeat of each cell", draw,
                        "timed step", "GC pause so far, ms", path)


def pauses(cs: summary.CellSummary) -> dict[int, np.ndarray]:
    """Pause lengths in ms by generation over the used repeats: from the collection log
    where there is one (Python), else from the steps with exactly one collection (Julia:
    incremental counts as generation 0, full as 2)."""
    out: dict[int, list] = {}
    for doc in cs.used_docs:
        for gen, ms in _logged_pauses(doc) if doc.gc_events else _single_collection_steps(doc):
            out.setdefault(gen, []).append(ms)
    return {g: np.asarray(v) for g, v in sorted(out.items())}


def _logged_pauses(doc) -> list[tuple[int, float]]:
    """Each logged collection's generation and pause in ms (those that took any time)."""
    events = doc.gc_events
    return [(int(gen), pause / 1e6) for gen, pause in zip(events["generation"], events["pause_ns"], strict=True)
            if pause > 0]


def _single_collection_steps(doc) -> list[tuple[int, float]]:
    """Without a log: the steps that held exactly one collection, its generation (Julia's
    full sweep as 2) and the step's pause in ms."""
    colls = summary.collections(doc)
    full_gen = 2 if colls.shape[1] == 2 else colls.shape[1] - 1
    out = []
    for row, ns in zip(colls, doc.gc_ns, strict=True):
        if row.sum() == 1 and ns > 0:
            gen = int(np.argmax(row))
            out.append((full_gen if gen == colls.shape[1] - 1 else gen, ns / 1e6))
    return out


def _pause_points(ax, by_generation: dict, y: float, color: str, rng: np.random.Generator) -> None:
    """One cell's pauses on its series' row: a sub-row and a shape per generation, jittered."""
    for gen, values in by_generation.items():
        marker, size, filled, _ = GEN_MARKERS.get(gen, ("D", 20, True, f"gen {gen}"))
        offset = {0: 0.27, 1: 0.0, 2: -0.27}.get(gen, 0)
        ys = y + offset + rng.uniform(-0.06, 0.06, len(values))
        ax.scatter(values, ys, s=size, marker=marker, facecolors=color if filled else "none",
                   edgecolors=color, linewidths=0.8, alpha=0.8)


def _series_axis(ax, series: list) -> None:
    """The series' names down the y axis, the first on top."""
    ax.set_yticks(range(len(series)), [series_label(s, series) for s in reversed(series)])
    ax.set_ylim(-0.6, len(series) - 0.4)


def pauses_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path) -> pathlib.Path | None:
    """Every collection's pause, by generation (its own sub-row and shape: hollow circle,
    hollow square, filled triangle) and series (row), on a log axis; one panel per policy.
    None when no pause was recorded."""
    ok = [cs for cs in cells if cs.ok]
    data = {cs.key: pauses(cs) for cs in ok}
    ok = [cs for cs in ok if data[cs.key]]
    if not ok:
        return None
    series = ordered_series(ok)
    policies = policies_of(ok)
    fig, axes = plt.subplots(1, len(policies), figsize=(WIDTH, max(ROW_IN * 1.6, _row_in(series)) * len(series) + 1.6),
                             squeeze=False, sharey=True, sharex=True, layout="constrained")
    ys = {s: len(series) - 1 - i for i, s in enumerate(series)}
    rng = np.random.default_rng(0)
    for c, policy in enumerate(policies):
        ax = axes[0][c]
        for cs in ok:
            if cs.key[2] == policy:
                _pause_points(ax, data[cs.key], ys[series_of(cs)], backend_color(cs.key[0]), rng)
        log_axis(ax, "x")
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(policy, loc="left")
        ax.set_xlabel("pause, ms")
    _series_axis(axes[0][0], series)
    handles = [plt.Line2D([], [], color="#555555", marker=m, markerfacecolor="#555555" if filled else "none",
                          lw=0, ms=7, label=label) for m, _, filled, label in GEN_MARKERS.values()]
    fig.suptitle(f"{workload}: length of every GC pause, by generation")
    _legend_outside(fig, handles + _backend_handles(series))
    return save(fig, path)


# -- bisect -------------------------------------------------------------------------------------

LIKE_GOOD, LIKE_BAD, UNTESTED = "#0072B2", "#D55E00", "#777777"


def _first_change_line(ax, i: int, factor: float) -> None:
    """A dashed line before the first version with a tested change, named."""
    ax.axvline(i - 0.5, color=LIKE_BAD, ls="--", lw=1)
    ax.annotate(f"first change > {factor:g} x", (i - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(4, -4),
                textcoords="offset points", ha="left", va="top", color=LIKE_BAD)


def bisect_figure(tab: VersionTable, path: pathlib.Path) -> pathlib.Path:
    """The bisected metric per version (every repeat a dot, the median a line) above the
    median step; the first version with a tested change is marked."""
    rows = [r for r in tab.rows if r.status == "ok"]
    versions = [r.version for r in tab.rows]
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 5.6), sharex=True, height_ratios=[3, 2], layout="constrained")
    unit = "" if tab.unit in ("x", "/1000") else f", {tab.unit}"  # x and /1000 are in the title
    x = {v: i for i, v in enumerate(versions)}
    for r in rows:
        i = x[r.version]
        color = LIKE_BAD if r.first_change else LIKE_GOOD
        axes[0].hlines(r.value, i - 0.3, i + 0.3, color=color, lw=2.5)
        axes[0].scatter([i] * len(r.values), r.values, color=color, s=18, zorder=3)
        axes[1].hlines(r.median_ms, i - 0.3, i + 0.3, color="#555555", lw=2.5)
    for r in tab.rows:
        if r.status != "ok":
            axes[0].annotate(r.status, (x[r.version], 0), xytext=(0, 4), textcoords="offset points",
                             ha="center", color=UNTESTED)
    if tab.first_change is not None:
        _first_change_line(axes[0], x[tab.first_change], tab.factor)
    axes[0].set_ylabel(f"{tab.metric_title}{unit}")
    axes[0].set_ylim(bottom=0)
    axes[0].grid(axis="y", alpha=0.3)
    axes[1].set_ylabel("median step, ms")
    axes[1].set_ylim(bottom=0)
    axes[1].grid(axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(versions)), versions)
    axes[1].set_xlim(-0.5, len(versions) - 0.5)
    axes[1].set_xlabel(f"{tab.package} version")
    fig.suptitle(f"{tab.cell}: {tab.metric_title} per {tab.package} version\n"
                 "(dots: repeats; line: their median)")
    return save(fig, path)


def _commit_mark(ax, i: int, r) -> None:
    """A tested commit: its repeats as dots and its value as a line, coloured by what it
    behaves like; a commit skipped says so."""
    color = LIKE_BAD if r.decision.startswith("bad") else LIKE_GOOD if r.decision.startswith("good") else UNTESTED
    if r.value is None:
        ax.annotate("skip", (i, 0), xytext=(0, 4), textcoords="offset points", ha="center", color=color)
        return
    ax.hlines(r.value, i - 0.35, i + 0.35, color=color, lw=2.5)
    ax.scatter([i] * len(r.per_repeat), r.per_repeat, color=color, s=18, zorder=3)


def _first_bad_line(ax, tab: CommitTable, first_bad: str) -> None:
    """A dashed line before the first bad commit (an improvement's first commit), named."""
    i = next(r.index for r in tab.rows if r.sha == first_bad)
    ax.axvline(i - 0.5, color=LIKE_BAD, ls="--", lw=1)
    ax.annotate(f"{bisect_text.marker(tab)} from {first_bad[:9]}" if tab.better else f"first bad: {first_bad[:9]}",
                (i - 0.5, 1.0), xycoords=("data", "axes fraction"),
                xytext=(4, -4), textcoords="offset points", ha="left", va="top", color=LIKE_BAD)


def gitbisect_figure(tab: CommitTable, path: pathlib.Path) -> pathlib.Path:
    """The bisected metric of every tested commit, in history order (every repeat a dot, the
    cell's value a line); untested commits are ticks without a value, the first bad one is marked."""
    rows = {r.index: r for r in tab.rows}
    n = tab.commits_between + 1
    fig, ax = plt.subplots(figsize=(WIDTH, 4.4), layout="constrained")
    for i, r in rows.items():
        _commit_mark(ax, i, r)
    if tab.first_bad:
        _first_bad_line(ax, tab, tab.first_bad)
    labels = [""] * n
    for i, r in rows.items():
        labels[i] = r.sha[:7]
    ax.set_xticks(range(n), labels, rotation=90)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    unit = f", {tab.unit}" if tab.unit else ""
    ax.set_ylabel(f"{tab.metric_title}{unit}")
    old, new = ("older", "newer") if tab.better else ("good", "bad")  # an improvement's endpoints are not "bad"
    ax.set_xlabel(f"{tab.package} first-parent commits, oldest (the {old} endpoint) to newest; labelled where tested")
    _legend_outside(fig, [plt.Line2D([], [], color=c, marker="o", lw=2, label=t) for c, t in
                          ((LIKE_GOOD, f"like the {old}\nendpoint"), (LIKE_BAD, f"like the {new}\nendpoint"))])
    ax.set_title(f"{tab.cell}: {tab.metric_title} per tested commit\n(dots: repeats; line: the cell's value)")
    return save(fig, path)


# -- why: what the collector had to do ---------------------------------------------------------------

def why_figure(explanations: list[Explanation], path: pathlib.Path) -> pathlib.Path | None:
    """Per explained cell, a row of its own under the cell's name: objects promoted to the
    oldest generation per step (left) and the size of the oldest generation over the
    diagnostic run (right), full collections marked."""
    rows = [(e, e.python, e.full_interval) for e in explanations
            if e.python is not None and e.full_interval is not None]
    if not rows:
        return None
    top = max(max(py.promoted_per_step or [0]) for _, py, _ in rows) * 1.05 or 1.0  # one scale: rows compare
    fig = plt.figure(figsize=(WIDTH, 2.5 * len(rows) + 0.8), layout="constrained")
    subfigures: Any = fig.subfigures(len(rows), 1)  # one row: a SubFigure, not an array of them
    for sub, (e, py, fi) in zip(np.atleast_1d(subfigures), rows, strict=True):
        sub.suptitle(e.label + explain_qualifiers(e), x=0.01, ha="left", fontsize=12, fontweight="bold")
        _why_row(sub, backend_color(e.backend), py, fi, top)
    fig.suptitle("why: what the collector had to do (diagnostic runs: their timings are disturbed)")
    return save(fig, path)


def _why_row(sub, color: str, py, fi, top: float) -> None:
    """One explanation: what each step promoted, with the mean the table gives, beside the
    oldest generation's size over the run, its full collections marked."""
    left, right = sub.subplots(1, 2)
    promoted = np.asarray(py.promoted_per_step)
    left.bar(np.arange(len(promoted)), promoted, width=1.0, color=color, alpha=0.55, lw=0)
    # the table's figure is the mean over the steps: promotions come in bursts (at the
    # collections of generation 1), so most bars stand above it and others are zero
    mean = fi.promoted_per_step
    left.axhline(mean, color="#111111", lw=1.6)
    left.annotate(f"mean {wording.fmt(mean)} a step (the table's figure)", (0.01, mean),
                  xycoords=("axes fraction", "data"), xytext=(2, 3), textcoords="offset points", ha="left",
                  va="bottom", fontsize=TEXT_PT,
                  color="#111111", bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
    left.set_ylim(0, top)
    left.set_ylabel("objects promoted\nper step")
    oldest = np.asarray(py.oldest, dtype=float).reshape(-1, 2)
    right.step(oldest[:, 0], oldest[:, 1], where="post", color=color, lw=1.3)
    for s in py.full_steps:
        right.axvline(s, color=FULL_COLOR, ls=":", lw=0.9)
    right.set_ylabel("oldest generation,\nobjects (not from 0)")  # its growth is the point
    for ax in (left, right):
        ax.yaxis.set_major_formatter(mticker.StrMethodFormatter("{x:,.0f}"))
        ax.grid(axis="y", alpha=0.3)
        ax.set_xlabel("diagnostic step")


# -- many environments: a Python x package-versions grid ------------------------------------------

def without_paired_jaxlib(packages: list[str], versions: list[dict]) -> list[str]:
    """`packages` less jaxlib where it goes with jax: the same version in every environment
    (`versions`: each environment's package versions), so it would only repeat jax."""
    paired = "jax" in packages and all(v.get("jax") == v.get("jaxlib") for v in versions)
    return [p for p in packages if not (p == "jaxlib" and paired)]


def _env_rows(ok: list[summary.CellSummary], packages: list[str]) -> tuple[dict, list[tuple], list[str]]:
    """The environments' rows: each cell's row (its Python and the versions of `packages`
    that are shown), the rows in natural order, and their labels."""
    ok_envs = [results.part(results.ok(cs.docs)[0], "environment") for cs in ok]
    shown = without_paired_jaxlib(packages, [e.get("packages") or {} for e in ok_envs])

    def row_of(env: Mapping[str, Any]) -> tuple:
        py = ".".join(str(env["python"]).split(".")[:2])
        versions = tuple(str((env.get("packages") or {}).get(p, "-")) for p in shown)
        return (py, *versions)

    where = {cs.key: row_of(env) for cs, env in zip(ok, ok_envs, strict=True)}
    rows = sorted(set(where.values()), key=lambda r: tuple(natural_key(x) for x in r))
    labels = ["  ".join([f"Python {r[0]}", *(f"{p} {v}" for p, v in zip(shown, r[1:], strict=True))]) for r in rows]
    return where, rows, labels


def _env_share(ax, cs: summary.CellSummary, y: float, color: str, cpu: bool) -> None:
    """A cell's GC share in one environment: its interval a bar, its value a dot, its full
    collections per repeat at the right."""
    value, lo, hi = _share(cs.measured, cpu)
    ax.plot([lo, hi], [y, y], color=color, lw=2.2, solid_capstyle="butt")
    ax.plot(value, y, "o", color=color, ms=6, mec="white", mew=0.6)
    ax.annotate(f"{summary.full_per_repeat(cs)} full", (1.0, y), xycoords=("axes fraction", "data"),
                xytext=(6, 0), textcoords="offset points", va="center", ha="left", fontsize=TEXT_PT)


def env_matrix_figure(cells: list[summary.CellSummary], workload: str, path: pathlib.Path,
                      packages: list[str]) -> pathlib.Path | None:
    """The GC share of each cell that ran in an environment, one row per environment that was
    measured (named by its Python and the versions of `packages`, Python then versions
    ascending in natural order), one panel per backend and policy on one axis: the estimate as
    a dot, its 95 % interval over the repeats as a bar, and the full collections per repeat
    written at the right of the row. None unless the cells ran in at least two environments."""
    ok = [cs for cs in cells if cs.ok and results.part(cs.docs[0], "environment").get("python")]
    if len({cs.key[3] for cs in ok}) < 2:
        return None
    where, rows, labels = _env_rows(ok, packages)
    panels = list(dict.fromkeys((cs.key[0], cs.key[2]) for cs in ok))
    cpu = verdict.in_cpu_time([cs.measured for cs in ok])
    fig, axes = plt.subplots(len(panels), 1, figsize=(WIDTH, (ROW_IN + 0.04) * len(rows) * len(panels)
                                                     + 0.9 * len(panels) + 0.7),
                             squeeze=False, sharex=True, layout="constrained")
    ys = {r: len(rows) - 1 - i for i, r in enumerate(rows)}
    for ax, (backend, policy) in zip(axes[:, 0], panels, strict=True):
        for cs in ok:
            if (cs.key[0], cs.key[2]) == (backend, policy):
                _env_share(ax, cs, ys[where[cs.key]], backend_color(backend), cpu)
        ax.set_yticks(range(len(rows)), list(reversed(labels)))
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(f"{backend} / {policy}", loc="left")
        ax.xaxis.set_tick_params(labelbottom=True)
    axes[0][0].set_xlim(left=0)
    axes[-1][0].set_xlabel(f"GC share, % of {'CPU' if cpu else 'wall'} time")
    fig.suptitle(f"{workload}: GC share by interpreter and package versions ({_bars(ok)}; right: full "
                 "collections per repeat; environments not measured are left out)")
    return save(fig, path)
