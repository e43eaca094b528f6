"""The Julia backends for real: these run only where Julia works through juliacall, and
are skipped (with the reason) everywhere else, as on gcbench's own CI machines."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench import results
from gcbench.backends import julia_bridge
from gcbench.workloads import WORKLOADS
from conftest import run_cli

ok, why = julia_bridge.status()
pytestmark = [pytest.mark.julia, pytest.mark.skipif(not ok, reason=f"Julia is not available here: {why}")]


@pytest.fixture(scope="module")
def julia_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("julia")
    proc = run_cli("run", "--backends", "flux,lux,simplechains,jax", "--workloads", "mlp,lenet5",
                   "--gc", "default", "--networks", "2", "--steps", "30", "--warmup", "2",
                   "--out", str(out), "--no-progress", timeout=3600)
    assert proc.returncode == 0, proc.stderr
    return {(d["backend"], d["workload"]): d for d in results.load_dir(out)}


@pytest.mark.parametrize("backend", ["flux", "lux", "simplechains"])
@pytest.mark.parametrize("workload", ["mlp", "lenet5"])
def test_julia_backend_trains_and_counts_parameters(julia_results, backend, workload):
    doc = julia_results[(backend, workload)]
    assert doc["status"] == "ok", doc["reason"]
    assert doc["params_counted"] == WORKLOADS[workload].params_per_network  # 4,992 and 44,426
    assert len(doc["wall_ns"]) == 30 and len(doc["warmup"]["wall_ns"]) == 2
    assert doc["loss"]["value"][-1] < doc["loss"]["value"][0]
    assert doc["metadata"]["julia_threads"] >= 1 and doc["metadata"]["julia"]
    assert set(doc["metadata"]["julia_packages"]) >= {"Flux", "Lux", "SimpleChains", "Zygote"}
    assert np.all(np.asarray(doc["gc_full"]) <= np.asarray(doc["gc_collections"]).sum(axis=1))


@pytest.mark.parametrize("backend", ["flux", "lux"])
@pytest.mark.parametrize("workload", ["mlp", "lenet5"])
def test_flux_and_lux_start_from_the_same_weights_as_jax(julia_results, backend, workload):
    # Same initial weights and first batch: the first sampled loss (after one timed step
    # following the same warm-up) matches the jax backend's closely.
    jax_loss = julia_results[("jax", workload)]["warmup"]["loss"]
    assert julia_results[(backend, workload)]["warmup"]["loss"] == pytest.approx(jax_loss, rel=1e-3)


def test_manual_policy_collects_every_k_steps(tmp_path):
    proc = run_cli("run", "--backends", "flux", "--workloads", "mlp", "--gc", "manual:5,disable",
                   "--networks", "2", "--steps", "20", "--warmup", "1", "--out", str(tmp_path), "--no-progress",
                   timeout=3600)
    assert proc.returncode == 0, proc.stderr
    docs = {d["gc_policy"]: d for d in results.load_dir(tmp_path)}
    assert np.flatnonzero(docs["manual:5"]["gc_full"]).tolist() == [4, 9, 14, 19]
    assert sum(docs["disable"]["gc_full"]) == 0
