"""A diagnostic run, end to end (`gcbench explain CELL`): the cell's environment built if
it runs in one, the diagnostic run in a worker (`measuring.diagnostic_run`), and its
explanation (`analysing.gc_causes`), with the measured effects of the cells already in the
folder, merged into the folder's explain.json.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
from typing import Any

from ..analysing import gc_causes
from ..core import files
from ..core.errors import UsageError, option
from ..measuring import diagnostic_run, envspec, results
from ..measuring.cell import Cell
from ..running import config, runner, venvs
from .options import ExplainOptions, FlowOutcome


def run(opts: ExplainOptions, suite: config.Suite, cell: Cell) -> FlowOutcome:
    """Diagnose `cell` (of `suite`) into the results folder `opts.run.out` (or a new one): (the
    explanation, the folder, exit code); the explanation is None when it was interrupted."""
    out_dir = files.make_folder(opts.run.out or config.default_out("explain"), "results folder")
    # explain.json is read, merged and written: one gcbench at a time in a folder, and never
    # beside a run that is writing into it
    with files.FolderLock(out_dir, f"{out_dir} is in use by another gcbench (a run or an explain); wait for it "
                                   f"or use another {option('out')}"):
        env_args: dict[str, Any] = {}
        if cell.env is not None:
            needed = sorted(set(runner.get_backend(cell.backend).requires))
            built = venvs.build_all(
                [envspec.parse(cell.env)], needed, opts.run.rebuild_envs, log=lambda m: print(m, file=sys.stderr)
            )
            env = built[cell.env]
            if isinstance(env, Exception):
                raise UsageError(f"environment {cell.env_spec.name}: {env}")
            env_args = {"python": env.python, "environment": env.describe()}
        print(f"gcbench: diagnostic run of {cell.label}, {cell.steps} steps after {cell.warmup} warm-up; "
              f"{diagnostic_run.DISTURBED}", file=sys.stderr, flush=True)
        options = {"sites": opts.sites, "sample_rate": opts.sample_rate, "site_steps": opts.site_steps}
        bars = runner.Progress([cell], sys.stderr) if opts.run.progress and sys.stderr.isatty() else None
        with tempfile.TemporaryDirectory(prefix="gcbench-explain-") as tmp:
            try:
                with runner.interruptible():
                    if bars is not None:
                        bars.start(cell, f"diagnostic run of {cell.label}")
                    raw = runner.run_worker(
                        cell,
                        pathlib.Path(tmp) / "raw.json",
                        opts.run.command,
                        suite.timeout,
                        bars,
                        explain=options,
                        load=diagnostic_run.load_raw,
                        **env_args,
                    )
            except runner.CellFailed as e:
                raise UsageError(f"the diagnostic run failed: {str(e).splitlines()[0]}") from None
            except runner.Interrupted as e:
                print("\ngcbench: interrupted", file=sys.stderr)
                return FlowOutcome(None, out_dir, e.exit_code)
            finally:
                if bars is not None:
                    bars.finish(cell)
                    bars.close()
        docs = results.load_dir(out_dir, allow_empty=True)
        expl = gc_causes.summarize(raw, docs)
        gc_causes.save(out_dir, expl)
    return FlowOutcome(expl, out_dir, 0)
