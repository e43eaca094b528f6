"""The Julia backends for real: these run only where Julia works through juliacall, and
are skipped (with the reason) everywhere else, as on gcbench's own CI machines. The
workflow in .github/workflows/julia.yml runs them on a runner that has Julia."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_cli
from gcbench.measuring import results
from gcbench.measuring.backends import julia_bridge
from gcbench.measuring.workloads import WORKLOADS
from once import once_per_session

ok, why = julia_bridge.status()
pytestmark = [pytest.mark.julia, pytest.mark.skipif(not ok, reason=f"Julia is not available here: {why}")]


@pytest.fixture(scope="session")
def julia_results(tmp_path_factory):
    """One run of the 8 cells (cold compiles included) for the whole session, also under
    xdist: they never run twice at once on one machine (tests/once.py)."""
    def run(out):
        proc = run_cli("run", "--backends", "flux,lux,simplechains,jax", "--workloads", "mlp,lenet5",
                       "--gc", "default", "--networks", "2", "--steps", "30", "--warmup", "2", "--repeats", "1",
                       "--batch-size", "64", "--out", str(out), "--no-progress", timeout=3600)
        assert proc.returncode == 0, proc.stderr

    out = once_per_session(tmp_path_factory, "gcbench-julia-run", run)
    return {(d.backend, d.workload): d for d in results.load_dir(out)}


def measured(doc):
    """`doc`, once it is known to hold measurements: a refused or failed cell names its reason
    here instead of a KeyError on a vector it does not have."""
    assert doc.status == "ok", f"{doc.cell}: {doc.status}: {doc.reason}"
    return doc


@pytest.mark.parametrize("backend", ["flux", "lux", "simplechains"])
@pytest.mark.parametrize("workload", ["mlp", "lenet5"])
def test_julia_backend_trains_and_counts_parameters(julia_results, backend, workload):
    doc = measured(julia_results[(backend, workload)])
    assert doc.params_counted == WORKLOADS[workload].params_per_network  # 4,992 and 44,426
    assert len(doc.wall_ns) == 30
    assert len(doc.warmup["wall_ns"]) == 2
    assert doc.batch_size == 64
    assert doc.loss["value"][-1] < doc.loss["value"][0]
    assert doc.metadata["julia_threads"] >= 1
    assert doc.metadata["julia"]
    assert doc.warmup["build_ns"] > 1000
    assert np.all(np.asarray(doc.gc_full) <= np.asarray(doc.gc_collections).sum(axis=1))


@pytest.mark.parametrize("backend", ["flux", "lux", "simplechains"])
@pytest.mark.parametrize("workload", ["mlp", "lenet5"])
def test_julia_backends_start_from_the_same_weights_as_jax(julia_results, backend, workload):
    # Same initial weights and batches: the loss after the warm-up matches the jax backend's
    # (for SimpleChains this also says that its summed loss was scaled to a batch mean).
    jax_loss = measured(julia_results[("jax", workload)]).warmup["loss"]
    assert measured(julia_results[(backend, workload)]).warmup["loss"] == pytest.approx(jax_loss, rel=2e-3)


def test_one_framework_per_process(julia_results):
    lux = measured(julia_results[("lux", "mlp")]).metadata
    assert "SimpleChains" not in lux["julia_packages"]
    assert "Flux" not in lux["julia_packages"]
    assert not any("LoopVectorization" in e for e in lux["julia_extensions"])


def test_manual_policy_collects_every_k_steps(tmp_path):
    # disable and manual:K need 2 warm-up steps (the first compiles; julia/measure.jl refuses fewer)
    proc = run_cli("run", "--backends", "flux", "--workloads", "mlp", "--gc", "manual:5,disable",
                   "--networks", "2", "--steps", "20", "--warmup", "2", "--repeats", "1", "--out", str(tmp_path),
                   "--no-progress", timeout=3600)
    assert proc.returncode == 0, proc.stderr
    docs = {d.gc_policy: measured(d) for d in results.load_dir(tmp_path)}
    assert np.flatnonzero(docs["manual:5"].gc_full).tolist() == [4, 9, 14, 19]
    assert sum(docs["disable"].gc_full) == 0


def test_simplechains_allocations_do_not_grow_with_threads(tmp_path):
    """Item 3: each network's own working memory, so two threads allocate about what one does."""
    per_thread = {}
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        proc = run_cli("run", "--backends", "simplechains", "--workloads", "lenet5", "--networks", "4",
                       "--steps", "20", "--warmup", "2", "--repeats", "1", "--julia-threads", str(threads),
                       "--out", str(out), "--no-progress", timeout=3600)
        assert proc.returncode == 0, proc.stderr
        per_thread[threads] = float(np.median(measured(results.load_dir(out)[0]).alloc_bytes))
    assert per_thread[2] <= per_thread[1] + 64 * 1024  # task bookkeeping, not megabytes of scratch
