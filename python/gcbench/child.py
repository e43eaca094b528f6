"""The entry point of a worker process, which a runner starts for one repeat of one cell:

    python -m gcbench.child OUT_FILE < spec.json

The spec (one JSON line on standard input) names the cell, the manager's command line and,
for `gcbench explain`, the diagnostic options. A measurement is `measuring.worker.run_cell`;
a diagnostic run is `measuring.diagnostic_run.diagnose_cell`. Like `cli` for the manager,
this module is an entry point: it stands above every layer.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import traceback

# The worker's heap as it has always been measured. Before the package was split into
# layers, this module imported the explanation (for diagnostic runs), and with it
# `scipy.stats`, and the suites' module; all of their objects sit in the oldest generation,
# which every full collection scans, so leaving them out moves the collector's schedule
# and shortens its full pauses (DESIGN.md, "The worker's heap"). That is a change of what
# a run measures, to be made on purpose with its own measurements, not as a side effect
# of moving modules. (The imports below keep the order they had; scipy.stats and
# scipy.optimize came with the explanation's statistics, which now import them when first
# used, so they are imported here, where the worker has always held them; so is the
# statistics module, which the explanation imported for the wording of its numbers before
# that moved to core.wording.)
import scipy.optimize
import scipy.stats  # noqa: F401

from .analysing import gc_causes, stats  # noqa: F401
from .core.errors import UsageError
from .measuring import diagnostic_run, results
from .measuring.cell import Cell
from .measuring.worker import (
    PARENT_ENV,
    RESULT_WRITTEN,
    die_with_parent,
    preload,
    preload_data,
    run_cell,
)
from .running import config  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m gcbench.child OUT_FILE < spec.json", file=sys.stderr)
        return 2
    spec = json.loads(sys.stdin.readline())
    parent = os.environ.get(PARENT_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None, sys.stdin)
    cell = Cell(**spec["cell"])
    try:
        preload(cell.backend)  # as a training script imports at its top (a forked worker's server did)
        preload_data(cell.data_path, cell.seed)  # then loads its data (a server loads the run's)
        settle()
        if spec.get("explain") is not None:  # `gcbench explain`: the diagnostic run, not a measurement
            raw = diagnostic_run.diagnose_cell(cell, spec["explain"], spec.get("command"), spec.get("environment"))
            diagnostic_run.write_raw(raw, argv[0])
        else:
            doc = run_cell(cell, spec.get("command"), environment=spec.get("environment"),
                           machine_state=spec.get("machine_state"), exiting=True)
            results.write(doc, argv[0], check=False)  # the runner checks it as it loads it
            print(RESULT_WRITTEN, flush=True)
    except UsageError as e:
        print(f"gcbench: {e}", file=sys.stderr)
        return 2
    except Exception:  # the cell's own failure (a Julia error from run!, a JAX error)
        # printed here and returned, so that the worker still leaves through `leave`: an
        # exception let out of main would run juliacall's exit hook, which with several Julia
        # threads can turn "exit 1" into a signal (PythonCall issue #764)
        traceback.print_exc()
        return 1
    return 0


def settle() -> None:
    """One full collection once the worker has imported what it needs, before its cell:
    every repeat's collector then starts from the same state, its counts at zero and the
    oldest generation holding what the imports left, whether the process is a fresh
    interpreter or was forked (whose server's loop allocated a few objects a fresh worker
    does not, enough to move the young generation's phase: tests/test_warm_workers.py).
    In a forked worker it also copies, before any step, the pages it shares with its
    server: a collection writes to every object it tracks."""
    gc.collect()


def leave(code: int) -> None:
    """Exit with `code`, without the interpreter's teardown: the result file was written
    whole and synced before this (files.write_bytes), and nothing after it is measured.
    Tearing down a process that ran JAX took 0.48 s a repeat (its modules, its thread
    pools, every object freed one by one), a tenth of a quick-suite repeat's timed work.
    Where juliacall was imported, its exit hook is skipped too: it calls
    `jl_atexit_hook(0)`, which with several Julia threads sometimes segfaults (PythonCall
    issue #764, fix pending in PR #763) after the result is on disk."""
    if "juliacall" in sys.modules:
        from .measuring.backends import julia_bridge

        julia_bridge.flush_streams()  # Julia's own buffers: os._exit skips Julia's exit hooks too
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    leave(main())
