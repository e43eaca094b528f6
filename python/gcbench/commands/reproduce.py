"""`gcbench reproduce`: the three seed reports' cases, side by side with their figures."""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import tempfile

import numpy as np

from .. import cluster_options, config, reproduce
from ..errors import UsageError
from . import _common


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="the seed reports' cases (equinox-spikes, flux-many-small, gather-memory) "
                                         "next to their published figures")
    p.add_argument("--only", help=f"comma-separated cases (default: all): {', '.join(reproduce.CASES)}")
    p.add_argument("--steps", type=int, help="timed steps per repeat (default: 400 for equinox-spikes, 150 otherwise)")
    p.add_argument("--repeats", type=int, help="fresh processes per cell (default: 3 for equinox-spikes, 2 otherwise)")
    p.add_argument("--batch-size", type=int,
                   help="batch of the equinox-spikes ViT (default: calibrated so its median step is nearest 8 ms)")
    p.add_argument("--timeout", type=float, help="seconds a repeat may take before it is stopped")
    p.add_argument("--data", help="folder with the MNIST IDX files (default: $GCBENCH_MNIST, then the cache)")
    p.add_argument("--out", help="results folder (default: results/reproduce-<date>-<time>)")
    p.add_argument("--resume", action="store_true", help="keep the ok results already in --out, run the rest")
    p.add_argument("--force", action="store_true", help="replace the results already in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--report", action="store_true", help="write the report at the end (into reports/<results name>)")
    _common.add_json_argument(p, "the table of reproductions")
    cluster_options.add_arguments(p)
    p.set_defaults(main=main, rebuild_envs=False)


def calibrate(args, out_fn) -> dict:
    """The ViT's median step (equinox-filter, collector off) at decreasing batch sizes, until
    one is at most 8 ms; then `reproduce.calibration_choice`."""
    from .. import runner

    medians = {}
    with tempfile.TemporaryDirectory(prefix="gcbench-calibrate-") as tmp:
        for batch in reproduce.CALIBRATION_BATCHES:
            suite = config.Suite(name="calibrate", backends=["equinox-filter"], workloads=["vit"], gc=["disable"],
                                 steps=40, warmup=3, repeats=1, batch_size=batch).validate()
            cell = suite.cells(args.data)[0]
            try:
                doc = runner.run_worker(cell, pathlib.Path(tmp) / f"{batch}.json", ["gcbench", "reproduce"], 900, None)
            except runner.CellFailed as e:
                raise UsageError(f"calibration at batch {batch} failed: {str(e).splitlines()[0]}") from None
            if doc["status"] != "ok":
                raise UsageError(f"calibration needs equinox: {doc['reason']}")
            medians[batch] = float(np.median(doc["wall_ns"])) / 1e6
            out_fn(f"calibration: batch {batch}: median step {medians[batch]:.3g} ms")
            if medians[batch] <= reproduce.TARGET_MS:
                break
    chosen = reproduce.calibration_choice(medians)
    out_fn(f"calibration: batch {chosen} (median step nearest {reproduce.TARGET_MS:g} ms, at most "
           f"{reproduce.MAX_MS:g})")
    return {"medians_ms": {str(b): m for b, m in medians.items()}, "chosen": chosen}


