"""A cell: one measurement's settings (a backend training a workload under a GC policy, in
an environment, once), and the names people read for it. The worker runs a cell; plans
(`running.config`) are lists of them; result documents record them."""

from __future__ import annotations

import dataclasses

from .workloads import BATCH_SIZE


def cell_label(backend: str, workload: str, policy: str, repeat: int = 0, env: str | None = None,
               of: int | None = None) -> str:
    """How a repeat of a cell is named to people: backend/workload/policy, its repeat
    counted from 1 (`r2`, as reports number them; `r2/3` with the cell's number of repeats
    `of`), and the environment's name in brackets when it runs in one."""
    return f"{backend}/{workload}/{policy} r{repeat + 1}" + (f"/{of}" if of else "") + (f" [{env}]" if env else "")


@dataclasses.dataclass(frozen=True)
class Cell:
    """One measurement: a backend training a workload under a GC policy, once (one repeat)."""

    backend: str
    workload: str
    policy: str
    repeat: int
    networks: int
    params_per_network: int
    steps: int
    warmup: int
    seed: int
    loss_every: int
    data_path: str | None = None
    julia_threads: int = 1
    env: str | None = None  # an environment's spec (envspec.EnvSpec.text); None: gcbench's own interpreter
    batch_size: int = BATCH_SIZE
    bookkeeping: str = "none"  # "metrics": the loop keeps a dict per network per step, as many loops do
    alloc_blocks: bool = False  # also count allocated memory blocks per step (costly: walks the heap)

    @property
    def env_spec(self):
        from .envspec import parse  # packaging loads only for cells that name an environment

        return None if self.env is None else parse(self.env)

    @property
    def id(self) -> str:
        """The cell's file name (without .json): unique within a plan."""
        base = f"{self.backend}__{self.workload}__{self.policy.replace(':', '-')}__r{self.repeat}"
        return base if self.env is None else f"{base}__{self.env_spec.slug}"

    @property
    def label(self) -> str:
        return self.label_of()

    def label_of(self, repeats: int | None = None) -> str:
        """The label, with the cell's number of repeats where given (`r2/3`)."""
        return cell_label(self.backend, self.workload, self.policy, self.repeat,
                          None if self.env is None else self.env_spec.name, repeats)

    def settings(self) -> dict:
        """What must be equal for two results to answer the same question (for --resume)."""
        out = self.to_json()
        out.pop("data_path")
        return out

    def to_json(self) -> dict:
        return dataclasses.asdict(self)
