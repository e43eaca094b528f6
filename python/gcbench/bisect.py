"""`gcbench bisect`: one cell across releases of one package, and where its metric changed.

Each version gets its own environment (the base environment's interpreter and pins, plus
`package==version`); the cell runs in each, and the table gives the metric per version
and marks the first version whose value differs from the previous version's by more
than a factor. Values below a metric's floor count as the floor, so that 0.00 % against
0.01 % of GC time is not called a change.
"""

from __future__ import annotations

import dataclasses
import statistics

from . import envs, stats
from .backends import get_backend
from .errors import UsageError
from .workloads import get_workload


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    title: str
    unit: str
    floor: float  # values below count as this when comparing
    value: object  # summary -> float

    def of(self, summary: dict) -> float:
        return float(self.value(summary))


# The table always shows the median step, the GC share and full collections; other metrics get a column.
SHOWN_ANYWAY = ("median", "gc_share", "full_gc")

METRICS = {m.name: m for m in [
    Metric("gc_share", "GC share of step time", "%", 0.1, lambda s: 100 * s["gc_share"]),
    Metric("p99", "p99 step time", "ms", 0.0, lambda s: s["p99_ms"]),
    Metric("max/median", "slowest step / median step", "x", 1.0, lambda s: s["max_over_median"]),
    Metric("median", "median step time", "ms", 0.0, lambda s: s["median_ms"]),
    Metric("full_gc", "full collections per 1,000 steps", "/1000", 1.0, lambda s: s["full_per_1000"]),
]}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; valid metrics: {', '.join(METRICS)}") from None


def check_factor(factor: float) -> None:
    if not factor > 1:
        raise UsageError(f"--factor must be greater than 1, got {factor:g}")


def parse_cell(text: str) -> tuple[str, str, str]:
    """`equinox-filter/vit/default` -> (backend, workload, policy), each checked."""
    from . import gcpolicy

    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise UsageError(f"--cell {text!r}: expected BACKEND/WORKLOAD/POLICY, e.g. equinox-filter/vit/default")
    backend, workload, policy = parts
    info = get_backend(backend)
    get_workload(workload)
    policy = gcpolicy.parse(policy).name
    if not info.supports(workload):
        raise UsageError(f"--cell {text!r}: {backend} does not implement workload {workload}")
    return backend, workload, policy


def plan_envs(package: str, versions: list[str], base: envs.EnvSpec) -> list[envs.EnvSpec]:
    """One environment per version: the base's interpreter and pins, and `package==version`."""
    name = envs.normalize(package)
    if not versions:
        raise UsageError("--versions names no version")
    if len(set(versions)) != len(versions):
        raise UsageError(f"--versions lists a version twice: {', '.join(versions)}")
    others = [p for p in base.pins if envs.requirement_name(p) != name]
    text = " ".join(([f"python={base.python}"] if base.python else []) + others)
    return [envs.parse(f"{text} {name}=={v}".strip()) for v in versions]


def _version_of(doc: dict, package: str) -> str | None:
    """The version of `package` a result ran with: as installed, else as pinned."""
    env = doc.get("environment") or {}
    installed = (env.get("packages") or {}).get(package) or ((doc.get("metadata") or {}).get("packages") or {}).get(package)
    if installed or not env.get("spec"):
        return installed or None
    return envs.exact_pin(envs.parse(env["spec"]), package)


