"""What crosses the Python-Julia bridge, in plain NumPy (testable without Julia).

- the layer table of a workload (one row per layer, read by julia/layers.jl);
- canonical weights converted to Flux/Lux layout (WHCN, true convolution, dense
  weights out x in), flattened column-major per array, kernel then bias, layer by layer;
- the dataset (NHWC -> WHCN) and the batch schedule (one column per step);
- the vectors Julia returns, converted into the result schema's fields.
"""

from __future__ import annotations

import numpy as np

from ..workloads import Conv, Workload

CONV, DENSE = 1, 2
# Julia's functions that Python calls, with their number of positional arguments.
JULIA_API = {"setup_data": 3, "build": 4, "run!": 6, "param_count": 1}


def layer_table(workload: Workload) -> np.ndarray:
    """(layers, 5) int64: [1, kernel, cin, cout, 1] or [2, fan_in, fan_out, 0, relu]."""
    if workload.vit is not None:
        raise ValueError("the Julia backends implement mlp and lenet5, not vit")
    rows = [[CONV, l.kernel, l.cin, l.cout, 1] if isinstance(l, Conv) else [DENSE, l.fan_in, l.fan_out, 0, int(l.relu)]
            for l in workload.layers]
    return np.asarray(rows, dtype=np.int64)


def flux_weights(workload: Workload, params: dict[str, np.ndarray]) -> np.ndarray:
    """One network's canonical weights as the flat float32 vector julia/layers.jl reads."""
    parts, spatial = [], (28, 28, 1)  # (h, w, c) of the activations entering each layer
    for i, layer in enumerate(workload.layers):
        w, b = params[f"layer{i}/w"], params[f"layer{i}/b"]
        if isinstance(layer, Conv):
            # Canonical HWIO cross-correlation -> Flux/Lux (kw, kh, cin, cout) convolution,
            # which flips the kernel: W_f[a, b] = W_c[K-1-b, K-1-a].
            wf = w.transpose(1, 0, 2, 3)[::-1, ::-1]
            side = (spatial[0] - layer.kernel + 1) // 2
            spatial = (side, side, layer.cout)
        elif spatial[2] > 1:
            # After convolutions: canonical rows are (h, w, c) row-major; Flux flattens WHCN
            # column-major, column f = w + W*h + W*H*c.
            hh, ww, cc = spatial
            wf = w.reshape(hh, ww, cc, -1).transpose(3, 1, 0, 2).reshape(w.shape[1], -1, order="F")
            spatial = (1, 1, 1)
        else:
            wf = w.T
        parts += [np.asarray(wf, np.float32).ravel(order="F"), np.asarray(b, np.float32)]
    return np.concatenate(parts)


def stacked_weights(workload: Workload, params: list[dict[str, np.ndarray]]) -> np.ndarray:
    """(parameters, networks) float32, one column per network."""
    return np.asfortranarray(np.stack([flux_weights(workload, p) for p in params], axis=1))


def images_whcn(images_nhwc: np.ndarray) -> np.ndarray:
    """(n, h, w, c) -> (w, h, c, n), the order Flux, Lux and SimpleChains index images in."""
    return np.asfortranarray(images_nhwc.transpose(2, 1, 3, 0))


def schedule_columns(schedule: np.ndarray) -> np.ndarray:
    """(steps, batch) 0-based -> (batch, steps) int64: step s is column s."""
    return np.asfortranarray(schedule.T.astype(np.int64))


def _ints(x) -> list[int]:
    return np.asarray(x, dtype=np.int64).tolist()


def result_fields(raw) -> dict:
    """The result schema's fields from the Dict that `GCBench.run!` returns.

    Julia has two kinds of collection: incremental (young) and full. `gc_collections` per
    step is [incremental, full]; `gc_full` repeats the full count so that statistics find
    full collections the same way for every backend.
    """
    pauses, full = np.asarray(raw["gc_pauses"], np.int64), np.asarray(raw["gc_full"], np.int64)
    wpauses, wfull = np.asarray(raw["warmup_gc_pauses"], np.int64), np.asarray(raw["warmup_gc_full"], np.int64)
    return {
        "wall_ns": _ints(raw["wall_ns"]),
        "gc_ns": _ints(raw["gc_ns"]),
        "gc_collections": np.stack([pauses - full, full], axis=1).tolist(),
        "gc_full": full.tolist(),
        "alloc_bytes": _ints(raw["alloc_bytes"]),
        "loss": {"step": _ints(raw["loss_steps"]), "value": np.asarray(raw["loss_values"], float).tolist()},
        "warmup": {
            "wall_ns": _ints(raw["warmup_wall_ns"]),
            "gc_ns": _ints(raw["warmup_gc_ns"]),
            "gc_collections": np.stack([wpauses - wfull, wfull], axis=1).tolist(),
            "alloc_bytes": _ints(raw["warmup_alloc_bytes"]),
            "loss": float(raw["warmup_loss"]),
        },
    }
