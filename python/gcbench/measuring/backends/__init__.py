"""The backend registry: which frameworks gcbench can train, and whether they are here.
A backend is a `BackendInfo` (cheap: nothing heavy is imported to list it) and a module
with `build(workload, params, data) -> Trainer` (the `Trainer` protocol below).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from typing import Any, Protocol

from ...core.errors import UsageError, did_you_mean


class Trainer(Protocol):
    """What a backend's `build(workload, params, data)` returns: `len(params)` networks of
    `workload`, each starting from the canonical weights `params` (`workloads.init_params`)."""

    def step(self, idx) -> None:
        """One step of the step contract (DESIGN.md): take the batch `idx`, update every
        network once, return when every result is ready."""

    def loss(self) -> float:
        """The mean loss over the networks at the last step (called at sampled steps only,
        outside the timing)."""

    def network_losses(self) -> list[float]:
        """Each network's loss at the last step as Python floats (called inside the timed
        step when the loop keeps metrics, `--bookkeeping metrics`)."""

    def trace_counts(self) -> dict[str, int]:
        """How many times each jitted function was traced (the no-recompilation checks)."""

    def param_count(self) -> int:
        """Parameters of one network, counted the framework's own way."""

    def metadata(self) -> dict[str, Any]:
        """Facts for the result's metadata (devices, thread counts)."""


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    name: str
    language: str  # "python" or "julia"
    description: str
    module: str  # implementation, relative to this package
    requires: tuple[str, ...]  # importable modules it needs
    workloads: tuple[str, ...]
    policies: tuple[str, ...] = ("default", "freeze", "disable", "manual")
    options: tuple[tuple[str, str], ...] = ()  # keyword arguments of the module's build()
    # What the tests hold a Python backend to, declared here so that a new one is checked
    # without a test edited (docs/extending.md, "A backend"):
    # its update rule: "adam" (optax.adam at the learning rate `_jaxnn.optimizer` gives)
    # reproduces `jax`'s losses step for step, to 1e-4; a deliberate variant names another
    # and need only learn
    optimizer: str = "adam"
    # why its step cannot donate its state's buffers to the update; "": it donates (a step
    # that keeps them doubles the state's memory), and tests/test_backends.py checks it
    no_donation: str = ""
    # promotions to the oldest generation a step may make on `vit` at batch 8, under a GC
    # budget (tests/budget_cases/test_backend_steps.py): what it promoted with the versions
    # that file names, and about a quarter more room
    vit_promotions: int = 50

    def availability(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, one-line reason)."""
        if self.language == "julia":
            from .julia_bridge import status

            return status()
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"not installed: {', '.join(missing)} (pip install 'gcbench[jax]')"
        return True, ""

    def supports(self, workload: str) -> bool:
        return workload in self.workloads

    def load(self):
        return importlib.import_module(f"{__name__}.{self.module}")

    def build(self, workload, params, data) -> Trainer:
        """A trainer of `len(params)` networks of `workload`."""
        return self.load().build(workload, params, data, **dict(self.options))


_JAX = ("jax", "optax")
_EQX = (*_JAX, "equinox")
_NNX = (*_JAX, "flax")
_ALL = ("mlp", "lenet5", "vit")

BACKENDS: dict[str, BackendInfo] = {
    b.name: b
    for b in [
        BackendInfo("jax", "python", "plain pytrees, jax.jit + jax.value_and_grad + optax",
                    "jax_loop", _JAX, _ALL, vit_promotions=5),
        BackendInfo("jax-vmap", "python", "all networks stacked, one jitted vmapped step (the floor)",
                    "jax_vmap", _JAX, ("mlp", "lenet5")),
        BackendInfo("equinox-filter", "python", "eqx.Module, eqx.filter_jit + eqx.filter_value_and_grad",
                    "equinox_filter", _EQX, _ALL, vit_promotions=1450),
        BackendInfo("equinox-partition", "python", "eqx.partition once, jax.jit over arrays, static closed over",
                    "equinox_partition", _EQX, _ALL, vit_promotions=220),
        BackendInfo("nnx", "python", "Flax NNX, nnx.jit + nnx.Optimizer",
                    "nnx_jit", _NNX, _ALL, vit_promotions=5700,
                    no_donation="nnx.jit updates the Module's variables in place; nnx-split is the idiom that donates"),
        BackendInfo("nnx-split", "python", "Flax NNX, nnx.split once, jax.jit over (graphdef, state)",
                    "nnx_split", _NNX, _ALL, vit_promotions=2250),
        *(BackendInfo(name, "julia", desc, "julia_bridge", ("juliacall",), ("mlp", "lenet5"),
                      policies=("default", "disable", "manual"), options=(("framework", name),))
          for name, desc in [
              ("flux", "Flux: Flux.withgradient + Flux.update!, Optimisers.Adam, per network"),
              ("lux", "Lux: Training.TrainState + single_train_step! on Zygote, per network"),
              ("simplechains", "SimpleChains: static chains, valgrad! + in-place ADAM, per network"),
          ]),
    ]
}


def get_backend(name: str) -> BackendInfo:
    try:
        return BACKENDS[name]
    except KeyError:
        raise UsageError(f"unknown backend {name!r}{did_you_mean(name, BACKENDS)}; valid backends: "
                         f"{', '.join(BACKENDS)}") from None
