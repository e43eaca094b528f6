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
    """A backend's own colour; other series (a backend in an environment) get one by position."""
    if name in BACKEND_COLORS:
        return BACKEND_COLORS[name]
    return f"C{i}" if i < 10 else matplotlib.colors.to_hex(matplotlib.colormaps["tab20"](i % 20))


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
            ax.plot(steps, wall, lw=0.7, color=backend_color(backend, r), label="step")
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


def by_environment(docs: list[dict], summaries: dict, env_names: list[str], path: pathlib.Path) -> pathlib.Path:
    """Median step, GC share and full collections per 1,000 steps, environment on the x axis,
    one bar per (backend, workload, policy); first repeat of each."""
    from .. import results

    series = list(dict.fromkeys((d["backend"], d["workload"], d["gc_policy"]) for d in docs))
    panels = [("median step, ms", lambda s: s["median_ms"]), ("GC share of step time, %", lambda s: 100 * s["gc_share"]),
              ("full collections per 1,000 steps", lambda s: s["full_per_1000"])]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(6.0, 1.1 * len(env_names) * max(1, len(series)) ** 0.5 + 2),
                                                      2.6 * len(panels) + 1.2), squeeze=False, sharex=True)
    width = 0.8 / max(len(series), 1)
    backends = list(dict.fromkeys(key[0] for key in series))
    policies = list(dict.fromkeys(key[2] for key in series))
    for r, (ylabel, value) in enumerate(panels):
        ax = axes[r][0]
        for j, key in enumerate(series):
            xs, ys = [], []
            for i, env in enumerate(env_names):
                doc = next((d for d in docs if (d["backend"], d["workload"], d["gc_policy"]) == key
                            and results.env_name(d) == env and d["repeat"] == 0), None)
                if doc is not None:
                    xs.append(i + (j - (len(series) - 1) / 2) * width)
                    ys.append(value(summaries[doc["cell"]]))
            ax.bar(xs, ys, width, color=backend_color(key[0], backends.index(key[0])),
                   label="/".join(key) if r == 0 else None,
                   hatch=["", "//", "..", "xx", "\\\\", "++"][policies.index(key[2]) % 6], edgecolor="white")
        if not any(value(summaries[d["cell"]]) for d in docs):
            ax.set_ylim(0, 1)
            ax.text(0.5, 0.5, "zero in every cell", transform=ax.transAxes, ha="center", va="center", fontsize=9,
                    color="#555")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", alpha=0.3)
    axes[-1][0].set_xticks(range(len(env_names)), env_names, rotation=30, ha="right", fontsize=8)
    axes[0][0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.suptitle("the same cells in each environment", fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


def bisect(tab: dict, path: pathlib.Path) -> pathlib.Path:
    """The bisected metric per version (every repeat a dot, the median a bar) and the median
    step below it; the first version that changed by more than the factor is marked."""
    rows = [r for r in tab["rows"] if r["status"] == "ok"]
    versions = [r["version"] for r in tab["rows"]]
    fig, axes = plt.subplots(2, 1, figsize=(max(5.5, 0.9 * len(versions) + 2.5), 5.6), sharex=True,
                             gridspec_kw={"height_ratios": [3, 2]})
    unit = "" if tab["unit"] == "x" else f", {tab['unit']}"
    x = {v: i for i, v in enumerate(versions)}
    for r in rows:
        i = x[r["version"]]
        color = "#c00000" if r.get("first_change") else "#4c72b0"
        axes[0].bar(i, r["value"], 0.6, color=color, alpha=0.35)
        axes[0].scatter([i] * len(r["values"]), r["values"], color=color, s=18, zorder=3)
        axes[1].bar(i, r["median_ms"], 0.6, color="#7f7f7f")
    for r in tab["rows"]:
        if r["status"] != "ok":
            axes[0].text(x[r["version"]], 0, r["status"], rotation=90, ha="center", va="bottom", fontsize=8,
                         color="#555")
    if tab["first_change"] is not None:
        i = x[tab["first_change"]]
        axes[0].axvline(i - 0.5, color="#c00000", ls="--", lw=1)
        axes[0].annotate(f"first change > {tab['factor']:g} x", (i - 0.5, axes[0].get_ylim()[1]), fontsize=8,
                         color="#c00000", ha="right", va="top", rotation=90)
    axes[0].set_ylabel(f"{tab['metric_title']}{unit}", fontsize=8)
    axes[0].set_ylim(bottom=0)
    axes[0].grid(axis="y", alpha=0.3)
    axes[1].set_ylabel("median step, ms", fontsize=8)
    axes[1].grid(axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(versions)), versions, fontsize=8)
    axes[1].set_xlim(-0.5, len(versions) - 0.5)
    axes[1].set_xlabel(f"{tab['package']} version", fontsize=9)
    fig.suptitle(f"{tab['cell']}: {tab['metric_title']} per {tab['package']} version", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
