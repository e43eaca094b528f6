"""`gcbench reproduce`: the three seed reports' cases, side by side with their figures."""

from __future__ import annotations

import math

from ..analysing import seed_cases
from ..core import records
from ..core.errors import UsageError, did_you_mean
from ..flows import pipeline
from ..flows.options import ReproduceOptions
from ..running import config
from . import _common, _outcome


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="the seed reports' cases (equinox-spikes, flux-many-small, gather-memory) "
                                         "next to their published figures")
    p.add_argument("--only", help=f"comma-separated cases (default: all): {', '.join(seed_cases.CASES)}")
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
    _common.add_executor_arguments(p)
    p.set_defaults(main=main, rebuild_envs=False)


def _check_sizes(args) -> None:
    """Steps, repeats and batch size positive (0 never means "the default"); a timeout
    positive and finite."""
    for name in ("steps", "repeats", "batch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a positive, finite number of seconds, got {args.timeout:g}")


def _check_cases(only: list[str]) -> None:
    """The cases named are seed cases (at least one)."""
    unknown = [c for c in only if c not in seed_cases.CASES]
    if unknown or not only:
        hint = did_you_mean(unknown[0], seed_cases.CASES) if unknown else ""
        raise UsageError(f"unknown case {unknown[0] if unknown else '(none)'}{hint}; cases: "
                         f"{', '.join(seed_cases.CASES)}")


def _checked_cases(args) -> list[str]:
    """The cases to reproduce, and the options checked: a mistake is one line."""
    only = config.split_list(args.only, "--only") if args.only is not None else list(seed_cases.CASES)
    _check_sizes(args)
    _check_cases(only)
    if args.resume and args.force:
        raise UsageError("--resume and --force exclude each other: keep what is there, or replace it")
    return only


def main(args) -> int:
    from ..flows import reproduction

    only = _checked_cases(args)
    out_fn = _common.Output(args.json)
    opts = ReproduceOptions(_common.run_options(args), steps=args.steps, repeats=args.repeats,
                            batch_size=args.batch_size, timeout=args.timeout)
    doc, out_dir, code = reproduction.run(opts, only, out_fn, lambda o: _outcome.present(o, out_fn))
    if doc is None:
        return code
    out_fn()
    out_fn(_as_text(doc))
    out_fn(f"\nreproductions in {out_dir / seed_cases.FILE}")
    paths = None
    if args.report:
        paths = pipeline.write_report(out_dir, None, 3.0, out_fn=out_fn, title="gcbench: the seed reports, reproduced")
    if args.json:
        _common.print_json({"results": str(out_dir), "exit_code": code, "reproductions": records.to_json(doc),
                            "report": _common.report_json(paths) if paths else None})
    return code


def _as_text(doc: seed_cases.Reproduction) -> str:
    """The reproduction as the terminal shows it: per seed case, each claim's verdict, the
    seed's figure and this run's."""
    lines = []
    for case in doc.cases:
        lines.append(f"{case.name} (seed {case.seed})")
        for r in case.rows:
            lines.append(
                f"  {r.verdict:<11} {r.claim}: seed {r.seed_value}; here {r.measured}"
                + (f"; ratio {r.ratio}" if r.ratio != "-" else "")
                + (f" ({r.reason})" if r.reason else "")
            )
    return "\n".join(lines)
