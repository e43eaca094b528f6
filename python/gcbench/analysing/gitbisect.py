"""`gcbench bisect --git`: the commit of a package's history where a cell changed.

How it works, and why: docs/internals.md, `gcbench.analysing.gitbisect`.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..core import files, records
from ..core.errors import UsageError, did_you_mean
from ..measuring import envspec, results
from ..measuring.results import ResultDoc
from ..running.gitrepo import Commit
from . import summary, version_bisect

FILE = "gitbisect.json"
FORMAT = "gcbench-gitbisect"
SCHEMA_VERSION = 1
SEED_TOOLS = {"pip", "setuptools", "wheel"}  # what the installer puts into every environment itself
RULE = ("A tested commit is like bad when its value lies nearer the bad endpoint's value than the good "
        "endpoint's (the median step on a log scale), else like good. Values are per cell: full collections "
        "per repeat (their mean over the repeats; exact when the schedule is the same in every repeat), the GC "
        "share (mean of the per-repeat shares) or the median step (geometric mean of the per-repeat medians). "
        "The endpoints must differ: their per-repeat full-collection counts do not overlap, or, for the GC share "
        "and the median, Student's t test of their repeats gives p < 0.05.")


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    title: str
    unit: str
    log: bool  # compared on a log scale

    def per_repeat(self, docs: list[ResultDoc]) -> list[float]:
        ok = results.ok(docs)
        if self.name == "full-collections":
            return [float(summary.full_collections(d).sum()) for d in ok]  # collections, not steps holding one
        release_metric = version_bisect.METRICS["gc_share" if self.name == "gc-share" else "median"]  # one formula each
        return [release_metric.of(d) for d in ok]

    def value(self, per_repeat: list[float]) -> float:
        if self.log:
            return float(np.exp(np.mean(np.log(per_repeat))))
        return float(np.mean(per_repeat))


METRICS = {m.name: m for m in [
    Metric("full-collections", "full collections per repeat", "", False),
    Metric("gc-share", version_bisect.METRICS["gc_share"].title, "%", False),  # one formula, one name
    Metric("median", "median step time", "ms", True),
]}


def max_builds(commits: int) -> int:
    """The most builds a bisect of `commits` commits after the good one takes: both endpoints
    and a binary search of the rest."""
    return math.ceil(math.log2(max(commits, 1))) + 2


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown --metric {name!r} for a commit bisect{did_you_mean(name, METRICS)}; valid: "
                         f"{', '.join(METRICS)}") from None


def pinned_like(environment: Mapping[str, Any], name: str) -> list[str]:
    """Pins of every package the good endpoint's environment holds, but the bisected one."""
    return [f"{n}=={v}" for n, v in sorted(environment.get("packages", {}).items())
            if envspec.normalize(n) not in {name, "gcbench"} | SEED_TOOLS]


# -- decisions ------------------------------------------------------------------------------------

def _counts_apart(good: list[float], bad: list[float]) -> tuple[bool, str]:
    """Two endpoints' full collections differ where their per-repeat counts do not overlap
    (exactly, where every repeat of each made the same number)."""
    apart = max(good) < min(bad) or max(bad) < min(good)
    fixed = len(set(good)) == 1 and len(set(bad)) == 1
    if not apart:
        return False, "the per-repeat counts overlap"
    return True, "exact: the counts are the same in every repeat" if fixed else "the per-repeat counts do not overlap"


def endpoints_differ(metric: Metric, good: list[float], bad: list[float]) -> tuple[bool, str]:
    """Whether the endpoints differ by the rule, and how that was decided."""
    if metric.name == "full-collections":
        return _counts_apart(good, bad)
    from scipy import stats as sst

    if len(good) < 2 or len(bad) < 2:
        return False, "two repeats or more on each side are needed for a test"
    a, b = (np.log(good), np.log(bad)) if metric.log else (np.asarray(good), np.asarray(bad))
    p = float(sst.ttest_ind(a, b).pvalue)
    return (p < 0.05 if math.isfinite(p) else bool(np.mean(a) != np.mean(b))), f"t test of the repeats, p = {p:.2g}"


def decide(metric: Metric, value: float, good: float, bad: float) -> str:
    f = (lambda x: math.log(max(x, 1e-12))) if metric.log else (lambda x: x)
    return "bad" if abs(f(value) - f(bad)) < abs(f(value) - f(good)) else "good"


