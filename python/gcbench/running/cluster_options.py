"""What a scheduler needs to hear (`--executor`, `--slurm-*`, a suite's `[slurm]` table),
checked before anything is submitted. `cluster` does the submitting; this module imports
nothing of it, so that suites are read without submitit."""

from __future__ import annotations

import dataclasses
import re

from ..core.errors import UsageError

_SBATCH_LINE = re.compile(r"^(?:#SBATCH\s+)?--([a-z][a-z0-9-]*)(?:[= ](.+))?$")
# what gcbench sets itself: a line that sets one of these would undo what the results rely on
_OWN_FLAGS = {"array", "output", "error", "exclusive", "open-mode", "signal", "wckey", "job-name"}


def check_folder(path) -> None:
    """Refuse a results folder that a scheduler's files cannot name safely: a control
    character (a newline would end an `#SBATCH` line and start a shell one) or `%` (which
    submitit and SLURM replace by job and task ids, sending their files elsewhere)."""
    text = str(path)
    bad = next((ch for ch in text if ord(ch) < 32 or ord(ch) == 127 or ch == "%"), None)
    if bad is not None:
        raise UsageError(f"--out {text!r}: a folder for a scheduler's jobs cannot hold {bad!r} (it would reach their "
                         "batch scripts); choose a plain folder name")


@dataclasses.dataclass
class SlurmOptions:
    """What a cluster needs to hear: from the suite file's `[slurm]` table, then the command line."""

    partition: str | None = None
    time: int = 120  # minutes a job may run (all its cells)
    gpus: int | None = None  # GPUs per job, as --gres=gpu:N
    account: str | None = None
    parallelism: int = 16  # jobs of one array running at once
    sbatch: list[str] = dataclasses.field(default_factory=list)  # extra "#SBATCH --x=y" lines

    KEYS = ("partition", "time", "gpus", "account", "parallelism", "sbatch")

    @classmethod
    def from_table(cls, table: dict) -> SlurmOptions:
        if not isinstance(table, dict):
            raise UsageError("slurm must be a table ([slurm] with partition, time, gpus, account, parallelism, sbatch)")
        unknown = set(table) - set(cls.KEYS)
        if unknown:
            raise UsageError(f"[slurm]: unknown keys {', '.join(sorted(unknown))}; valid keys: {', '.join(cls.KEYS)}")
        return cls(**table).validate()

    def override(self, given: dict) -> SlurmOptions:
        """These options with the command line's values on top (`given`: key to value, as
        `given_on` reads them; a None value is not given)."""
        unknown = set(given) - set(self.KEYS)
        if unknown:
            raise ValueError(f"not slurm options: {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **{k: v for k, v in given.items() if v is not None}).validate()

    def _check_names(self) -> None:
        """The partition and the account: names SLURM takes, where given."""
        for key in ("partition", "account"):
            value = getattr(self, key)
            if value is not None and (
                not isinstance(value, str) or not re.fullmatch(r"[\w.,-]{1,200}", value, re.ASCII)
            ):
                raise UsageError(f"slurm {key} must be a name (letters, digits, '_', '.', ',' or '-'), got {value!r}")

    def _check_ranges(self) -> None:
        """The time limit, GPUs (where given) and parallelism: integers in their ranges."""
        for key, low, high in (("time", 1, 525_600), ("gpus", 0, 64), ("parallelism", 1, 100_000)):
            value = getattr(self, key)
            if value is None and key == "gpus":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UsageError(f"slurm {key} must be an integer from {low} to {high:,}, got {value!r}")

    def validate(self) -> SlurmOptions:
        self._check_names()
        self._check_ranges()
        if not isinstance(self.sbatch, list) or not all(isinstance(s, str) for s in self.sbatch):
            raise UsageError('slurm sbatch must be a list of lines like "--constraint=h100"')
        self.additional()  # refuse a bad line now, not at submission
        return self

    def additional(self) -> dict:
        """The extra `#SBATCH` lines as submitit's `slurm_additional_parameters`."""
        out = {}
        for line in self.sbatch:
            m = _SBATCH_LINE.match(line.strip())
            if not m:
                raise UsageError(f"slurm sbatch line {line!r} is not an sbatch option like \"--constraint=h100\"")
            name, value = m.group(1), m.group(2)
            if name in _OWN_FLAGS:
                raise UsageError(f"slurm sbatch line {line!r}: gcbench sets --{name} itself (each round of repeats is "
                                 "one array of exclusive jobs)")
            out[name.replace("-", "_")] = True if value is None else value.strip()
        return out

    def parameters(self, name: str) -> dict:
        """submitit's `update_parameters` for one array: one node of its own per job."""
        p = {"name": name, "timeout_min": self.time, "nodes": 1, "tasks_per_node": 1,
             "slurm_exclusive": True, "slurm_array_parallelism": self.parallelism}
        if self.partition:
            p["slurm_partition"] = self.partition
        if self.account:
            p["slurm_account"] = self.account
        if self.gpus:
            p["slurm_gres"] = f"gpu:{self.gpus}"
        extra = self.additional()
        if extra:
            p["slurm_additional_parameters"] = extra
        return p

    def describe(self) -> str:
        parts = [f"partition {self.partition}" if self.partition else "the default partition",
                 f"{self.time} min per job"]
        if self.gpus:
            parts.append(f"{self.gpus} GPU{'s' if self.gpus > 1 else ''} per job")
        if self.account:
            parts.append(f"account {self.account}")
        parts.append(f"at most {self.parallelism} jobs of an array at once")
        return ", ".join(parts + self.sbatch)
