"""`gcbench bisect`: one cell across releases of one package, and where its metric changed.

Each version gets its own environment (the base environment's interpreter and pins, plus
`package==version`); the cell runs in each, and the table gives the metric per version
and marks the first version whose value differs from the previous version's by more
than a factor, where a test of the repeats backs the difference. Values below a
metric's floor count as the floor, so that 0.00 % against 0.01 % of GC time is not
called a change.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable

import numpy as np

from ..core.errors import UsageError, did_you_mean
from ..measuring import envspec, results
from ..measuring.backends import get_backend
from ..measuring.results import ResultDoc
from ..measuring.workloads import get_workload
from ..running import venvs
from . import comparison, summary

_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!_-]*$")


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    title: str
    unit: str
    floor: float  # values below count as this when comparing
    value: Callable[[ResultDoc], float]  # one repeat's document -> float
    test: str  # how two versions are told apart: "log" (t test on logs), "linear" (t test), "schedule" (compare's rule)

    def of(self, doc: ResultDoc) -> float:
        return float(self.value(doc))


def _wall(doc):
    return np.asarray(doc.wall_ns, np.float64)


# The table always shows the median step, the GC share and full collections; other metrics get a column.
SHOWN_ANYWAY = ("median", "gc_share", "full_gc")

def _gc_share_pct(doc: ResultDoc) -> float:
    """The collector's share in %: of the thread's CPU time where the result recorded it (what a
    loaded machine does not stretch: a version measured beside other work is compared on it),
    else of wall time (results written before CPU times were recorded)."""
    cpu = summary.cpu_gc_share(doc)
    return 100 * cpu if cpu is not None else 100 * results.step_total(doc, "gc_ns") / float(_wall(doc).sum())


METRICS = {m.name: m for m in [
    Metric("gc_share", "GC share of CPU time (of wall time where a result did not record CPU time)", "%", 0.1,
           _gc_share_pct, "linear"),
    Metric("p99", "p99 step time", "ms", 0.0, lambda d: np.percentile(_wall(d), 99) / 1e6, "log"),
    Metric("max/median", "slowest step / median step", "x", 1.0, lambda d: _wall(d).max() / np.median(_wall(d)), "log"),
    Metric("median", "median step time", "ms", 0.0, lambda d: np.median(_wall(d)) / 1e6, "log"),
    # the time a run takes: what full collections cost, which the median hardly sees
    Metric("mean", "mean step time (the time a run takes)", "ms", 0.0, lambda d: np.mean(_wall(d)) / 1e6, "log"),
    Metric("full_gc", "full collections per 1,000 steps", "/1000", 1.0,
           lambda d: 1000 * int(summary.full_collections(d).sum()) / results.step_count(d), "schedule"),
]}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}{did_you_mean(name, METRICS)}; valid metrics: "
                         f"{', '.join(METRICS)}") from None


def check_factor(factor: float) -> None:
    if not (factor > 1 and math.isfinite(factor)):
        raise UsageError(f"--factor must be a finite number greater than 1, got {factor:g}")


def parse_cell(text: str) -> tuple[str, str, str]:
    """`equinox-filter/vit/default` -> (backend, workload, policy), each checked."""
    from ..measuring import gcpolicy

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


def _check_versions(versions: list[str]) -> None:
    """--versions: at least one, none twice, each a version."""
    if not versions:
        raise UsageError("--versions names no version")
    if len(set(versions)) != len(versions):
        raise UsageError(f"--versions lists a version twice: {', '.join(versions)}")
    bad = [v for v in versions if not _VERSION.match(v)]
    if bad:
        raise UsageError(f"--versions {bad[0]!r} is not a version (like 0.13.2); pins of other packages "
                         "go into --env")


def plan_envs(package: str, versions: list[str], base: envspec.EnvSpec) -> list[envspec.EnvSpec]:
    """One environment per version: the base's interpreter and pins, and `package==version`."""
    name = envspec.normalize(package)
    _check_versions(versions)
    others = [p for p in base.pins if envspec.requirement_name(p) != name]
    text = " ".join(([f"python={base.python}"] if base.python else []) + others)
    return [envspec.parse(f"{text} {name}=={v}".strip()) for v in versions]


def _version_of(doc: ResultDoc, package: str) -> str | None:
    """The version of `package` a result ran with: as installed, else as pinned."""
    env = results.part(doc, "environment")
    installed = (env.get("packages") or {}).get(package) or (results.part(doc, "metadata").get("packages") or {}).get(
        package
    )
    if installed or not env.get("spec"):
        return installed or None
    return venvs.exact_pin(envspec.parse(env["spec"]), package)


