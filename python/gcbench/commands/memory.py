"""`gcbench memory`: memory of compiled programs, gather gradients and training steps."""

from __future__ import annotations

from ..core import files, records
from ..measuring.backends import BACKENDS
from ..running import config
from . import _common


def register(sub) -> None:
    mem = sub.add_parser("memory", help="memory of compiled programs: gather gradients and training steps")
    mem.add_argument("--size", default="small,medium,seed",
                     help="comma-separated sizes: small, medium, seed; or one N,M (x is N^3 float32, idx M x 3)")
    mem.add_argument("--index-dtype", default="int32,int16", help="comma-separated index dtypes (int8/16/32/64)")
    mem.add_argument("--backends", default="all", help="backends whose training step is analysed")
    mem.add_argument("--workloads", default="mlp,lenet5,vit", help="workloads whose training step is analysed")
    mem.add_argument("--no-measure", action="store_true", help="do not run the small cases for real")
    mem.add_argument("--out", help="results folder for memory.json (default: results/memory-<date>-<time>)")
    _common.add_json_argument(mem, "the memory analysis")
    mem.set_defaults(main=main)


def sizes(text: str) -> list[str]:
    """'small,seed' -> ['small', 'seed']; '16,4096' (one N,M pair) stays whole."""
    parts = config.split_list(text, "--size")
    if parts and all(p.isdigit() for p in parts):
        return [",".join(parts)]
    return parts


def main(args) -> int:
    from ..measuring import program_memory

    size_list = sizes(args.size)
    dtypes = config.split_list(args.index_dtype, "--index-dtype")
    backends = list(BACKENDS) if args.backends == "all" else config.split_list(args.backends, "--backends")
    workloads = config.split_list(args.workloads, "--workloads")
    config.Suite(backends=backends, workloads=workloads).validate()  # names checked as for run
    program_memory.check_cases(size_list, dtypes)  # before any folder is made
    out_dir = files.make_folder(args.out or config.default_out("memory"), "results folder")
    doc = program_memory.run(size_list, dtypes, backends, workloads, not args.no_measure, out_dir,
                             ["gcbench", *args.argv])
    out = _common.Output(args.json)
    out(program_memory.format_tables(doc))
    out(f"\nmemory analysis in {out_dir / 'memory.json'}")
    if args.json:
        _common.print_json({"results": str(out_dir), "memory": records.to_json(doc)})
    return 0
