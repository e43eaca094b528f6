"""`gcbench list`: backends (and whether they can run here), workloads, GC policies."""

from __future__ import annotations

import dataclasses
import importlib.resources

from ..core import records
from ..measuring.backends import BACKENDS
from ..measuring.workloads import WORKLOADS
from ..running import config
from . import _common

POLICIES = [
    ("default", "the interpreter's own collector"),
    ("freeze", "collect, then gc.freeze() after warm-up (Python only)"),
    ("disable", "no collection during the timed steps"),
    ("manual:K", "disabled, one full collection every K steps, counted in that step"),
]


def register(sub) -> None:
    p = sub.add_parser("list", help="backends (and whether they are available), workloads, GC policies")
    _common.add_json_argument(p, "the backends, workloads, GC policies and suites")
    p.set_defaults(main=main)


@dataclasses.dataclass(frozen=True)
class BackendRow:
    name: str
    language: str
    description: str
    available: bool
    reason: str  # why not, where not available
    workloads: list[str]
    policies: list[str]


@dataclasses.dataclass(frozen=True)
class WorkloadRow:
    name: str
    params_per_network: int
    networks: int  # by default
    description: str


@dataclasses.dataclass(frozen=True)
class PolicyRow:
    name: str
    description: str


@dataclasses.dataclass(frozen=True)
class SuiteRow:
    name: str
    cells: int
    repeats: int
    steps: int
    warmup: int
    description: str


def backends() -> list[BackendRow]:
    """Every backend, and whether it can run here (and if not, why)."""
    rows = []
    for b in BACKENDS.values():
        ok, reason = b.availability()
        rows.append(BackendRow(b.name, b.language, b.description, ok, reason, list(b.workloads),
                               [p if p != "manual" else "manual:K" for p in b.policies]))
    return rows


def suites() -> list[SuiteRow]:
    """The shipped suites: what each runs, and the first sentence of its file's comment."""
    out = []
    for name in config.shipped_suites():
        suite = config.load_suite(name)
        text = (importlib.resources.files("gcbench") / "suites" / f"{name}.toml").read_text(encoding="utf-8")
        comment = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
        cells = [(b, w, gc) for b, w, gc in suite.combinations()  # those its backends support
                 if w in BACKENDS[b].workloads and gc.split(":")[0] in BACKENDS[b].policies]
        out.append(SuiteRow(name, len(cells), suite.repeats, suite.steps, suite.warmup,
                            comment.split(". ")[0].rstrip(".") + "."))
    return out


def _state(row: BackendRow, shared: set[str]) -> str:
    """Whether a backend runs here; a reason several share is said once, below them."""
    if row.available:
        return "available"
    return f"unavailable: {row.language} (below)" if row.reason in shared else f"unavailable: {row.reason}"


def _print_backends(rows: list[BackendRow]) -> None:
    print("Backends:")
    # a reason several backends share (Julia's, for its three) is said once, after them
    shared = {r.reason for r in rows if not r.available and sum(o.reason == r.reason for o in rows) > 1}
    for row in rows:
        print(f"  {row.name:<18} {row.language:<7} {_state(row, shared)}")
        print(f"  {'':<18} {row.description}")
        print(f"  {'':<18} workloads: {', '.join(row.workloads)}; policies: {', '.join(row.policies)}")
    for reason in sorted(shared):
        names = ", ".join(r.name for r in rows if r.reason == reason)
        print(f"  {names} unavailable: {reason}")


def main(args) -> int:
    rows = backends()
    workloads = [WorkloadRow(w.name, w.params_per_network, w.default_networks, w.description)
                 for w in WORKLOADS.values()]
    policies = [PolicyRow(n, d) for n, d in POLICIES]
    shipped = suites()
    if args.json:
        _common.print_json(records.to_json({"backends": rows, "workloads": workloads, "gc_policies": policies,
                                            "suites": shipped}))
        return 0
    _print_backends(rows)
    print("Workloads:")
    for w in workloads:
        print(f"  {w.name:<8} {w.params_per_network:>8,} params/network  x{w.networks:<4} {w.description}")
    print("GC policies:")
    for policy in policies:
        print(f"  {policy.name:<9} {policy.description}")
    print("Suites (gcbench run --suite NAME):")
    for suite in shipped:
        print(f"  {suite.name:<9} {suite.cells} cells x {suite.repeats} repeats of {suite.steps} steps: "
              f"{suite.description}")
    return 0
