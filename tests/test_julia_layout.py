"""The Python side of the Julia bridge, checked against NumPy stand-ins for Julia.

`flux_reference_forward` computes a network the way Flux and Lux define their layers
(WHCN arrays, `Conv` as a true convolution, which flips the kernel, column-major
`flatten`, `Dense` as W * x .+ b); fed the converted weights it must give the logits
that the JAX forward pass gives on the canonical weights.
"""

from __future__ import annotations

import numpy as np
import pytest

from gcbench import data as datamod
from gcbench import gcpolicy, results
from gcbench.backends import julia_bridge, julia_layout
from gcbench.config import Cell
from gcbench.workloads import WORKLOADS, init_params


def flux_reference_forward(workload, flat: np.ndarray, x_whcn: np.ndarray) -> np.ndarray:
    h, off = x_whcn.astype(np.float64), 0

    def take(*dims):
        nonlocal off
        n = int(np.prod(dims))
        a = flat[off : off + n].reshape(dims, order="F").astype(np.float64)
        off += n
        return a

    for row in julia_layout.layer_table(workload):
        kind, a, b, c, relu = row
        if kind == julia_layout.CONV:
            w, bias = take(a, a, b, c), take(c)
            k, (wd, ht, _, n) = a, h.shape
            out = np.zeros((wd - k + 1, ht - k + 1, c, n))
            for p in range(k):
                for q in range(k):  # true convolution: the kernel is flipped
                    out += np.einsum("whin,io->whon", h[p : p + wd - k + 1, q : q + ht - k + 1], w[k - 1 - p, k - 1 - q])
            out = np.maximum(out + bias[None, None, :, None], 0)
            h = out.reshape(out.shape[0] // 2, 2, out.shape[1] // 2, 2, c, n).max(axis=(1, 3))
        else:
            if h.ndim == 4:
                h = h.reshape(-1, h.shape[-1], order="F")
            w, bias = take(b, a), take(b)
            h = w @ h + bias[:, None]
            if relu:
                h = np.maximum(h, 0)
    assert off == len(flat)
    return h  # (10, n)


@pytest.mark.parametrize("name", ["mlp", "lenet5"])
def test_converted_weights_reproduce_the_canonical_network(name):
    jax = pytest.importorskip("jax")
    from gcbench.backends import _jaxnn

    workload = WORKLOADS[name]
    params = init_params(workload, seed=3, networks=1)[0]
    params = {k: v + np.random.default_rng(1).normal(0, 0.05, v.shape).astype(np.float32) for k, v in params.items()}
    x = datamod.synthetic(6, seed=2).images
    expected = np.asarray(_jaxnn.forward(workload, _jaxnn.to_device(params), jax.numpy.asarray(x))).T
    flat = julia_layout.flux_weights(workload, params)
    assert flat.dtype == np.float32 and flat.size == workload.params_per_network
    got = flux_reference_forward(workload, flat, julia_layout.images_whcn(x))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_wrong_kernel_orientation_would_be_caught():
    """The reference really tells convolution from cross-correlation."""
    jax = pytest.importorskip("jax")
    from gcbench.backends import _jaxnn

    workload = WORKLOADS["lenet5"]
    params = init_params(workload, seed=3, networks=1)[0]
    x = datamod.synthetic(4, seed=2).images
    expected = np.asarray(_jaxnn.forward(workload, _jaxnn.to_device(params), jax.numpy.asarray(x))).T
    unflipped = dict(params, **{"layer0/w": params["layer0/w"][::-1, ::-1].copy()})
    got = flux_reference_forward(workload, julia_layout.flux_weights(workload, unflipped), julia_layout.images_whcn(x))
    assert not np.allclose(got, expected, rtol=1e-3, atol=1e-4)


def test_layer_tables():
    assert julia_layout.layer_table(WORKLOADS["mlp"]).tolist() == [[2, 784, 6, 0, 1], [2, 6, 16, 0, 1], [2, 16, 10, 0, 0]]
    assert julia_layout.layer_table(WORKLOADS["lenet5"]).tolist() == [
        [1, 5, 1, 6, 1], [1, 5, 6, 16, 1], [2, 256, 120, 0, 1], [2, 120, 84, 0, 1], [2, 84, 10, 0, 0]]
    with pytest.raises(ValueError, match="not vit"):
        julia_layout.layer_table(WORKLOADS["vit"])


def test_data_and_schedule_orientation():
    x = np.arange(2 * 28 * 28, dtype=np.float32).reshape(2, 28, 28, 1)
    w = julia_layout.images_whcn(x)
    assert w.shape == (28, 28, 1, 2) and w.flags.f_contiguous
    assert w[5, 7, 0, 1] == x[1, 7, 5, 0]  # [w, h, c, n] = [n, h, w, c]
    s = np.arange(12, dtype=np.int32).reshape(3, 4)  # 3 steps of batch 4
    cols = julia_layout.schedule_columns(s)
    assert cols.shape == (4, 3) and cols.dtype == np.int64 and cols[:, 1].tolist() == [4, 5, 6, 7]


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
        "loss_values": np.array([2.29, 2.20]), "julia_version": "1.11.2", "julia_threads": 1,
        "julia_packages": {"Flux": "0.16.5", "Lux": "1.21.0"},
    }