def table(docs: list[dict], package: str, cell: tuple[str, str, str], metric: Metric, factor: float,
          versions: list[str] | None = None) -> dict:
    """The bisect table of `docs` (results of `cell` in environments that differ in `package`)."""
    check_factor(factor)
    package = envs.normalize(package)
    mine = [d for d in docs if (d["backend"], d["workload"], d["gc_policy"]) == cell]
    by_version: dict[str, list[dict]] = {}
    for doc in mine:
        version = _version_of(doc, package)
        if version is not None:
            by_version.setdefault(version, []).append(doc)
    order = [v for v in versions or [] if v in by_version]
    order += sorted((v for v in by_version if v not in order), key=envs.version_key)
    rows, previous, marked = [], None, None
    for version in order:
        group = by_version[version]
        ok = [d for d in group if d["status"] == "ok"]
        row = {"version": version, "runs": len(group), "ok": len(ok)}
        sample = (ok or group)[0]
        meta = sample.get("metadata") or {}
        env = sample.get("environment") or {}
        row["environment"] = env.get("name")
        row["python"] = meta.get("python") or env.get("python")
        row["packages"] = {k: v for k, v in (meta.get("packages") or {}).items() if v}
        if not ok:
            row["status"] = sample["status"]
            row["reason"] = (sample["reason"] or "").strip().splitlines()[0] if sample["reason"] else ""
            rows.append(row)
            continue
        summaries = [stats.summary(d) for d in ok]
        row["status"] = "ok"
        row["values"] = [metric.of(s) for s in summaries]
        row["value"] = statistics.median(row["values"])
        row["median_ms"] = statistics.median(s["median_ms"] for s in summaries)
        row["gc_share_pct"] = statistics.median(100 * s["gc_share"] for s in summaries)
        row["full_per_1000"] = statistics.median(s["full_per_1000"] for s in summaries)
        if previous is not None:
            a, b = max(previous["value"], metric.floor), max(row["value"], metric.floor)
            row["change"] = (b / a) if a > 0 and b > 0 else (1.0 if a == b else float("inf"))
            if marked is None and max(row["change"], 1 / row["change"] if row["change"] else float("inf")) > factor:
                marked = version
                row["first_change"] = True
        rows.append(row)
        previous = row
    missing = [v for v in versions or [] if v not in by_version]
    return {"package": package, "cell": "/".join(cell), "metric": metric.name, "metric_title": metric.title,
            "unit": metric.unit, "floor": metric.floor, "factor": factor, "rows": rows, "first_change": marked,
            "missing": missing}


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def table_rows(tab: dict, mark: str) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows as strings, for the terminal and the report alike. The
    first change has `mark` after its change; a version that did not run has "-" for its
    numbers and its status and reason in the last column."""
    unit = "" if tab["unit"] == "x" else f" {tab['unit']}"
    own = tab["metric"] not in SHOWN_ANYWAY  # p99 and max/median get a column of their own
    header = ["version", "python", "jax", "runs", "median ms", "GC %", "full/1000"] + \
        ([f"{tab['metric']}{unit}"] if own else []) + ["change"]
    rows = []
    for r in tab["rows"]:
        first = [r["version"], r.get("python") or "-", r.get("packages", {}).get("jax", "-"), f"{r['ok']}/{r['runs']}"]
        if r["status"] != "ok":
            rows.append(first + ["-"] * (len(header) - 5) + [f"{r['status']}: {r.get('reason', '')}"])
            continue
        change = "" if "change" not in r else ("inf" if r["change"] == float("inf") else f"x{r['change']:.2f}")
        rows.append(first + [_fmt(r["median_ms"]), f"{r['gc_share_pct']:.2f}", f"{r['full_per_1000']:.1f}"] +
                    ([_fmt(r["value"])] if own else []) + [change + (mark if r.get("first_change") else "")])
    return header, rows


def format_table(tab: dict) -> str:
    """The table as text, with the first change marked."""
    header, rows = table_rows(tab, f"  <- first change > {tab['factor']:g}x")
    ran = [row for row in rows if row[4] != "-"]
    widths = [max([len(h)] + [len(row[i]) for row in ran] + [len(row[i]) for row in rows if i < 4])
              for i, h in enumerate(header)]

    def fmt(cells):
        return "  ".join(c.ljust(w) if i < 4 or i == len(header) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [f"{tab['package']} bisect of {tab['cell']}: {tab['metric_title']}", fmt(header)]
    out += [fmt(row) if row[4] != "-" else fmt(row[:4]) + "  " + row[-1] for row in rows]  # a reason takes the rest
    if tab["first_change"] is None:
        out.append(f"no version changes {tab['metric']} by more than {tab['factor']:g}x over the one before")
    if tab["missing"]:
        out.append(f"no results for {', '.join(tab['missing'])}")
    return "\n".join(out)