def next_candidate(n: int, lo: int, hi: int, tried: set[int]) -> int | None:
    """The untested commit index strictly between lo (good) and hi (bad) nearest their
    midpoint (skipped commits count as tried); None when there is none."""
    mid = (lo + hi) // 2
    for d in range(n):
        for i in (mid - d, mid + d):
            if lo < i < hi and i not in tried:
                return i
    return None


# -- the table ------------------------------------------------------------------------------------

@dataclasses.dataclass
class Culprit:
    """The first bad commit's message and the files it changed."""

    message: str
    files: list[str]


@dataclasses.dataclass
class CommitPlan:
    """A commit bisect's plan (gitbisect.json): the endpoints and the commits between them,
    what was tested in which environment, and the first bad commit's message once found."""

    package: str
    repo: str
    cell: str
    metric: str
    good: Commit
    commits: list[Commit]  # first-parent commits after the good endpoint; the last is the bad one
    tested: dict[str, str]  # sha: the environment it was tested in
    base: str = ""
    culprit: Culprit | None = None
    format: str = FORMAT
    schema_version: int = SCHEMA_VERSION

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("culprit",)


@dataclasses.dataclass
class CommitRow:
    """A tested commit: its value from its repeats, and the decision on it."""

    sha: str
    date: str
    subject: str
    index: int  # in history order; 0: the good endpoint
    value: float | None
    per_repeat: list[float]
    decision: str  # good/bad (endpoint), good, bad, skip, -
    why_not: str | None  # why it has no value

    @property
    def short(self) -> str:
        return self.sha[:9]


@dataclasses.dataclass
class CommitTable:
    """A commit bisect's table, recomputed from its plan and the results (`table`)."""

    package: str
    repo: str
    cell: str
    metric: str
    metric_title: str
    unit: str
    rule: str
    builds: int
    max_builds: int
    commits_between: int
    rows: list[CommitRow]
    endpoints: str
    endpoints_differ: bool = False
    first_bad: str | None = None
    range: tuple[str, str] | None = None  # the good and bad commits the search narrowed to
    # whether the newer ("bad") endpoint measured lower: the change bisected is then an
    # improvement (every metric is better lower), and its first commit is not called bad
    better: bool | None = None
    unresolved: str | None = None  # where skipped commits leave the first bad one among several
    format: str = FORMAT
    schema_version: int = SCHEMA_VERSION


@dataclasses.dataclass(frozen=True)
class _Tested:
    """A tested commit's values, or why it has none."""

    per_repeat: list[float]
    value: float | None
    why_not: str | None

    @property
    def ran(self) -> bool:
        return bool(self.per_repeat)


def table(plan: CommitPlan, docs_by_env: dict[str, list[ResultDoc]]) -> CommitTable:
    """The bisect's table from its plan (commits, endpoints, what was tested, in order) and the
    results of each tested environment: values, decisions and the first bad commit, recomputed."""
    metric = get_metric(plan.metric)
    commits, good = plan.commits, plan.good
    order = [good, *commits]  # index 0: the good endpoint
    rows = {sha: _tested(metric, docs_by_env.get(env, [])) for sha, env in plan.tested.items()}
    g, b = rows.get(good.sha), rows.get(commits[-1].sha)
    endpoints, differ = _endpoints(metric, (good, g), (commits[-1], b))
    out = CommitTable(plan.package, plan.repo, plan.cell, metric.name, metric.title, metric.unit, RULE,
                      len(plan.tested), max_builds(len(commits)), len(commits), [], endpoints, differ)
    judged = metric if differ and g and b else None  # else no commit is decided
    lo, hi = 0, len(order) - 1
    for i, c in enumerate(order):
        if c.sha not in rows:
            continue
        r = rows[c.sha]
        decision = _decision(i, len(order), r, judged, g, b)
        if decision == "good":
            lo = max(lo, i)
        elif decision == "bad":
            hi = min(hi, i)
        out.rows.append(CommitRow(c.sha, c.date, c.subject, i, r.value, r.per_repeat, decision, r.why_not))
    if differ:
        _narrowed(out, order, lo, hi, g, b)
    return out


