"""What a flow is asked to do, and what it answers, as typed records: the commands build the
options from their command lines (`commands/_common.py`), a library caller or a test builds
them directly; no flow reads an argparse namespace. `RunOptions` is how any run goes; the
others add what one command alone asks for. `FlowOutcome` is what a flow ends with.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.schemas import Executor
from ..measuring import diagnostic_run

if TYPE_CHECKING:
    from ..analysing.gitbisect import CommitTable, Culprit


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run goes, whichever command asked for it."""

    argv: tuple[str, ...] = ()  # the command line after `gcbench`, recorded in suite.json and in each result
    out: str | None = None  # the results folder (None: a new one under results/)
    data: str | None = None  # the MNIST folder (None: $GCBENCH_MNIST, then the cache, else synthetic)
    resume: bool = False  # keep the ok results with the same settings, run the rest
    force: bool = False  # replace the results already there
    executor: Executor = "local"  # this process, SLURM job arrays or submitit's local executor
    detach: bool = False  # with a scheduler: return once the jobs are submitted
    progress: bool = True  # progress bars (on a terminal)
    fork_workers: bool = True  # repeats forked from a server per backend (False: a fresh interpreter each)
    rebuild_envs: bool = False  # rebuild the environments instead of reusing them
    slurm: dict[str, Any] = dataclasses.field(default_factory=dict)  # the --slurm-* values given

    @property
    def command(self) -> list[str]:
        """The command as a user typed it."""
        return ["gcbench", *self.argv]

    def replace(self, **changes) -> RunOptions:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class ExplainOptions:
    """`gcbench explain`: the diagnostic run's tracing."""

    run: RunOptions
    sites: bool = True  # trace allocation sites (tracemalloc)
    site_steps: int = diagnostic_run.SITE_STEPS  # over the last this many steps
    sample_rate: float = diagnostic_run.JULIA_SAMPLE_RATE  # Julia: the share of allocations Profile.Allocs samples


@dataclasses.dataclass(frozen=True)
class ReproduceOptions:
    """`gcbench reproduce`: the cases' sizes where the command line gives them."""

    run: RunOptions
    steps: int | None = None
    repeats: int | None = None
    batch_size: int | None = None  # the equinox-spikes ViT's batch (None: calibrated)
    timeout: float | None = None


@dataclasses.dataclass(frozen=True)
class ReleaseBisectOptions:
    """`gcbench bisect --package P --versions ...` (or `--results FOLDER`, read only)."""

    run: RunOptions
    package: str
    cell: str  # BACKEND/WORKLOAD/POLICY as given
    factor: float = 1.5
    results: str | None = None


@dataclasses.dataclass(frozen=True)
class CommitBisectOptions:
    """`gcbench bisect --git REPO --good REF --bad REF`."""

    run: RunOptions
    repo: str
    good: str
    bad: str
    cell: str  # BACKEND/WORKLOAD/POLICY as given
    package: str | None = None  # the package the repository must build, where given


class FlowOutcome(NamedTuple):
    """What a flow ended with: its document (a bisect's table, an explanation, the
    reproductions; None when it was interrupted), its results folder and the command's exit
    code."""

    document: Any  # a bisect's table or the reproductions (dicts), an explanation (a record)
    folder: pathlib.Path
    code: int


class ScriptRunsOutcome(NamedTuple):
    """A user's script run as repeats: each side's results folder (base then head, or the
    one side), and the runs made."""

    folders: list[pathlib.Path]
    runs: int


class CommitBisectOutcome(NamedTuple):
    """A commit bisect's table, the first bad commit's message and files (None where none
    was found), and its folder."""

    table: CommitTable
    culprit: Culprit | None
    folder: pathlib.Path