def _with_medians(v: comparison.RepeatValues, values: list[float]) -> comparison.RepeatValues:
    """`v` with the metric's values as its medians (none 0: a log scale's)."""
    return dataclasses.replace(v, medians=[x or 1e-12 for x in values])


def _test(metric: Metric, prev: list[ResultDoc], cur: list[ResultDoc]) -> comparison.Test | None:
    """The test of `cur` against `prev` (two versions' used repeats), by compare's rules
    (full collections: exact when both schedules are fixed); None when it needs more
    repeats than there are."""
    va, vb = comparison.repeat_values(prev), comparison.repeat_values(cur)
    if metric.test == "schedule":
        t = comparison.test_full(va, vb, 0.0, comparison.ALPHA)
        return None if t.p is None and not t.exact else t
    a = [max(metric.of(d), metric.floor) for d in prev]
    b = [max(metric.of(d), metric.floor) for d in cur]
    if len(a) < 2 or len(b) < 2:
        return None
    if metric.test == "log":
        return comparison.test_median(_with_medians(va, a), _with_medians(vb, b), 0.0, comparison.ALPHA)
    return comparison.test_gc_share(dataclasses.replace(va, shares=a), dataclasses.replace(vb, shares=b), 0.0,
                                    comparison.ALPHA)


def _center(metric: Metric, values: list[float]) -> float:
    """A version's value from its repeats: the geometric mean for times and ratios (as a
    cell's median step), the mean for shares and counts (as a cell's GC share)."""
    if metric.test == "log" and min(values) > 0:
        return float(np.exp(np.mean(np.log(values))))
    return float(np.mean(values))


@dataclasses.dataclass
class VersionRow:
    """One version's row: where it ran and, where it ran ok, its values from the repeats the
    times rest on; where it did not, why (`status`, `reason`). `change` and what backs it
    compare it with the version before."""

    version: str
    runs: int
    ok: int
    status: results.Status = "ok"
    environment: str | None = None
    python: str | None = None
    packages: dict[str, str] = dataclasses.field(default_factory=dict)
    reason: str | None = None
    used: int | None = None  # repeats that drifted or ran under load are left out (summary.used_repeats)
    values: list[float] = dataclasses.field(default_factory=list)
    value: float | None = None
    median_ms: float | None = None
    mean_ms: float | None = None
    gc_share_pct: float | None = None
    full_per_1000: float | None = None
    full_per_repeat: list[int] = dataclasses.field(default_factory=list)  # collections, not steps
    change: float | None = None  # against the version before
    tested: bool | None = None
    p_adj: float | None = None
    exact: bool | None = None
    not_judged: str | None = None  # a time from a loaded machine, or from two kinds of machine
    first_change: bool | None = None


@dataclasses.dataclass
class VersionTable:
    """A release bisect's table (bisect.json): the metric per version and the first change."""

    package: str
    cell: str
    metric: str
    metric_title: str
    unit: str
    floor: float
    factor: float
    rows: list[VersionRow]
    first_change: str | None = None
    missing: list[str] = dataclasses.field(default_factory=list)
    alpha: float = 0.05


def _in_order(versions: list[str], by_version: dict) -> list[str]:
    """The versions measured: those given first, in their order, then the rest by version."""
    order = [v for v in versions if v in by_version]
    return order + sorted((v for v in by_version if v not in order), key=venvs.version_key)


def table(docs: list[ResultDoc], package: str, cell: tuple[str, str, str], metric: Metric, factor: float,
          versions: list[str] | None = None) -> VersionTable:
    """The bisect table of `docs` (results of `cell` in environments that differ in `package`).

    Each version's value comes from its repeats as a cell's does (the geometric mean of
    times, the mean of shares and counts). A version is marked as the first change when its
    value differs from the previous version's by more than `factor` (values below the
    metric's floor count as the floor) *and* the repeats show it: exactly, for full
    collections whose schedules are fixed, else by a test corrected over the adjacent
    pairs (Benjamini-Hochberg); a change with too few repeats to test is shown but never
    marked.
    """
    check_factor(factor)
    package = envspec.normalize(package)
    by_version = _by_version(docs, package, cell)
    rows, tests = _rows_and_tests(_in_order(versions or [], by_version), by_version, metric)
    comparison.conclude([t for _, t in tests], comparison.ALPHA)
    for row, t in tests:
        row.p_adj, row.exact = t.p_adj, t.exact
        row.not_judged = t.not_judged or None  # never marked
    missing = [v for v in versions or [] if v not in by_version]
    return VersionTable(package, "/".join(cell), metric.name, metric.title, metric.unit, metric.floor, factor, rows,
                        _first_change(rows, factor), missing, comparison.ALPHA)