def main(args) -> int:
    from .. import memory
    from ..backends import julia_bridge

    only = config.split_list(args.only, "--only") if args.only is not None else list(reproduce.CASES)
    for name in ("steps", "repeats", "batch_size"):  # 0 never means "the default"
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a positive, finite number of seconds, got {args.timeout:g}")
    unknown = [c for c in only if c not in reproduce.CASES]
    if unknown or not only:
        raise UsageError(f"unknown case {unknown[0] if unknown else '(none)'}; cases: {', '.join(reproduce.CASES)}")
    if args.resume and args.force:
        raise UsageError("--resume and --force exclude each other: keep what is there, or replace it")
    out_fn = _common.Output(args.json)
    kind, data_note, samples = _common.check_data(args.data)
    calibration: dict = {}
    earlier = reproduce.load(args.out) if args.resume and args.out and pathlib.Path(args.out).is_dir() else None
    if "equinox-spikes" in only:
        if args.batch_size:
            calibration = {"chosen": args.batch_size, "medians_ms": {}, "given": True}
        elif earlier and (earlier.get("calibration") or {}).get("chosen"):  # a resumed run keeps its batch
            calibration = earlier["calibration"]
            out_fn(f"calibration: batch {calibration['chosen']}, as the run being resumed chose")
        elif args.executor == "slurm":
            raise UsageError(f"reproduce --executor {args.executor} needs --batch-size for equinox-spikes: the "
                             "calibration would time this machine, not the nodes (calibrate on a node with "
                             "`gcbench reproduce --only equinox-spikes` there, or give the batch)")
        else:
            calibration = calibrate(args, out_fn)
    suites = reproduce.suites(only, args, calibration.get("chosen") or 8)
    if args.timeout is not None:
        for s in suites.values():
            s.timeout = args.timeout
    cells = [c for s in suites.values() for c in s.cells(args.data)]
    settings = {name: {"backends": s.backends, "workloads": s.workloads, "gc": s.gc, "steps": s.steps,
                       "repeats": s.repeats, "batch_size": s.batch_size,
                       "networks": {w: next(c.networks for c in cells if c.workload == w) for w in s.workloads}}
                for name, s in suites.items()}
    settings.setdefault("equinox-spikes", {})["why"] = (
        "the deep module tree of a 12-block ViT makes the collections; the pause stands out only when the step is "
        "short, so the batch is the one whose median step comes nearest the seed's 8 ms on this machine")
    settings.setdefault("flux-many-small", {})["why"] = (
        "the seed's sizes: 200 networks of 4,992 parameters, and the model zoo's 5 LeNet-5s (Julia threads: "
        "the machine's cores, as the MWE's --threads); the JAX family trains the same networks beside them")
    out = args.out or config.default_out("reproduce")
    docs, out_dir = [], pathlib.Path(out)
    code = 0
    if cells:
        # the seed's MWE trains its 5 LeNet-5s on Julia threads, one per core
        cells = [dataclasses.replace(c, julia_threads=os.cpu_count() or 1)
                 if c.backend in reproduce.JULIA and c.workload == "lenet5" else c for c in cells]
        plan_suite = config.Suite(name="reproduce", backends=sorted({c.backend for c in cells}), repeats=1,
                                  timeout=max(s.timeout for s in suites.values()))
        docs, out_dir, code = _common.run_plan(cells, plan_suite, args, out, out_fn, kind, data_note, samples)
        if docs is None:
            return code
    memory_doc = None
    if "gather-memory" in only:
        from .. import files

        files.make_folder(out_dir, "results folder")
        memory_doc = memory.run(["seed"], ["int32", "int16"], [], [], False, out_dir, ["gcbench"] + args.argv)
        settings["gather-memory"] = {"sizes": "the seed's: x 128^3 float32, idx 2048^3 x 3", "index": "int32, int16",
                                     "why": "compiled on abstract shapes: XLA's memory analysis, nothing allocated"}
    ok, why = julia_bridge.status()
    doc = reproduce.build(only, docs or [], calibration, memory_doc, None if ok else why, settings)
    reproduce.save(out_dir, doc)
    out_fn()
    out_fn(reproduce.format_text(doc))
    out_fn(f"\nreproductions in {out_dir / reproduce.FILE}")
    paths = None
    if args.report:
        paths = _common.write_report(out_dir, None, 3.0, out_fn=out_fn, title="gcbench: the seed reports, reproduced")
    code = 0 if code == 0 or any(d["status"] == "ok" for d in docs) else code
    if args.json:
        _common.print_json({"results": str(out_dir), "exit_code": code, "reproductions": doc,
                            "report": _common.report_json(paths) if paths else None})
    return code
