"""The constraints every stored document shares: the patterns of names that reach reports
(backends, workloads, policies, cells must be plain names: they become headings, file names
and links) and the executors. Each document is described once, by its records, and checked
by `records.from_json` (result.schema.json is generated from them)."""

from __future__ import annotations

from typing import Literal, get_args

# How a run may be executed: this process, SLURM job arrays, or submitit's local executor.
Executor = Literal["local", "slurm", "submitit-local"]
EXECUTORS: tuple[str, ...] = get_args(Executor)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
POLICY = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
CELL_ID = r"^[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}$"  # a file name with room for its temporaries (255 bytes)
