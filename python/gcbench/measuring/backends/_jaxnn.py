"""Pieces shared by the JAX-family backends: the optimizer, the loss, the batch take,
the functional forward pass over canonical parameters, and the per-network step loop.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..workloads import BATCH_SIZE, LEARNING_RATE, Workload


def optimizer() -> optax.GradientTransformation:
    """Adam, learning rate 3e-4, the defaults every framework here shares (eps 1e-8)."""
    return optax.adam(LEARNING_RATE)


def cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


@jax.jit
def take(images: jax.Array, labels: jax.Array, idx: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The step's batch, gathered on the device from the resident dataset."""
    return images[idx], labels[idx]


def device_data(data, channels_first: bool = False) -> tuple[jax.Array, jax.Array]:
    """The whole training set, copied to the default device once (NHWC, or NCHW)."""
    images = data.images.transpose(0, 3, 1, 2) if channels_first else data.images
    return to_device(images), to_device(data.labels)


def to_device(x):
    """Numpy arrays (a pytree of them) on the default device, uncommitted, as `jnp.asarray`
    puts them, without the small program `jnp.asarray` compiles for each new shape (80 ms
    for a ViT's nine shapes, from the compilation cache, in every repeat's build)."""
    return jax.device_put(x)


def to_numpy(params) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in params.items()}


# -- functional forward pass over the canonical layout ----------------------------------