def _rows_and_tests(order: list[str], by_version: dict[str, list[ResultDoc]],
                    metric: Metric) -> tuple[list[VersionRow], list[tuple[VersionRow, comparison.Test]]]:
    """A row per version, in `order`, each with its change from the previous version that
    has a value, and the test of each such change (a change too thinly repeated: none)."""
    rows: list[VersionRow] = []
    previous: tuple[VersionRow, list[ResultDoc]] | None = None
    tests = []
    for version in order:
        row, used = _version_row(version, by_version[version], metric)
        rows.append(row)
        if row.value is None:
            continue
        if previous is not None and previous[0].value is not None:
            a, b = max(previous[0].value, metric.floor), max(row.value, metric.floor)
            row.change = (b / a) if a > 0 and b > 0 else (1.0 if a == b else float("inf"))
            t = _test(metric, previous[1], used)
            row.tested = t is not None
            if t is not None:
                tests.append((row, t))
        previous = row, used
    return rows, tests


def _by_version(docs: list[ResultDoc], package: str, cell: tuple[str, str, str]) -> dict[str, list[ResultDoc]]:
    """The results of `cell`, by the version of `package` each ran with."""
    by_version: dict[str, list[ResultDoc]] = {}
    for doc in docs:
        if (doc.backend, doc.workload, doc.gc_policy) == cell:
            version = _version_of(doc, package)
            if version is not None:
                by_version.setdefault(version, []).append(doc)
    return by_version


def _version_row(version: str, group: list[ResultDoc], metric: Metric) -> tuple[VersionRow, list[ResultDoc]]:
    """One version's row, and the repeats its times rest on; a version with no ok result
    says why."""
    ok = results.ok(group)
    sample = (ok or group)[0]
    meta = results.part(sample, "metadata")
    env = results.part(sample, "environment")
    row = VersionRow(version, len(group), len(ok), environment=env.get("name"),
                     python=meta.get("python") or env.get("python"),
                     packages={k: v for k, v in (meta.get("packages") or {}).items() if v})
    if not ok:
        reason = sample.reason
        return dataclasses.replace(row, status=sample.status,
                                   reason=reason.strip().splitlines()[0] if reason else ""), []
    used, _ = summary.used_repeats(ok)
    values = [metric.of(d) for d in used]
    return dataclasses.replace(
        row, used=len(used), values=values, value=_center(metric, values),
        median_ms=_center_of("median", used), mean_ms=_center_of("mean", used),
        gc_share_pct=_center_of("gc_share", used), full_per_1000=_center_of("full_gc", used),
        full_per_repeat=[int(summary.full_collections(d).sum()) for d in used]), used


def _center_of(name: str, used: list[ResultDoc]) -> float:
    """Metric `name`'s value over the repeats, centred as `_center` does."""
    return _center(METRICS[name], [metric_value(name, d) for d in used])


def _first_change(rows: list[VersionRow], factor: float) -> str | None:
    """The first version whose change from the one before is larger than `factor` and shown
    by the repeats (exactly, or by the corrected test); it is marked in its row."""
    for row in rows:
        if _shown_change(row, factor):
            row.first_change = True
            return row.version
    return None


def _shown_change(row: VersionRow, factor: float) -> bool:
    """A change beyond `factor` either way that the repeats show (exactly, or by the
    corrected test)."""
    change = row.change
    if change is None or (row.p_adj is None and not row.exact):
        return False
    big = change == float("inf") or max(change, 1 / change if change else float("inf")) > factor
    return big and (row.exact or (row.p_adj is not None and row.p_adj <= comparison.ALPHA))


def metric_value(name: str, doc: ResultDoc) -> float:
    return METRICS[name].of(doc)


def rebuild(tab: VersionTable, docs: list[ResultDoc]) -> VersionTable:
    """The table made anew from the results it rests on (rows follow the code that reads
    them); a table whose cell has no results among `docs` is returned as it is."""
    cell = tuple(tab.cell.split("/"))
    if tab.metric not in METRICS or len(cell) != 3 or not any(
            (d.backend, d.workload, d.gc_policy) == cell for d in docs):
        return tab
    return table(docs, tab.package, (cell[0], cell[1], cell[2]), METRICS[tab.metric], tab.factor,
                 [r.version for r in tab.rows])


def load_table(path) -> VersionTable:
    """A bisect.json written by `gcbench bisect`, checked; a one-line error when malformed."""
    from ..core import files, records

    try:
        table: VersionTable = records.from_json(files.read_json(path, "bisect table"), VersionTable, str(path))
    except UsageError as e:
        raise UsageError(f"{path}: not a gcbench bisect table ({str(e).removeprefix(f'{path}: ')})") from None
    if any(r.status == "ok" and (r.value is None or r.median_ms is None) for r in table.rows):
        raise UsageError(f"{path}: not a gcbench bisect table (a version that ran ok without its value or median)")
    return table
