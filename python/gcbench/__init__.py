"""gcbench: how much of a training step goes to the garbage collector, across frameworks.

The public API:

- `measure(name)`: the probe around your own training loop (see `gcbench.measure`);
- `load(path)`, `load_dir(folder)`: read and validate result documents;
- `summarize(docs)`: one cell's repeats combined, with intervals;
- `records(folder)`, `to_dataframe(folder)`: results as rows (pandas optional);
- `Suite`, `load_suite`, `Cell`: what `gcbench run` runs; `StepProbe`: the probe itself.
"""

import importlib

from .version import __version__
from .errors import UsageError

# Everything else loads when first used (numpy, jsonschema and scipy take most of a second):
# `import gcbench` and the command line start at once, and Ctrl-C in their first second finds
# gcbench's own handler. (`measure` lives in `user_loop`: a submodule named `measure` would
# take the function's place in the package once imported.)
_LAZY = {"measure": "user_loop", "Measurement": "user_loop", "Cell": "config", "Suite": "config", "load_suite": "config", "records": "export",
         "to_dataframe": "export", "StepProbe": "probe", "SCHEMA_VERSION": "results", "load": "results",
         "load_dir": "results", "summarize": "summary", "summarize_all": "summary", "WORKLOADS": "workloads",
         "get_workload": "workloads", "init_params": "workloads"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'gcbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["Cell", "Suite", "load_suite", "UsageError", "records", "to_dataframe", "Measurement", "measure",
           "StepProbe", "SCHEMA_VERSION", "load", "load_dir", "summarize", "summarize_all", "WORKLOADS",
           "get_workload", "init_params", "__version__"]
