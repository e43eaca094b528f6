"""Flax NNX models of the workloads and the loader of the canonical weights into them.
NNX layers are batch-first and channels-last, the canonical layout, so weights load as
they are (the attention kernels are only reshaped into heads).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from ..workloads import Conv, Workload
from ._jaxnn import to_device


def placeholder(key, shape, dtype=jnp.float32) -> np.ndarray:
    """The initialiser of every layer here: zeros in numpy, which `build` replaces with the
    canonical weights. Flax's own initialisers draw random weights eagerly, one small
    compiled program per initialiser and shape (48 for the ViT, 0.3 s of every repeat's
    build from the compilation cache, 1.5 s where they compile), only to be replaced."""
    return np.zeros(shape, dtype)


INIT = {"kernel_init": placeholder, "bias_init": placeholder}


class Net(nnx.Module):
    """The `mlp` and `lenet5` workloads: convolutions (relu, 2x2 max-pool), then dense layers."""

    def __init__(self, workload: Workload, rngs: nnx.Rngs):
        convs = [s for s in workload.layers if isinstance(s, Conv)]
        denses = [s for s in workload.layers if not isinstance(s, Conv)]
        self.convs = nnx.List([nnx.Conv(s.cin, s.cout, (s.kernel, s.kernel), padding="VALID", **INIT, rngs=rngs)
                               for s in convs])
        self.denses = nnx.List([nnx.Linear(s.fan_in, s.fan_out, **INIT, rngs=rngs) for s in denses])
        self.relu = tuple(s.relu for s in denses)

    def __call__(self, x):
        for conv in self.convs:
            x = nnx.max_pool(nnx.relu(conv(x)), (2, 2), strides=(2, 2))
        x = x.reshape(x.shape[0], -1)
        for dense, relu in zip(self.denses, self.relu, strict=True):
            x = dense(x)
            x = nnx.relu(x) if relu else x
        return x


class Block(nnx.Module):
    def __init__(self, dim: int, heads: int, mlp_dim: int, rngs: nnx.Rngs):
        self.ln1 = nnx.LayerNorm(dim, epsilon=1e-5, scale_init=placeholder, bias_init=placeholder, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(heads, dim, decode=False, **INIT, rngs=rngs)
        self.ln2 = nnx.LayerNorm(dim, epsilon=1e-5, scale_init=placeholder, bias_init=placeholder, rngs=rngs)
        self.mlp1 = nnx.Linear(dim, mlp_dim, **INIT, rngs=rngs)
        self.mlp2 = nnx.Linear(mlp_dim, dim, **INIT, rngs=rngs)

    def __call__(self, h):
        y = self.ln1(h)
        h = h + self.attn(y)
        return h + self.mlp2(nnx.gelu(self.mlp1(self.ln2(h))))


class ViT(nnx.Module):
    def __init__(self, workload: Workload, rngs: nnx.Rngs):
        cfg = workload.vit
        if cfg is None:
            raise ValueError(f"{workload.name} is not a ViT")
        self.cfg = cfg
        self.patch_embed = nnx.Linear(cfg.patch * cfg.patch, cfg.dim, **INIT, rngs=rngs)
        self.cls = nnx.Param(placeholder(None, (1, cfg.dim)))
        self.pos = nnx.Param(placeholder(None, (cfg.num_patches + 1, cfg.dim)))
        self.blocks = nnx.List([Block(cfg.dim, cfg.heads, cfg.mlp_dim, rngs) for _ in range(cfg.depth)])
        self.norm = nnx.LayerNorm(cfg.dim, epsilon=1e-5, scale_init=placeholder, bias_init=placeholder, rngs=rngs)
        self.head = nnx.Linear(cfg.dim, 10, **INIT, rngs=rngs)

    def __call__(self, x):  # x: (N, H, W, C)
        from ._jaxnn import patchify

        h = self.patch_embed(patchify(x, self.cfg.patch))
        cls = jnp.broadcast_to(self.cls[...], (h.shape[0], 1, self.cfg.dim))
        h = jnp.concatenate([cls, h], axis=1) + self.pos[...]
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h[:, 0]))


def build(workload: Workload, params: dict[str, np.ndarray], seed: int) -> nnx.Module:
    """A model of `workload` holding exactly the canonical weights `params`."""
    model = _build(workload, params, seed)
    weights = jax.tree_util.tree_leaves_with_path(nnx.state(model, nnx.Param))
    left = [jax.tree_util.keystr(path) for path, leaf in weights if not isinstance(leaf, jax.Array)]
    if left:
        raise ValueError(f"weights left as placeholders: {', '.join(left[:4])}")
    return model


def _build(workload: Workload, params: dict[str, np.ndarray], seed: int) -> nnx.Module:
    rngs = nnx.Rngs(seed)
    cfg = workload.vit
    if cfg is None:
        net = Net(workload, rngs)
        convs = [i for i, s in enumerate(workload.layers) if isinstance(s, Conv)]
        denses = [i for i, s in enumerate(workload.layers) if not isinstance(s, Conv)]
        for layer, i in [*zip(net.convs, convs, strict=True), *zip(net.denses, denses, strict=True)]:
            _set_linear(layer, params, f"layer{i}")
        return net
    model = ViT(workload, rngs)
    def heads(a):
        return a.reshape(*a.shape[:-1], cfg.heads, cfg.dim // cfg.heads)
    _set_linear(model.patch_embed, params, "patch")
    _set(model.cls, params["cls"])
    _set(model.pos, params["pos"])
    for i, block in enumerate(model.blocks):
        b = f"block{i}/"
        _set_norm(block.ln1, params, b + "ln1")
        _set_norm(block.ln2, params, b + "ln2")
        wq, wk, wv = np.split(params[b + "qkv/w"], 3, axis=1)
        bq, bk, bv = np.split(params[b + "qkv/b"], 3)
        for proj, w, bias in ((block.attn.query, wq, bq), (block.attn.key, wk, bk), (block.attn.value, wv, bv)):
            _set(proj.kernel, heads(w))
            _set(proj.bias, heads(bias))
        _set(block.attn.out.kernel, params[b + "proj/w"].reshape(cfg.heads, cfg.dim // cfg.heads, cfg.dim))
        _set(block.attn.out.bias, params[b + "proj/b"])
        _set_linear(block.mlp1, params, b + "mlp1")
        _set_linear(block.mlp2, params, b + "mlp2")
    _set_norm(model.norm, params, "head/ln")
    _set_linear(model.head, params, "head")
    return model


def _set(variable: nnx.Variable | None, value: np.ndarray) -> None:
    if variable is None:
        raise ValueError("the layer has no such weight (built without a bias?)")
    if variable.get_value().shape != value.shape:
        raise ValueError(f"shape {value.shape} does not fit {variable.get_value().shape}")
    variable.set_value(to_device(value))  # replaces the placeholder (`variable[...] =` would write into it)


def _set_linear(linear, params, name):
    _set(linear.kernel, params[name + "/w"])
    _set(linear.bias, params[name + "/b"])


def _set_norm(norm, params, name):
    _set(norm.scale, params[name + "/scale"])
    _set(norm.bias, params[name + "/bias"])


def loss_fn(model, x, y):
    from ._jaxnn import cross_entropy

    return cross_entropy(model(x), y)


def param_count(model) -> int:
    return sum(leaf.size for leaf in jax.tree.leaves(nnx.state(model, nnx.Param)))
