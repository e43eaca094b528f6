"""A results folder's plan (suite.json): the cells of its latest run, in order, and every run
into the folder, each with how it ended. `gcbench run` writes it first and finishes it last;
`status` counts against it and the report orders and names the cells by it."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Annotated, ClassVar

from msgspec import Meta

from ..core import files, metadata, records
from ..core.errors import UsageError
from ..core.schemas import CELL_ID

FILE = "suite.json"
FORMAT = "gcbench-suite"
SCHEMA_VERSION = 2

CellId = Annotated[str, Meta(pattern=CELL_ID)]


@dataclasses.dataclass(frozen=True)
class PlanRun:
    """One run into the folder: its command, when it started and finished, and how it ended."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("started", "mode", "cells", "state", "finished")

    command: list[str] = dataclasses.field(default_factory=list)
    started: str | None = None
    mode: str | None = None  # new, resume or force
    cells: int | None = None
    state: str | None = None
    finished: str | None = None


@dataclasses.dataclass
class Plan:
    """suite.json. `state` is the latest run's: running, finished, failed, interrupted or
    submitted (its jobs run on); older plans lack what they did not record."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("suite", "repeats", "started", "state")

    format: str = FORMAT
    schema_version: int = SCHEMA_VERSION
    suite: str | None = None
    command: list[str] = dataclasses.field(default_factory=list)
    cells: list[CellId] = dataclasses.field(default_factory=list)
    labels: list[str] = dataclasses.field(default_factory=list)  # a plan of an older gcbench may hold fewer
    envs: list[str] = dataclasses.field(default_factory=list)
    repeats: int | None = None
    started: str | None = None
    state: str | None = None
    runs: list[PlanRun] = dataclasses.field(default_factory=list)

    def history(self) -> list[PlanRun]:
        """Every run into the folder (a plan written before runs were kept: its one command)."""
        return self.runs or ([PlanRun(self.command, self.started)] if self.command else [])

    def label_of(self) -> dict[str, str]:
        """Each planned cell's label, its id where the plan holds no label for it."""
        return {c: self.labels[i] if i < len(self.labels) else c for i, c in enumerate(self.cells)}


def write(out_dir: pathlib.Path, plan: Plan) -> Plan:
    # a link named suite.json is replaced, never written through: a run writes inside its folder only
    files.write_bytes(out_dir / FILE, files.json_bytes(records.to_json(plan)), follow_links=False)
    return plan


def finish(out_dir: pathlib.Path, plan: Plan, state: str) -> Plan:
    """Write `plan` back in `state`, its latest run ended now in that state."""
    runs = plan.runs
    if runs:
        runs = [*runs[:-1], dataclasses.replace(runs[-1], state=state, finished=metadata.timestamp())]
    return write(out_dir, dataclasses.replace(plan, state=state, runs=runs))


def read(out_dir: pathlib.Path) -> Plan | None:
    """A results folder's plan, or None when it has none; a one-line error when malformed."""
    path = out_dir / FILE
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link: a results folder's plan is its own file, which gcbench writes "
                         "(followed, it would read and write another folder's): remove the link")
    if not path.is_file():
        return None
    return records.from_json(files.read_json(path, FILE), Plan, str(path))
