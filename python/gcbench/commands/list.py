"""`gcbench list`: backends (and whether they can run here), workloads, GC policies."""

from __future__ import annotations

import importlib.resources

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


def suites() -> list[dict]:
    """The shipped suites: what each runs, and the first sentence of its file's comment."""
    out = []
    for name in config.shipped_suites():
        suite = config.load_suite(name)
        text = (importlib.resources.files("gcbench") / "suites" / f"{name}.toml").read_text(encoding="utf-8")
        comment = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
        cells = [(b, w, gc) for b, w, gc in suite.combinations()  # those its backends support
                 if w in BACKENDS[b].workloads and gc.split(":")[0] in BACKENDS[b].policies]
        out.append({"name": name, "cells": len(cells), "repeats": suite.repeats, "steps": suite.steps,
                    "warmup": suite.warmup, "description": comment.split(". ")[0].rstrip(".") + "."})
    return out


def main(args) -> int:
    backends: list[dict] = []
    for b in BACKENDS.values():
        ok, reason = b.availability()
        backends.append({"name": b.name, "language": b.language, "description": b.description,
                         "available": ok, "reason": reason, "workloads": list(b.workloads),
                         "policies": [p if p != "manual" else "manual:K" for p in b.policies]})
    workloads = [{"name": w.name, "params_per_network": w.params_per_network, "networks": w.default_networks,
                  "description": w.description} for w in WORKLOADS.values()]
    if args.json:
        _common.print_json({"backends": backends, "workloads": workloads,
                            "gc_policies": [{"name": n, "description": d} for n, d in POLICIES], "suites": suites()})
        return 0
    print("Backends:")
    for row in backends:
        state = "available" if row["available"] else f"unavailable: {row['reason']}"
        print(f"  {row['name']:<18} {row['language']:<7} {state}")
        print(f"  {'':<18} {row['description']}")
        print(f"  {'':<18} workloads: {', '.join(row['workloads'])}; policies: {', '.join(row['policies'])}")
    print("Workloads:")
    for w in workloads:
        print(f"  {w['name']:<8} {w['params_per_network']:>8,} params/network  x{w['networks']:<4} {w['description']}")
    print("GC policies:")
    for name, doc in POLICIES:
        print(f"  {name:<9} {doc}")
    print("Suites (gcbench run --suite NAME):")
    for row in suites():
        print(f"  {row['name']:<9} {row['cells']} cells x {row['repeats']} repeats of {row['steps']} steps: "
              f"{row['description']}")
    return 0
