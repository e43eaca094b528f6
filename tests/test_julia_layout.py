"""The Python side of the Julia bridge, checked against NumPy stand-ins for Julia.

`flux_reference_forward` computes a network the way Flux and Lux define their layers
(WHCN arrays, `Conv` as a true convolution, which flips the kernel, column-major
`flatten`, `Dense` as W * x .+ b); `simplechains_reference_forward` the way SimpleChains
does (src/conv.jl: C[j1, j2, o] = f(sum A[j1+k1, j2+k2, i] K[k1, k2, i, o] + b[o]), a
cross-correlation; src/dense.jl: an (out, in+1) matrix [W b]). Fed the converted weights,
each must give the logits that the JAX forward pass gives on the canonical weights.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from gcbench.measuring import gcpolicy, results
from gcbench.measuring import mnist as datamod
from gcbench.measuring.backends import julia_bridge, julia_layout
from gcbench.measuring.cell import Cell
from gcbench.measuring.workloads import LEARNING_RATE, WORKLOADS, init_params

pytestmark = pytest.mark.usefixtures("exact_float32")  # the JAX forward pass in float32 on every platform


class Reader:
    """Arrays of the given sizes, in order, from a flat column-major vector (as julia/layers.jl reads)."""

    def __init__(self, flat: np.ndarray):
        self.flat, self.offset = flat, 0

    def __call__(self, *dims) -> np.ndarray:
        n = int(np.prod(dims))
        a = self.flat[self.offset: self.offset + n].reshape(dims, order="F").astype(np.float64)
        self.offset += n
        return a


def flux_reference_forward(workload, flat: np.ndarray, x_whcn: np.ndarray) -> np.ndarray:
    h, take = x_whcn.astype(np.float64), Reader(flat)

    for row in julia_layout.layer_table(workload):
        kind, a, b, c, relu = row
        if kind == julia_layout.CONV:
            w, bias = take(a, a, b, c), take(c)
            k, (wd, ht, _, n) = a, h.shape
            out = np.zeros((wd - k + 1, ht - k + 1, c, n))
            for p in range(k):
                for q in range(k):  # true convolution: the kernel is flipped
                    out += np.einsum(
                        "whin,io->whon", h[p : p + wd - k + 1, q : q + ht - k + 1], w[k - 1 - p, k - 1 - q]
                    )
            out = np.maximum(out + bias[None, None, :, None], 0)
            h = out.reshape(out.shape[0] // 2, 2, out.shape[1] // 2, 2, c, n).max(axis=(1, 3))
        else:
            if h.ndim == 4:
                h = h.reshape(-1, h.shape[-1], order="F")
            w, bias = take(b, a), take(b)
            h = w @ h + bias[:, None]
            if relu:
                h = np.maximum(h, 0)
    assert take.offset == len(flat)
    return h  # (10, n)


def simplechains_reference_forward(workload, flat: np.ndarray, x_whcn: np.ndarray) -> np.ndarray:
    h, take = x_whcn.astype(np.float64), Reader(flat)

    for row in julia_layout.layer_table(workload):
        kind, a, b, c, relu = row
        if kind == julia_layout.CONV:
            k, cin, cout = a, b, c
            kern, bias = take(k, k, cin, cout), take(cout)
            wd, ht, _, n = h.shape
            out = np.zeros((wd - k + 1, ht - k + 1, cout, n))
            for p in range(k):
                for q in range(k):  # cross-correlation: K[k1, k2] meets A[j1 + k1, j2 + k2]
                    out += np.einsum("whin,io->whon", h[p: p + wd - k + 1, q: q + ht - k + 1], kern[p, q])
            out = np.maximum(out + bias[None, None, :, None], 0)
            h = out.reshape(out.shape[0] // 2, 2, out.shape[1] // 2, 2, cout, n).max(axis=(1, 3))
        else:
            if h.ndim == 4:
                h = h.reshape(-1, h.shape[-1], order="F")
            wb = take(b, a + 1)
            h = wb[:, :a] @ h + wb[:, a:]
            if relu:
                h = np.maximum(h, 0)
    assert take.offset == len(flat)
    return h


@pytest.mark.parametrize("layout", ["flux", "simplechains"])
@pytest.mark.parametrize("name", ["mlp", "lenet5"])
def test_converted_weights_reproduce_the_canonical_network(name, layout):
    jax = pytest.importorskip("jax")
    from gcbench.measuring.backends import _jaxnn

    workload = WORKLOADS[name]
    params = init_params(workload, seed=3, networks=1)[0]
    params = {k: v + np.random.default_rng(1).normal(0, 0.05, v.shape).astype(np.float32) for k, v in params.items()}
    x = datamod.synthetic(6, seed=2).images
    expected = np.asarray(_jaxnn.forward(workload, _jaxnn.to_device(params), jax.numpy.asarray(x))).T
    flat = julia_layout.LAYOUTS[layout](workload, params)
    assert flat.dtype == np.float32
    assert flat.size == workload.params_per_network
    forward = flux_reference_forward if layout == "flux" else simplechains_reference_forward
    got = forward(workload, flat, julia_layout.images_whcn(x))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_wrong_kernel_orientation_would_be_caught():
    """The reference really tells convolution from cross-correlation."""
    jax = pytest.importorskip("jax")
    from gcbench.measuring.backends import _jaxnn

    workload = WORKLOADS["lenet5"]
    params = init_params(workload, seed=3, networks=1)[0]
    x = datamod.synthetic(4, seed=2).images
    expected = np.asarray(_jaxnn.forward(workload, _jaxnn.to_device(params), jax.numpy.asarray(x))).T
    unflipped = dict(params, **{"layer0/w": params["layer0/w"][::-1, ::-1].copy()})
    got = flux_reference_forward(workload, julia_layout.flux_weights(workload, unflipped), julia_layout.images_whcn(x))
    assert not np.allclose(got, expected, rtol=1e-3, atol=1e-4)
    # SimpleChains cross-correlates: a flipped (Flux-style) kernel there is caught as well
    flipped = julia_layout.simplechains_weights(workload, unflipped)
    wrong = simplechains_reference_forward(workload, flipped, julia_layout.images_whcn(x))
    assert not np.allclose(wrong, expected, rtol=1e-3, atol=1e-4)


def test_layer_tables():
    assert julia_layout.layer_table(WORKLOADS["mlp"]).tolist() == [
        [2, 784, 6, 0, 1],
        [2, 6, 16, 0, 1],
        [2, 16, 10, 0, 0],
    ]
    assert julia_layout.layer_table(WORKLOADS["lenet5"]).tolist() == [
        [1, 5, 1, 6, 1], [1, 5, 6, 16, 1], [2, 256, 120, 0, 1], [2, 120, 84, 0, 1], [2, 84, 10, 0, 0]]
    with pytest.raises(ValueError, match="not vit"):
        julia_layout.layer_table(WORKLOADS["vit"])


def test_data_and_schedule_orientation():
    x = np.arange(2 * 28 * 28, dtype=np.float32).reshape(2, 28, 28, 1)
    w = julia_layout.images_whcn(x)
    assert w.shape == (28, 28, 1, 2)
    assert w.flags.f_contiguous
    assert w[5, 7, 0, 1] == x[1, 7, 5, 0]  # [w, h, c, n] = [n, h, w, c]
    s = np.arange(12, dtype=np.int32).reshape(3, 4)  # 3 steps of batch 4
    cols = julia_layout.schedule_columns(s)
    assert cols.shape == (4, 3)
    assert cols.dtype == np.int64
    assert cols[:, 1].tolist() == [4, 5, 6, 7]


def julia_like_result(steps=5, warmup=2):
    """What `GCBench.run!` returns, as NumPy arrays (juliacall hands over array views)."""
    return {
        "warmup_wall_ns": np.array([9_000_000, 2_000_000][:warmup]), "warmup_gc_ns": np.array([1_000_000, 0][:warmup]),
        "warmup_gc_full": np.array([1, 0][:warmup]), "warmup_gc_pauses": np.array([3, 0][:warmup]),
        "warmup_alloc_bytes": np.array([10_000, 500][:warmup]), "warmup_loss": 2.30,
        "wall_ns": np.array([1_000_000, 1_100_000, 150_000_000, 1_000_000, 900_000][:steps]),
        "gc_ns": np.array([0, 0, 149_000_000, 0, 0][:steps]),
        "gc_full": np.array([0, 0, 1, 0, 0][:steps]), "gc_pauses": np.array([0, 1, 1, 0, 0][:steps]),
        "alloc_bytes": np.array([1_300_000] * steps), "loss_steps": np.array([0, 4]),
        "loss_values": np.array([2.29, 2.20]), "bookkeeping_entries": 0, "julia_version": "1.11.2",
        "julia_threads": 1, "julia_threads_interactive": 0, "julia_maxthreadid": 1,
        "julia_optimize": 2, "julia_packages": {"Flux": "0.16.5", "Lux": "1.21.0"},
        "julia_extensions": [],
    }


def test_result_fields_fit_the_schema():
    fields = julia_layout.result_fields(julia_layout.JuliaRun.read(julia_like_result()))
    assert fields["gc_collections"] == [[0, 0], [1, 0], [0, 1], [0, 0], [0, 0]]
    assert fields["gc_full"] == [0, 0, 1, 0, 0]
    assert fields["warmup"]["gc_collections"] == [[2, 1], [0, 0]]
    cell = Cell("flux", "mlp", "default", 0, 3, 4992, 5, 2, 0, 4)
    doc = results.validate(results.new(cell, "ok", data={"kind": "synthetic"}, metadata={}, **fields))
    from gcbench.analysing import summary

    s = summary.summarize([doc]).stats
    assert s.spikes == 1
    assert s.spikes_at_full == 1
    assert s.alloc_bytes_per_step == 1_300_000
    assert s.full.count == 1
    assert s.language == "julia"


def test_a_loss_summed_over_the_batch_is_caught():
    """Item 2 of the source review: SimpleChains' valgrad! sums the loss over the batch;
    a result whose losses are far above ln(10) is refused by the conversion."""
    raw = julia_like_result()
    raw["warmup_loss"] = 128 * 2.30
    with pytest.raises(ValueError, match="summed over the batch"):
        julia_layout.result_fields(julia_layout.JuliaRun.read(raw))
    raw = julia_like_result()
    raw["gc_pauses"] = np.array([0, 0, 0, 0, 0])  # a full sweep counted without its pause
    assert julia_layout.result_fields(julia_layout.JuliaRun.read(raw))["gc_collections"][2] == [0, 1]  # never < 0


def test_what_julia_returns_is_read_key_by_key_and_a_missing_key_is_named():
    run = julia_layout.JuliaRun.read(julia_like_result())
    assert run.wall_ns.dtype == np.int64
    assert run.loss_values.dtype == np.float64
    assert run.facts()["julia_packages"] == {"Flux": "0.16.5", "Lux": "1.21.0"}
    raw = julia_like_result()
    del raw["gc_pauses"], raw["julia_threads"]
    with pytest.raises(ValueError, match=r"^GCBench\.run! returned no gc_pauses, julia_threads$"):
        julia_layout.JuliaRun.read(raw)
    tables = julia_layout.JuliaAllocTables.read({"samples": 3, "sample_rate": 0.5, "steps": 2, "by_site": {},
                                                 "by_type": {"Array{Float32}": np.array([3, 4096])},
                                                 "by_package": {"Flux": (3, 4096)}})
    assert tables.by_type == {"Array{Float32}": [3, 4096]}
    assert tables.by_package == {"Flux": [3, 4096]}


def test_measure_marshals_arguments_as_julia_expects(monkeypatch):
    calls = []

    def fake_call(name, *args):
        assert len(args) == julia_layout.JULIA_API[name]
        calls.append((name, args))
        return julia_like_result() if name == "run!" else f"<{name}>"

    monkeypatch.setattr(julia_bridge, "call", fake_call)
    workload = WORKLOADS["lenet5"]
    dataset = datamod.synthetic(300)
    schedule = datamod.batch_schedule(len(dataset), 7, seed=0, batch=32)
    params = init_params(workload, 0, 3)
    cell = Cell("simplechains", "lenet5", "manual:10", 0, 3, 44_426, 5, 2, 0, 4, batch_size=32, bookkeeping="metrics")
    trainer = julia_bridge.build(workload, params, dataset, framework="simplechains")
    fields = trainer.measure(schedule, cell, gcpolicy.parse("manual:10"))
    names = [c[0] for c in calls]
    assert names == ["load_framework", "setup_data", "build", "run!"]  # one framework, loaded first
    assert calls[0][1] == ("simplechains",)
    images, labels, sched = calls[1][1]
    assert images.shape == (28, 28, 1, 300)
    assert images.dtype == np.float32
    assert labels.dtype == np.int64
    assert labels.min() >= 0
    assert labels.max() <= 9
    assert sched.shape == (32, 7)
    assert (sched[:, 3] == schedule[3]).all()
    framework, table, weights, jdata, learning_rate = calls[2][1]
    assert framework == "simplechains"
    assert table.shape == (5, 5)
    assert jdata == "<setup_data>"
    assert learning_rate == LEARNING_RATE  # one learning rate, Python's, for every framework
    assert weights.shape == (44_426, 3)
    assert weights.dtype == np.float32
    assert weights.flags.f_contiguous
    np.testing.assert_array_equal(weights[:, 1], julia_layout.simplechains_weights(workload, params[1]))
    assert calls[3][1][1:] == (2, 5, "manual", 10, 4, "metrics")
    assert fields["wall_ns"][2] == 150_000_000
    assert fields["warmup"]["build_ns"] >= 0
    assert trainer.metadata() == {
        "julia_framework": "simplechains",
        "julia": "1.11.2",
        "julia_threads": 1,
        "julia_threads_interactive": 0,
        "julia_maxthreadid": 1,
        "julia_optimize": 2,
        "julia_packages": {"Flux": "0.16.5", "Lux": "1.21.0"},
        "julia_extensions": [],
    }


def test_a_refused_policy_becomes_an_unavailable_cell(monkeypatch):
    monkeypatch.setattr(julia_bridge, "status", lambda: (True, ""))
    monkeypatch.setattr(julia_bridge, "start", lambda threads=1: (True, ""))
    reason = (
        "GC policy disable would keep about 40.0 GiB of garbage (1300 KiB per step, 30000 steps) with 20.0 GiB free"
    )
    monkeypatch.setattr(julia_bridge, "call", lambda name, *a: {"refused": reason} if name == "run!" else f"<{name}>")
    from gcbench.measuring import worker

    cell = Cell("flux", "mlp", "disable", 0, 3, 4992, 30000, 2, 0, 10)
    doc = worker.run_cell(cell)
    assert doc.status == "unavailable"
    assert doc.reason == reason


def test_unknown_framework_is_refused():
    with pytest.raises(ValueError, match="unknown Julia framework"):
        julia_bridge.build(WORKLOADS["mlp"], [], None, framework="knet")



def test_the_fixture_logits_catch_a_flipped_kernel():
    """Issue 24, item 3, by simulation: the NumPy stand-ins for Flux and SimpleChains, fed
    the fixture's own weights, match the fixture's logits within the Julia tests' LOGIT_ATOL (common.jl);
    with the first kernel flipped (what a wrong orientation does) they miss by far more."""
    import re

    here = pathlib.Path(__file__).resolve().parent.parent / "julia" / "test"
    atol = float(re.search(r"^const LOGIT_ATOL = ([\d.e-]+)", (here / "common.jl").read_text(), re.M).group(1))
    meta = (here / "fixture" / "fixture.toml").read_text()
    batch = int(re.search(r"^batch = (\d+)", meta, re.M).group(1))
    samples = int(re.search(r"^samples = (\d+)", meta, re.M).group(1))
    images = np.fromfile(here / "fixture" / "images.f32", "<f4").reshape((28, 28, 1, samples), order="F")
    first = np.fromfile(here / "fixture" / "schedule.i64", "<i8")[:batch]
    x = images[..., first]
    workload = WORKLOADS["lenet5"]
    expected = np.fromfile(here / "fixture" / "lenet5_logits.f32", "<f4").reshape((10, batch), order="F")
    for layout, forward in (("flux", flux_reference_forward), ("simplechains", simplechains_reference_forward)):
        flat = np.fromfile(here / "fixture" / f"lenet5_{layout}.f32", "<f4")
        assert np.abs(forward(workload, flat, x) - expected).max() <= atol, layout
    params = init_params(workload, 0, 1)[0]  # the fixture's weights (make_fixture.py: seed 0)
    flipped = dict(params, **{"layer0/w": params["layer0/w"][::-1, ::-1].copy()})
    for layout, forward in (("flux", flux_reference_forward), ("simplechains", simplechains_reference_forward)):
        wrong = forward(workload, julia_layout.LAYOUTS[layout](workload, flipped), x)
        miss = np.abs(wrong - expected).max()
        print(f"{layout}: a flipped first kernel moves a logit by {miss:.4f} (LOGIT_ATOL {atol:g})")
        assert miss > 20 * atol, (layout, miss)
