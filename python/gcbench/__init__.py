"""gcbench: how much of a training step goes to the garbage collector, across frameworks.

The public API:

- `measure(name)`: the probe around your own training loop (see `gcbench.measure`);
- `load(path)`, `load_dir(folder)`: read and validate result documents;
- `summarize(docs)`: one cell's repeats combined, with intervals;
- `records(folder)`, `to_dataframe(folder)`: results as rows (pandas optional);
- `Suite`, `load_suite`, `Cell`: what `gcbench run` runs; `StepProbe`: the probe itself.
"""

import sys as _sys

from .core import machineload as _machineload

# the machine's CPU counters as gcbench was imported: a loop of one's own too short to read is
# read over the time since (`measure`, core.machineload.over_window), never by waiting after it
_IMPORTED = _machineload.snapshot(family=False)

# Everything else loads when first used (numpy, msgspec and scipy take most of a second):
# `import gcbench` and the command line start at once, Ctrl-C in their first second finds
# gcbench's own handler, and a measured loop's heap holds only what `measure` needs
# (benchmarks/schedule_footprint.py). (`measure` lives in `user_loop`: a submodule named `measure` would
# take the function's place in the package once imported; hence `measuring`, not `measure`.)
_LAZY = {
    "__version__": "core.version",
    "UsageError": "core.errors",
    "measure": "user_loop",
    "Measurement": "user_loop",
    "Cell": "measuring.cell",
    "Suite": "running.config",
    "load_suite": "running.config",
    "records": "publishing.tabular",
    "to_dataframe": "publishing.tabular",
    "StepProbe": "measuring.probe",
    "SCHEMA_VERSION": "measuring.results",
    "load": "measuring.results",
    "load_dir": "measuring.results",
    "summarize": "analysing.summary",
    "summarize_all": "analysing.summary",
    "WORKLOADS": "measuring.workloads",
    "get_workload": "measuring.workloads",
    "init_params": "measuring.workloads",
    "GCBudgetWarning": "budget.baseline",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'gcbench' has no attribute {name!r}")
    module = f"{__name__}.{_LAZY[name]}"
    __import__(module)  # not importlib's import_module: importlib and warnings, 140 objects in a measured heap
    value = getattr(_sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "SCHEMA_VERSION",
    "WORKLOADS",
    "Cell",
    "GCBudgetWarning",
    "Measurement",
    "StepProbe",
    "Suite",
    "UsageError",
    "__version__",
    "get_workload",
    "init_params",
    "load",
    "load_dir",
    "load_suite",
    "measure",
    "records",
    "summarize",
    "summarize_all",
    "to_dataframe",
]
