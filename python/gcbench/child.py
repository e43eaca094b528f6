"""The child process a runner starts for one repeat of one cell:

    python -m gcbench.child OUT_FILE < spec.json

The spec (one JSON line on standard input) names the cell, the manager's command line and,
for `gcbench explain`, the diagnostic options. A measurement is `worker.run_cell`; a
diagnostic run is `explain.diagnose_cell`. This module sits above both, so that neither
imports the other's caller.
"""

from __future__ import annotations

import json
import os
import sys

from . import explain, results
from .config import Cell
from .errors import UsageError
from .worker import PARENT_ENV, die_with_parent, run_cell


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
        if spec.get("explain") is not None:  # `gcbench explain`: the diagnostic run, not a measurement
            doc = explain.diagnose_cell(cell, spec["explain"], spec.get("command"), spec.get("environment"))
            explain.write_raw(doc, argv[0])
        else:
            doc = run_cell(cell, spec.get("command"), environment=spec.get("environment"),
                           machine_state=spec.get("machine_state"))
            results.write(doc, argv[0])
    except UsageError as e:
        print(f"gcbench: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