def test_result_fields_fit_the_schema():
    fields = julia_layout.result_fields(julia_like_result())
    assert fields["gc_collections"] == [[0, 0], [1, 0], [0, 1], [0, 0], [0, 0]]
    assert fields["gc_full"] == [0, 0, 1, 0, 0]
    assert fields["warmup"]["gc_collections"] == [[2, 1], [0, 0]]
    cell = Cell("flux", "mlp", "default", 0, 3, 4992, 5, 2, 0, 4)
    doc = results.validate(results.new(cell, "ok", data={"kind": "synthetic"}, metadata={}, **fields))
    from gcbench import stats

    s = stats.summary(doc)
    assert s["spikes"] == 1 and s["spikes_with_full_gc"] == 1.0 and s["alloc_bytes_per_step"] == 1_300_000


def test_measure_marshals_arguments_as_julia_expects(monkeypatch):
    calls = []

    def fake_call(name, *args):
        assert len(args) == julia_layout.JULIA_API[name]
        calls.append((name, args))
        return julia_like_result() if name == "run!" else f"<{name}>"

    monkeypatch.setattr(julia_bridge, "call", fake_call)
    workload = WORKLOADS["lenet5"]
    dataset = datamod.synthetic(300)
    schedule = datamod.batch_schedule(len(dataset), 7, seed=0)
    trainer = julia_bridge.build(workload, init_params(workload, 0, 3), dataset, framework="lux")
    fields = trainer.measure(schedule, 2, 5, gcpolicy.parse("manual:10"), 4)
    names = [c[0] for c in calls]
    assert names == ["setup_data", "build", "run!"]
    images, labels, sched = calls[0][1]
    assert images.shape == (28, 28, 1, 300) and images.dtype == np.float32
    assert labels.dtype == np.int64 and labels.min() >= 0 and labels.max() <= 9
    assert sched.shape == (128, 7) and (sched[:, 3] == schedule[3]).all()
    framework, table, weights, jdata = calls[1][1]
    assert framework == "lux" and table.shape == (5, 5) and jdata == "<setup_data>"
    assert weights.shape == (44_426, 3) and weights.dtype == np.float32 and weights.flags.f_contiguous
    assert calls[2][1][1:] == (2, 5, "manual", 10, 4)
    assert fields["wall_ns"][2] == 150_000_000
    assert trainer.metadata() == {"julia_framework": "lux", "julia": "1.11.2", "julia_threads": 1,
                                  "julia_packages": {"Flux": "0.16.5", "Lux": "1.21.0"}}


def test_unknown_framework_is_refused():
    with pytest.raises(ValueError, match="unknown Julia framework"):
        julia_bridge.build(WORKLOADS["mlp"], [], None, framework="knet")
