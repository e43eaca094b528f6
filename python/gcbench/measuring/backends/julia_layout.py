"""What crosses the Python-Julia bridge, in plain NumPy (testable without Julia).

- the layer table of a workload (one row per layer, read by julia/layers.jl);
- canonical weights converted to each framework's layout, flattened column-major per
  array, layer by layer: Flux/Lux (WHCN, true convolution, so flipped kernels; dense
  weights out x in, kernel then bias) and SimpleChains (cross-correlation, so kernels
  only transposed; dense `[W b]`);
- the dataset (NHWC -> WHCN) and the batch schedule (one column per step);
- the vectors Julia returns, converted into the result schema's fields, with a check
  that the losses are batch means.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np

from ..workloads import NUM_CLASSES, Conv, Workload

CONV, DENSE = 1, 2
# Julia's functions that Python calls, with their number of positional arguments.
JULIA_API = {"load_framework": 1, "setup_data": 3, "build": 5, "run!": 7, "param_count": 1, "explain_allocs": 5}
# A mean cross-entropy of 10 classes starts near ln 10 = 2.3 and falls; far above it, the
# loss was summed over the batch, not averaged (SimpleChains' valgrad! sums).
MAX_MEAN_LOSS = 5 * math.log(NUM_CLASSES)


def layer_table(workload: Workload) -> np.ndarray:
    """(layers, 5) int64: [1, kernel, cin, cout, 1] or [2, fan_in, fan_out, 0, relu]."""
    if workload.vit is not None:
        raise ValueError("the Julia backends implement mlp and lenet5, not vit")
    rows = [[CONV, layer.kernel, layer.cin, layer.cout, 1] if isinstance(layer, Conv)
            else [DENSE, layer.fan_in, layer.fan_out, 0, int(layer.relu)] for layer in workload.layers]
    return np.asarray(rows, dtype=np.int64)


def _dense_after_conv(w: np.ndarray, spatial: tuple[int, int, int]) -> np.ndarray:
    """A dense kernel (in, out) whose rows are canonical (h, w, c) row-major, as an (out, in)
    matrix over the WHCN column-major flatten Julia's frameworks use: column f = w + W*h + W*H*c."""
    hh, ww, cc = spatial
    return w.reshape(hh, ww, cc, -1).transpose(3, 1, 0, 2).reshape(w.shape[1], -1, order="F")


def _layers(workload: Workload, params: dict[str, np.ndarray]):
    """(layer, kernel, bias, spatial shape entering the layer) in order."""
    spatial = (28, 28, 1)  # (h, w, c) of the activations entering each layer
    for i, layer in enumerate(workload.layers):
        yield layer, params[f"layer{i}/w"], params[f"layer{i}/b"], spatial
        if isinstance(layer, Conv):
            side = (spatial[0] - layer.kernel + 1) // 2
            spatial = (side, side, layer.cout)
        else:
            spatial = (1, 1, 1)


def _dense_out_in(w: np.ndarray, spatial) -> np.ndarray:
    return _dense_after_conv(w, spatial) if spatial[2] > 1 else w.T


def flux_weights(workload: Workload, params: dict[str, np.ndarray]) -> np.ndarray:
    """One network's canonical weights in Flux/Lux layout: the flat float32 vector
    julia/layers.jl reads (kernel, then bias, layer by layer, column-major)."""
    parts = []
    for layer, w, b, spatial in _layers(workload, params):
        if isinstance(layer, Conv):
            # Canonical HWIO cross-correlation -> Flux/Lux (kw, kh, cin, cout) convolution,
            # which flips the kernel: W_f[a, b] = W_c[K-1-b, K-1-a].
            wf = w.transpose(1, 0, 2, 3)[::-1, ::-1]
        else:
            wf = _dense_out_in(w, spatial)
        parts += [np.asarray(wf, np.float32).ravel(order="F"), np.asarray(b, np.float32)]
    return np.concatenate(parts)


def simplechains_weights(workload: Workload, params: dict[str, np.ndarray]) -> np.ndarray:
    """One network's canonical weights in SimpleChains' parameter vector: a convolution's
    kernel K[kw, kh, cin, cout] (SimpleChains cross-correlates: HWIO with H and W swapped,
    not flipped) then its bias; a dense layer's (out, in+1) matrix `[W b]`; column-major."""
    parts = []
    for layer, w, b, spatial in _layers(workload, params):
        if isinstance(layer, Conv):
            parts += [np.asarray(w.transpose(1, 0, 2, 3), np.float32).ravel(order="F"), np.asarray(b, np.float32)]
        else:
            wb = np.hstack([_dense_out_in(w, spatial), np.asarray(b).reshape(-1, 1)])
            parts.append(np.asarray(wb, np.float32).ravel(order="F"))
    return np.concatenate(parts)


LAYOUTS = {"flux": flux_weights, "lux": flux_weights, "simplechains": simplechains_weights}


def stacked_weights(workload: Workload, params: list[dict[str, np.ndarray]], framework: str = "flux") -> np.ndarray:
    """(parameters, networks) float32 in `framework`'s layout, one column per network."""
    convert = LAYOUTS[framework]
    return np.asfortranarray(np.stack([convert(workload, p) for p in params], axis=1))


def images_whcn(images_nhwc: np.ndarray) -> np.ndarray:
    """(n, h, w, c) -> (w, h, c, n), the order Flux, Lux and SimpleChains index images in."""
    return np.asfortranarray(images_nhwc.transpose(2, 1, 3, 0))


