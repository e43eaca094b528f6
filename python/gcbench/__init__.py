"""gcbench: how much of a training step goes to the garbage collector, across frameworks.

The public API:

- `measure(name)`: the probe around your own training loop (see `gcbench.measure`);
- `load(path)`, `load_dir(folder)`: read and validate result documents;
- `summarize(docs)`: one cell's repeats combined, with intervals;
- `records(folder)`, `to_dataframe(folder)`: results as rows (pandas optional);
- `Suite`, `load_suite`, `Cell`: what `gcbench run` runs; `StepProbe`: the probe itself.
"""

from .version import __version__  # noqa: E402
from .config import Cell, Suite, load_suite  # noqa: E402
from .errors import UsageError  # noqa: E402
from .export import records, to_dataframe  # noqa: E402
from .measure import Measurement, measure  # noqa: E402
from .probe import StepProbe  # noqa: E402
from .results import SCHEMA_VERSION, load, load_dir  # noqa: E402
from .summary import summarize, summarize_all  # noqa: E402
from .workloads import WORKLOADS, get_workload, init_params  # noqa: E402

__all__ = ["Cell", "Suite", "load_suite", "UsageError", "records", "to_dataframe", "Measurement", "measure",
           "StepProbe", "SCHEMA_VERSION", "load", "load_dir", "summarize", "summarize_all", "WORKLOADS",
           "get_workload", "init_params", "__version__"]