def _narrowed(out: CommitTable, order: list, lo: int, hi: int, g, b) -> None:
    """Where the endpoints differ: the direction, and the commit (or the commits still
    in question) between the last good one `lo` and the first bad one `hi`."""
    out.better = bool(g is not None and b is not None and g.value is not None and b.value is not None
                      and b.value < g.value)
    out.range = (order[lo].sha, order[hi].sha)
    if hi - lo == 1:
        out.first_bad = order[hi].sha
        return
    skipped = [order[i].short for i in range(lo + 1, hi)]
    what = f"the first commit with {change(out)}" if out.better else "the first bad commit"
    out.unresolved = f"{what} is one of {', '.join(skipped)} or {order[hi].short}"


# what the change bisected does to each metric, every one better lower: (lower, higher)
CHANGE_WORDS = {"full-collections": ("fewer full collections", "more full collections"),
                "gc-share": ("a lower GC share", "a higher GC share"),
                "median": ("a faster median step", "a slower median step")}


def change(tab: CommitTable) -> str:
    """What the bisected change does, in words: "fewer full collections"."""
    lower, higher = CHANGE_WORDS.get(tab.metric, (f"a lower {tab.metric_title}", f"a higher {tab.metric_title}"))
    return lower if tab.better else higher


def _endpoints(metric: Metric, good: tuple, bad: tuple) -> tuple[str, bool]:
    """Whether the endpoints (each (commit, row or None)) ran and differ, in words."""
    (gc, g), (bc, b) = good, bad
    if not (g and b and g.ran and b.ran):
        return "an endpoint did not run: " + "; ".join(
            f"{name} {c.short}: {r.why_not}" for name, c, r in (("good", gc, g), ("bad", bc, b))
            if r and not r.ran), False
    differ, how = endpoints_differ(metric, g.per_repeat, b.per_repeat)
    return (how if differ else f"the endpoints do not differ ({how}): nothing to bisect"), differ


def _tested(metric: Metric, ds: list[ResultDoc]) -> _Tested:
    """A tested commit's values, or why it has none."""
    per = metric.per_repeat(ds)
    statuses = sorted({d.status for d in ds})
    why_not = None if per else next((d.reason.splitlines()[0] for d in ds if d.reason), "no result") + \
        (f" ({'/'.join(statuses)})" if statuses else "")
    return _Tested(per, metric.value(per) if per else None, why_not)


def _decision(i: int, n: int, r: _Tested, metric: Metric | None, g: _Tested | None, b: _Tested | None) -> str:
    """The decision on the commit at index `i` of `n`: an endpoint, skipped (it did not run),
    good or bad (`decide`, where the endpoints differ: `metric` and their rows given), or -."""
    if i == 0:
        return "good (endpoint)"
    if i == n - 1:
        return "bad (endpoint)"
    if not r.ran or r.value is None:
        return "skip"
    if metric is None or g is None or b is None or g.value is None or b.value is None:
        return "-"  # the endpoints do not differ: nothing to decide against
    return decide(metric, r.value, g.value, b.value)


def save(folder: pathlib.Path, plan: CommitPlan) -> None:
    files.write_json(pathlib.Path(folder) / FILE, records.to_json(plan))


def load(path: pathlib.Path) -> CommitPlan | None:
    """The plan of a commit bisect in a results folder, or None; a one-line error when malformed."""
    path = pathlib.Path(path)
    if not path.is_file():
        return None
    plan = files.check_header(files.read_json(path, "gcbench commit bisect"), str(path), FORMAT, "commit bisect",
                              SCHEMA_VERSION, versioned=False)
    keys = ("package", "repo", "cell", "metric", "good", "commits", "tested")
    if not (all(k in plan for k in keys) and isinstance(plan["tested"], dict) and isinstance(plan["commits"], list)
            and plan["commits"]):
        raise UsageError(f"{path}: not a gcbench commit bisect")
    get_metric(plan["metric"])
    return records.from_json(plan, CommitPlan, str(path))


def docs_by_env(docs: list[ResultDoc]) -> dict[str, list[ResultDoc]]:
    out: dict[str, list[ResultDoc]] = {}
    for d in docs:
        env = results.part(d, "environment").get("spec")
        if env:
            out.setdefault(env, []).append(d)
    return out
