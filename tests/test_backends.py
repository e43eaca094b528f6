"""Every JAX-family backend trains the same thing: equal parameter counts, equal losses
from equal initial weights and batches, falling loss, and one compilation per function."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

from gcbench.measuring import mnist as datamod
from gcbench.measuring.backends import BACKENDS
from gcbench.measuring.workloads import WORKLOADS, init_params
from gcbench.running.config import Suite
from gcbench.running.runner import RunSettings, run_cells

pytestmark = pytest.mark.usefixtures("exact_float32")  # TF32 on GPUs would move the vit losses by 1e-4

PYTHON_BACKENDS = [b for b in BACKENDS.values() if b.language == "python"]
STEPS = 20
NETWORKS = {"mlp": 3, "lenet5": 2, "vit": 1}
# The batch sizes every backend is checked at: the default and a second one for mlp and lenet5;
# vit at 16 only (it compiles slowly: about 15 s per shape here, and each shape compiles twice).
BATCHES = {"mlp": (128, 32), "lenet5": (128, 32), "vit": (16,)}


def _train(backend, workload_name, dataset, steps=STEPS, batch=None):
    workload = WORKLOADS[workload_name]
    trainer = backend.build(workload, init_params(workload, 0, NETWORKS[workload_name]), dataset)
    schedule = datamod.batch_schedule(len(dataset), steps, seed=0, batch=batch or BATCHES[workload_name][0])
    losses = []
    for i in range(steps):
        trainer.step(schedule[i])
        losses.append(trainer.loss())
    return trainer, losses


@pytest.fixture(scope="module")
def dataset():
    return datamod.synthetic(2000, seed=0)


@pytest.fixture(scope="module")
def reference(dataset):
    """The `jax` backend's trainer and losses, per workload and batch size, trained once (the
    `jax` case is checked on this same training)."""
    cache = {}

    def get(workload_name, batch, steps):
        if (workload_name, batch, steps) not in cache:
            cache[workload_name, batch, steps] = _train(BACKENDS["jax"], workload_name, dataset, steps, batch)
        return cache[workload_name, batch, steps]

    return get


# the ViT's and LeNet-5's equivalence run in the end-to-end tier (each compiles its model
# twice: 4-28 s a case); the quick tier checks every backend on the MLP
CASES = [pytest.param(b.name, w, marks=[pytest.mark.e2e] if w in ("vit", "lenet5") else [])
         for b in PYTHON_BACKENDS for w in ("mlp", "lenet5", "vit") if b.supports(w)]


@pytest.mark.slow
@pytest.mark.parametrize(("backend_name", "workload_name"), CASES)
def test_backend_is_equivalent_to_jax(backend_name, workload_name, dataset, reference):
    backend = BACKENDS[backend_name]
    if not backend.availability()[0]:
        pytest.skip(backend.availability()[1])
    batch, *second = BATCHES[workload_name]
    ref_trainer, ref_losses = reference(workload_name, batch, STEPS)
    trainer, losses = (ref_trainer, ref_losses) if backend_name == "jax" else \
        _train(backend, workload_name, dataset, STEPS, batch)
    assert trainer.param_count() == WORKLOADS[workload_name].params_per_network
    assert losses[-1] < losses[0] - 0.02  # it learns
    # Compiled once, in the first step, and never again.
    assert trainer.trace_counts() == {"update": 1}
    if backend.optimizer != "adam":  # a deliberate variant (BackendInfo.optimizer): it learns, its own way
        return
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for other in second:  # at a second batch size the backends agree as well
        _, small = _train(backend, workload_name, dataset, 6, other)
        np.testing.assert_allclose(small, reference(workload_name, other, 6)[1], rtol=1e-4)


def test_every_backend_module_is_registered_and_supports_mlp_and_lenet5():
    """The registry is the list: every module of backends/ (but the shared `_` ones and the
    Julia bridge's) is a registered backend's, and each supports the two small workloads."""
    import pathlib

    folder = pathlib.Path(BACKENDS["jax"].load().__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if not p.stem.startswith(("_", "julia_"))}
    assert modules == {b.module for b in PYTHON_BACKENDS}
    for b in PYTHON_BACKENDS:
        assert b.supports("mlp")
        assert b.supports("lenet5")
        assert b.optimizer == "adam" or b.optimizer.isidentifier()
        assert b.vit_promotions >= 0


def test_missing_package_makes_backend_unavailable_not_a_crash(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "equinox" else real(name, *a))
    ok, reason = BACKENDS["equinox-filter"].availability()
    assert not ok
    assert "equinox" in reason
    assert BACKENDS["nnx"].availability() == (True, "")
    cells = Suite(backends=["equinox-filter", "jax-vmap"], workloads=["vit"], steps=2, repeats=1).validate().cells()
    docs = run_cells(cells, tmp_path, ["test"], 60, RunSettings(log=lambda *_: None, progress=False))
    by = {d.backend: d for d in docs}
    assert [d.status for d in docs] == ["unavailable", "unavailable"]
    assert "not installed: equinox" in by["equinox-filter"].reason
    assert "does not implement workload vit" in by["jax-vmap"].reason


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", [b.name for b in PYTHON_BACKENDS if not b.no_donation])
def test_state_buffers_are_donated(backend_name, dataset):
    """Every Python backend but those that say why not (`BackendInfo.no_donation`)."""
    import jax

    workload = WORKLOADS["mlp"]
    trainer = BACKENDS[backend_name].build(workload, init_params(workload, 0, 2), dataset)
    before = jax.tree.leaves(trainer.states[0] if hasattr(trainer, "states") else trainer.state)
    trainer.step(datamod.batch_schedule(len(dataset), 1, seed=0)[0])
    assert all(leaf.is_deleted() for leaf in before if isinstance(leaf, jax.Array))


def test_every_backend_has_a_row_on_the_backends_page():
    import pathlib

    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "backends.md").read_text()
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", page, re.M))
    assert set(BACKENDS) <= rows, set(BACKENDS) - rows
