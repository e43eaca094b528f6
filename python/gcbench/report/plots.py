"""The report's figures (matplotlib, Agg). Every function takes result documents with
their statistics and writes one PNG; every axis says what it shows and in which unit."""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402

from .. import stats  # noqa: E402

DPI = 110
BACKEND_COLORS = {
    "jax": "#1f77b4", "jax-vmap": "#7f7f7f", "equinox-filter": "#d62728", "equinox-partition": "#ff7f0e",
    "nnx": "#2ca02c", "nnx-split": "#17becf", "flux": "#9467bd", "lux": "#8c564b", "simplechains": "#e377c2",
}
POLICY_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
MARKERS = "osD^vP*X"


def backend_color(name: str, i: int = 0) -> str:
    return BACKEND_COLORS.get(name, f"C{i % 10}")


def _plain_log(ax, axis: str = "y") -> None:
    """Log scale with tick labels as plain numbers (30, 40, 60), not 4x10^1."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    def minor(v, _):
        lo, hi = sorted(target.get_view_interval())
        narrow = lo > 0 and hi / lo < 12  # less than a decade shown: label every minor tick
        return f"{v:g}" if narrow or f"{v:g}"[0] in "235" else ""

    target.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(mticker.FuncFormatter(minor))


def _save(fig, path: pathlib.Path) -> pathlib.Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def traces(docs: list[dict], workload: str, path: pathlib.Path) -> pathlib.Path:
    """Step time per step (log scale) with GC pauses overlaid and full collections marked."""
    backends = list(dict.fromkeys(d["backend"] for d in docs))
    policies = list(dict.fromkeys(d["gc_policy"] for d in docs))
    width = min(4.2, 13.0 / len(policies))
    fig, axes = plt.subplots(len(backends), len(policies), figsize=(width * len(policies), 1.9 * len(backends) + 1.0),
                             squeeze=False, sharex=True)
    for r, backend in enumerate(backends):
        for c, policy in enumerate(policies):
            ax = axes[r][c]
            doc = next((d for d in docs if d["backend"] == backend and d["gc_policy"] == policy), None)
            if doc is None:
                ax.set_axis_off()
                continue
            wall = np.asarray(doc["wall_ns"]) / 1e6
            gc_ms = np.asarray(doc["gc_ns"]) / 1e6
            steps = np.arange(len(wall))
            ax.plot(steps, wall, lw=0.7, color=backend_color(backend), label="step")
            has_gc = gc_ms > 0
            if has_gc.any():
                ax.scatter(steps[has_gc], gc_ms[has_gc], s=8, color="#c00000", zorder=3, label="GC pause")
            full = stats.full_collections(doc) > 0
            for s in steps[full]:
                ax.axvline(s, color="#c00000", lw=0.6, ls=":", alpha=0.8)
            _plain_log(ax)
            ax.set_title(f"{backend} / {policy}", fontsize=9)
            ax.tick_params(labelsize=8)
            if c == 0:
                ax.set_ylabel("ms (log)", fontsize=8)
            if r == len(backends) - 1:
                ax.set_xlabel("timed step", fontsize=8)
    handles = [plt.Line2D([], [], color="#444", lw=1, label="step wall time"),
               plt.Line2D([], [], color="#c00000", marker="o", lw=0, ms=4, label="GC pause in step"),
               plt.Line2D([], [], color="#c00000", ls=":", label="full collection")]
    fig.suptitle(f"{workload}: time of every timed step", fontsize=11)
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8, frameon=False)
    return _save(fig, path)


def distributions(docs: list[dict], workload: str, path: pathlib.Path) -> pathlib.Path:
    """ECDF of step times per backend, one panel per GC policy."""
    policies = list(dict.fromkeys(d["gc_policy"] for d in docs))
    fig, axes = plt.subplots(1, len(policies), figsize=(4.6 * len(policies), 3.4), squeeze=False, sharey=True)
    for c, policy in enumerate(policies):
        ax = axes[0][c]
        for i, doc in enumerate(d for d in docs if d["gc_policy"] == policy):
            wall = np.sort(np.asarray(doc["wall_ns"]) / 1e6)
            ax.step(wall, np.arange(1, len(wall) + 1) / len(wall), where="post", lw=1.2,
                    color=backend_color(doc["backend"], i), label=doc["backend"])
        _plain_log(ax, "x")
        ax.set_xlabel("step time, ms (log)")
        ax.set_title(f"{workload} / {policy}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("fraction of steps at most this fast")
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _save(fig, path)


def _grouped_bars(ax, backends, policies, value, ylabel, log=False):
    width = 0.8 / max(len(policies), 1)
    for j, policy in enumerate(policies):
        xs, ys = [], []
        for i, b in enumerate(backends):
            v = value(b, policy)
            if v is not None:
                xs.append(i + (j - (len(policies) - 1) / 2) * width)
                ys.append(v)
        ax.bar(xs, ys, width, color=POLICY_COLORS[j % len(POLICY_COLORS)], label=policy,
               hatch=["", "//", "..", "xx", "\\\\", "++"][j % 6], edgecolor="white")
    ax.set_xticks(range(len(backends)), backends, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=9)
    if log:
        _plain_log(ax)
    else:
        ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)


def gc_share_and_spikiness(docs: list[dict], summaries: dict, path: pathlib.Path) -> pathlib.Path:
    """GC share and max/median per backend, grouped by workload, policy as colour."""
    workloads = list(dict.fromkeys(d["workload"] for d in docs))
    fig, axes = plt.subplots(2, len(workloads), figsize=(4.8 * len(workloads), 6.4), squeeze=False)
    for c, w in enumerate(workloads):
        sub = [d for d in docs if d["workload"] == w]
        backends = list(dict.fromkeys(d["backend"] for d in sub))
        policies = list(dict.fromkeys(d["gc_policy"] for d in sub))
        get = lambda b, p, key: next((summaries[d["cell"]][key] for d in sub
                                      if d["backend"] == b and d["gc_policy"] == p), None)
        _grouped_bars(axes[0][c], backends, policies, lambda b, p: 100 * get(b, p, "gc_share")
                      if get(b, p, "gc_share") is not None else None, "GC share of step time, %")
        axes[0][c].set_title(w, fontsize=10)
        if all(not get(b, p, "gc_share") for b in backends for p in policies):
            axes[0][c].set_ylim(0, 1)
            axes[0][c].text(0.5, 0.5, "no GC time in any cell", transform=axes[0][c].transAxes,
                            ha="center", va="center", fontsize=9, color="#555")
        _grouped_bars(axes[1][c], backends, policies, lambda b, p: get(b, p, "max_over_median"),
                      "slowest step / median step (log)", log=True)
    axes[0][-1].legend(title="GC policy", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def policy_effect(docs: list[dict], summaries: dict, path: pathlib.Path) -> pathlib.Path:
    """Per backend: median (marker) and p99 (end of the line) under each GC policy."""
    workloads = list(dict.fromkeys(d["workload"] for d in docs))
    fig, axes = plt.subplots(1, len(workloads), figsize=(4.8 * len(workloads), 3.8), squeeze=False)
    for c, w in enumerate(workloads):
        ax = axes[0][c]
        sub = [d for d in docs if d["workload"] == w]
        backends = list(dict.fromkeys(d["backend"] for d in sub))
        policies = list(dict.fromkeys(d["gc_policy"] for d in sub))
        width = 0.8 / max(len(policies), 1)
        for j, policy in enumerate(policies):
            for i, b in enumerate(backends):
                doc = next((d for d in sub if d["backend"] == b and d["gc_policy"] == policy), None)
                if doc is None:
                    continue
                s = summaries[doc["cell"]]
                x = i + (j - (len(policies) - 1) / 2) * width
                color = POLICY_COLORS[j % len(POLICY_COLORS)]
                ax.plot([x, x], [s["median_ms"], s["p99_ms"]], color=color, lw=2)
                ax.plot(x, s["median_ms"], MARKERS[j % len(MARKERS)], color=color, ms=6,
                        label=policy if i == 0 else None)
                ax.plot(x, s["p99_ms"], "_", color=color, ms=10, mew=2)
        ax.set_xticks(range(len(backends)), backends, rotation=30, ha="right", fontsize=8)
        _plain_log(ax)
        ax.set_ylabel("step time, ms (log): marker median, bar end p99", fontsize=8)
        ax.set_title(w, fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    axes[0][-1].legend(title="GC policy", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    return _save(fig, path)