def schedule_columns(schedule: np.ndarray) -> np.ndarray:
    """(steps, batch) 0-based -> (batch, steps) int64: step s is column s."""
    return np.asfortranarray(schedule.T.astype(np.int64))


def _ints(x) -> list[int]:
    return np.asarray(x, dtype=np.int64).tolist()


Ints: TypeAlias = np.ndarray  # int64, one per step
Floats: TypeAlias = np.ndarray
# How each kind of field (by its annotation) is read from the value juliacall hands over;
# its arrays are views of Julia's, its Dicts and Vectors Python mappings and sequences.
_READ: dict[str, Callable[[Any], Any]] = {
    "Ints": lambda v: np.asarray(v, np.int64),
    "Floats": lambda v: np.asarray(v, np.float64),
    "int": int,
    "float": float,
    "str": str,
    "dict[str, str]": lambda d: {str(k): str(v) for k, v in d.items()},
    "list[str]": lambda xs: [str(x) for x in xs],
    "dict[str, list[int]]": lambda d: {str(k): [int(v[0]), int(v[1])] for k, v in d.items()},  # [count, bytes]
}


def _read(cls, raw, function: str):
    """`raw` (the Dict Julia's `function` returned) as a `cls` record, each field converted by
    its annotation; a key Julia left out is named (julia/ and this file disagree)."""
    names = [f.name for f in dataclasses.fields(cls)]
    missing = [k for k in names if k not in raw]
    if missing:
        raise ValueError(f"GCBench.{function} returned no {', '.join(missing)}")
    return cls(**{f.name: _READ[str(f.type)](raw[f.name]) for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class JuliaRun:
    """What `GCBench.run!` returns (julia/run.jl), key by key: the warm-up's and the timed
    steps' vectors, the sampled losses, and the Julia that ran them."""

    warmup_wall_ns: Ints
    warmup_gc_ns: Ints
    warmup_gc_full: Ints
    warmup_gc_pauses: Ints
    warmup_alloc_bytes: Ints
    warmup_loss: float
    wall_ns: Ints
    gc_ns: Ints
    gc_full: Ints
    gc_pauses: Ints
    alloc_bytes: Ints
    loss_steps: Ints
    loss_values: Floats
    bookkeeping_entries: int
    julia_version: str
    julia_threads: int  # the default pool's: what the networks run on
    julia_threads_interactive: int  # the interactive pool's: 0 as gcbench starts Julia (`thread_layout`)
    julia_maxthreadid: int  # every thread Julia made, pools together
    julia_optimize: int
    julia_packages: dict[str, str]
    julia_extensions: list[str]

    @classmethod
    def read(cls, raw) -> JuliaRun:
        return _read(cls, raw, "run!")

    def facts(self) -> dict[str, Any]:
        """The Julia it ran on, as a result's metadata records it."""
        return {"julia": self.julia_version, "julia_threads": self.julia_threads,
                "julia_threads_interactive": self.julia_threads_interactive,
                "julia_maxthreadid": self.julia_maxthreadid, "julia_optimize": self.julia_optimize,
                "julia_packages": self.julia_packages, "julia_extensions": self.julia_extensions}


@dataclasses.dataclass(frozen=True)
class JuliaAllocTables:
    """What `GCBench.explain_allocs` returns (julia/explain.jl): sampled allocations as
    [count, bytes] by type, package and site."""

    samples: int
    sample_rate: float
    steps: int
    by_type: dict[str, list[int]]
    by_package: dict[str, list[int]]
    by_site: dict[str, list[int]]

    @classmethod
    def read(cls, raw) -> JuliaAllocTables:
        return _read(cls, raw, "explain_allocs")



def _collections(pauses: np.ndarray, full: np.ndarray) -> list[list[int]]:
    """Per step [incremental, full]: the pauses less the full ones, never below zero."""
    return np.stack([np.clip(pauses - full, 0, None), full], axis=1).tolist()


def result_fields(run: JuliaRun) -> dict:
    """The result schema's fields from what `GCBench.run!` returned.

    Julia has two kinds of collection: incremental (young) and full. `gc_collections` per
    step is [incremental, full] (pauses less full ones, never below zero); `gc_full`
    repeats the full count so that statistics find full collections the same way for every
    backend. Raises `ValueError` when the losses are not batch means (see MAX_MEAN_LOSS).
    """
    losses = [run.warmup_loss, *run.loss_values.tolist()]
    if max(losses) > MAX_MEAN_LOSS:
        raise ValueError(f"loss {max(losses):.3g} is above {MAX_MEAN_LOSS:.3g}: a loss summed over the batch, "
                         "not its mean")
    return {
        "wall_ns": _ints(run.wall_ns),
        "gc_ns": _ints(run.gc_ns),
        "gc_collections": _collections(run.gc_pauses, run.gc_full),
        "gc_full": _ints(run.gc_full),
        "alloc_bytes": _ints(run.alloc_bytes),
        "loss": {"step": _ints(run.loss_steps), "value": losses[1:]},
        "warmup": {
            "wall_ns": _ints(run.warmup_wall_ns),
            "gc_ns": _ints(run.warmup_gc_ns),
            "gc_collections": _collections(run.warmup_gc_pauses, run.warmup_gc_full),
            "alloc_bytes": _ints(run.warmup_alloc_bytes),
            "loss": losses[0],
        },
        "probe": {"bookkeeping_entries": run.bookkeeping_entries},
    }