def _max_pool(x: jax.Array) -> jax.Array:
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _conv(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y + b


def _layer_norm(x, scale, bias, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * scale + bias


def forward(workload: Workload, p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """Logits of one network with canonical parameters `p` on a batch `x` (N, 28, 28, 1)."""
    if workload.vit is not None:
        return _vit_forward(workload, p, x)
    h = x
    for i, layer in enumerate(workload.layers):
        w, b = p[f"layer{i}/w"], p[f"layer{i}/b"]
        if hasattr(layer, "kernel"):  # Conv: conv, relu, pool
            h = _max_pool(jax.nn.relu(_conv(h, w, b)))
        else:
            h = h.reshape(h.shape[0], -1) @ w + b
            if layer.relu:
                h = jax.nn.relu(h)
    return h


def patchify(x: jax.Array, patch: int) -> jax.Array:
    """(N, H, W, C) -> (N, patches, patch*patch*C), patches in row-major order."""
    n, hgt, wid, c = x.shape
    x = x.reshape(n, hgt // patch, patch, wid // patch, patch, c)
    return x.transpose(0, 1, 3, 2, 4, 5).reshape(n, (hgt // patch) * (wid // patch), patch * patch * c)


def attention(q: jax.Array, k: jax.Array, v: jax.Array, heads: int) -> jax.Array:
    """Multi-head self-attention on (T, D) or (N, T, D) inputs already projected."""
    *lead, t, d = q.shape
    def split(a):
        return a.reshape(*lead, t, heads, d // heads).swapaxes(-2, -3)
    q, k, v = split(q), split(k), split(v)
    weights = jax.nn.softmax(q @ k.swapaxes(-1, -2) / jnp.sqrt(d // heads).astype(q.dtype), axis=-1)
    return (weights @ v).swapaxes(-2, -3).reshape(*lead, t, d)


def _vit_forward(workload: Workload, p, x):
    cfg = workload.vit
    if cfg is None:
        raise ValueError(f"{workload.name} is not a ViT")
    h = patchify(x, cfg.patch) @ p["patch/w"] + p["patch/b"]
    cls = jnp.broadcast_to(p["cls"], (h.shape[0], 1, cfg.dim))
    h = jnp.concatenate([cls, h], axis=1) + p["pos"]
    for i in range(cfg.depth):
        b = f"block{i}/"
        y = _layer_norm(h, p[b + "ln1/scale"], p[b + "ln1/bias"])
        q, k, v = jnp.split(y @ p[b + "qkv/w"] + p[b + "qkv/b"], 3, axis=-1)
        h = h + attention(q, k, v, cfg.heads) @ p[b + "proj/w"] + p[b + "proj/b"]
        y = _layer_norm(h, p[b + "ln2/scale"], p[b + "ln2/bias"])
        h = h + jax.nn.gelu(y @ p[b + "mlp1/w"] + p[b + "mlp1/b"]) @ p[b + "mlp2/w"] + p[b + "mlp2/b"]
    y = _layer_norm(h[:, 0], p["head/ln/scale"], p["head/ln/bias"])
    return y @ p["head/w"] + p["head/b"]


# -- the per-network loop -----------------------------------------------------------------

def jitted_update(loss_fn, tx, traces: TraceCounter, apply_updates=optax.apply_updates):
    """`update(batch, (params, opt_state)) -> ((params, opt_state), loss)` under plain
    `jax.jit`, the state donated: the step of `jax` and of `equinox-partition`."""

    @functools.partial(jax.jit, donate_argnums=1)
    def update(batch, state):
        traces.hit("update")
        params, opt_state = state
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (apply_updates(params, updates), opt_state), loss

    return update


class TraceCounter:
    """Counts traces of jitted functions: the body of a jitted function runs once per trace."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def hit(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1


class JaxTrainer:
    """What every JAX-family trainer has: the dataset on the device, a trace counter,
    and the metadata of the JAX devices it ran on."""

    def __init__(self, data, channels_first: bool = False):
        self.images, self.labels = device_data(data, channels_first)
        self.traces = TraceCounter()

    def trace_counts(self) -> dict[str, int]:
        return dict(self.traces.counts)

    def step(self, idx: np.ndarray) -> None:
        """One whole step: dispatched, then waited for (the worker times the two apart)."""
        self.dispatch(idx)
        self.wait()

    def dispatch(self, idx: np.ndarray) -> None:
        raise NotImplementedError

    def wait(self) -> None:
        raise NotImplementedError

    def metadata(self) -> dict:
        from ...core.metadata import jax_devices

        return jax_devices()


class LoopTrainer(JaxTrainer):
    """Steps N independent networks one after the other, as the seed reports' loops do.

    Subclasses pass one opaque state per network and set `self.update`, a function
    `update(batch, state) -> (state, loss)` with `batch = (x, y)` (the batch comes first
    so that frameworks that donate "all but the first argument" keep it); this class takes
    the batch, runs the loop, waits for the results and keeps the losses.
    """

    def __init__(self, data, states: list, channels_first: bool = False):
        super().__init__(data, channels_first)
        self.states = states
        self.losses: list = [None] * len(states)

    #: the subclass's jitted `update(batch, state) -> (state, loss)`, set in its __init__
    update: Any

    def dispatch(self, idx: np.ndarray) -> None:
        """Take the batch and call every network's update; returns once JAX has dispatched
        them, before their results are ready."""
        batch = take(self.images, self.labels, idx)
        states, losses, update = self.states, self.losses, self.update
        for k in range(len(states)):
            states[k], losses[k] = update(batch, states[k])

    def wait(self) -> None:
        """Until the step's results are ready: every output of one executable becomes
        ready together, so the losses stand for them."""
        jax.block_until_ready(self.losses)

    def loss(self) -> float:
        return float(np.mean([np.asarray(loss) for loss in self.losses]))

    def network_losses(self) -> list[float]:
        """Each network's loss at the last step, as Python floats (what a logging loop keeps)."""
        return [float(loss) for loss in self.losses]

    def param_count(self) -> int:
        """Parameters of one network, counted the framework's own way."""
        raise NotImplementedError

    def lower_step(self):
        """One network's jitted step, lowered for `gcbench memory` (not compiled or run)."""
        batch = take(self.images, self.labels, np.zeros(BATCH_SIZE, np.int32))
        return self.update.lower(batch, self.states[0])
