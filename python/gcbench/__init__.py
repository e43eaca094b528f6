"""gcbench: how much of a training step goes to the garbage collector, across frameworks."""

from .config import Cell, Suite, load_suite
from .errors import UsageError
from .probe import StepProbe
from .results import SCHEMA_VERSION, load, load_dir
from .workloads import WORKLOADS, get_workload, init_params

__version__ = "0.1.0"
__all__ = ["Cell", "Suite", "load_suite", "UsageError", "StepProbe", "SCHEMA_VERSION",
           "load", "load_dir", "WORKLOADS", "get_workload", "init_params"]
