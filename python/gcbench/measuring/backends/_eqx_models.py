"""Equinox models of the workloads, defined once at module level (a class defined in a
factory would be a new type per network: one compilation each), and the loader of the
canonical weights into them. Models act on one example, channels first, as Equinox's
layers do; the training step vmaps them over the batch.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..workloads import Conv, Workload
from ._jaxnn import to_device


class ConvPool(eqx.Module):
    conv: eqx.nn.Conv2d
    pool: eqx.nn.MaxPool2d

    def __call__(self, x):
        return self.pool(jax.nn.relu(self.conv(x)))


class Dense(eqx.Module):
    linear: eqx.nn.Linear
    relu: bool = eqx.field(static=True)

    def __call__(self, x):
        y = self.linear(x.reshape(-1))
        return jax.nn.relu(y) if self.relu else y


class Net(eqx.Module):
    """The `mlp` and `lenet5` workloads: a sequence of ConvPool and Dense layers."""

    layers: tuple

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Block(eqx.Module):
    ln1: eqx.nn.LayerNorm
    attn: eqx.nn.MultiheadAttention
    ln2: eqx.nn.LayerNorm
    mlp1: eqx.nn.Linear
    mlp2: eqx.nn.Linear

    def __call__(self, h):
        y = jax.vmap(self.ln1)(h)
        h = h + self.attn(y, y, y)
        y = jax.vmap(self.ln2)(h)
        return h + jax.vmap(lambda t: self.mlp2(jax.nn.gelu(self.mlp1(t))))(y)


class ViT(eqx.Module):
    patch_embed: eqx.nn.Linear
    cls: jax.Array
    pos: jax.Array
    blocks: tuple
    norm: eqx.nn.LayerNorm
    head: eqx.nn.Linear
    patch: int = eqx.field(static=True)

    def __call__(self, x):  # x: (C, H, W)
        c, hgt, wid = x.shape
        p = self.patch
        patches = x.reshape(c, hgt // p, p, wid // p, p).transpose(1, 3, 2, 4, 0).reshape(-1, p * p * c)
        h = jax.vmap(self.patch_embed)(patches)
        h = jnp.concatenate([self.cls, h]) + self.pos
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h[0]))


def build(workload: Workload, params: dict[str, np.ndarray], key) -> eqx.Module:
    """A model of `workload` holding exactly the canonical weights `params`.

    Layers are made by `eqx.filter_eval_shape` (their shapes, no arrays) and then given
    the canonical weights: an Equinox layer made with a key draws its own random weights,
    eagerly, one small compiled program per initialiser and shape, which `params` would
    replace at once; that took 0.43 s of every repeat's build (a cached program is still
    looked up and loaded). `key` only gives the layers' constructors the key they ask for."""
    model = _build_vit(workload, params, key) if workload.vit is not None else _build_net(workload, params, key)
    _check_concrete(model)
    return model


def _shaped(layer_type, *args, key=None, **kwargs):
    """The layer `layer_type(*args, **kwargs, key=key)` would make (without `key` where it
    is None: a layer that draws nothing), its arrays shapes only.
    Modules are immutable, so one such layer serves every layer of its kind and size (a
    ViT has 63 layers of 6 kinds): tracing each constructor took 0.13 s of a build."""
    return _shaped_once(layer_type, args, tuple(sorted(kwargs.items())), key)


_SHAPED: dict[tuple, eqx.Module] = {}


def _shaped_once(layer_type, args: tuple, kwargs: tuple, key) -> eqx.Module:
    if (layer_type, args, kwargs) not in _SHAPED:
        keyed = {} if key is None else {"key": key}
        _SHAPED[layer_type, args, kwargs] = eqx.filter_eval_shape(layer_type, *args, **dict(kwargs), **keyed)
    return _SHAPED[layer_type, args, kwargs]


def _check_concrete(model) -> None:
    left = [path for path, leaf in jax.tree_util.tree_leaves_with_path(model) if isinstance(leaf, jax.ShapeDtypeStruct)]
    if left:
        raise ValueError(f"weights left unset: {', '.join(jax.tree_util.keystr(p) for p in left[:4])}")


def _linear(w, b, key) -> eqx.nn.Linear:
    lin = _shaped(eqx.nn.Linear, w.shape[0], w.shape[1], key=key)
    return eqx.tree_at(lambda layer: (layer.weight, layer.bias), lin, (to_device(w.T), to_device(b)))


def _build_net(workload, params, key):
    layers: list[ConvPool | Dense] = []
    spatial = (28, 28, 1)
    for i, spec in enumerate(workload.layers):
        w, b = params[f"layer{i}/w"], params[f"layer{i}/b"]
        if isinstance(spec, Conv):
            conv = _shaped(eqx.nn.Conv2d, spec.cin, spec.cout, spec.kernel, key=key)
            conv = eqx.tree_at(lambda c: (c.weight, c.bias), conv,
                               (to_device(w.transpose(3, 2, 0, 1)), to_device(b.reshape(-1, 1, 1))))
            layers.append(ConvPool(conv, eqx.nn.MaxPool2d(2, 2)))
            side = (spatial[0] - spec.kernel + 1) // 2
            spatial = (side, side, spec.cout)
        else:
            if spatial[2] > 1:  # canonical rows are (h, w, c); flattening CHW wants (c, h, w)
                hh, ww, cc = spatial
                w = w.reshape(hh, ww, cc, -1).transpose(2, 0, 1, 3).reshape(hh * ww * cc, -1)
            spatial = (1, 1, 1)
            layers.append(Dense(_linear(w, b, key), spec.relu))
    return Net(tuple(layers))


def _build_vit(workload, params, key):
    cfg = workload.vit
    def ln(name):
        return eqx.tree_at(lambda layer: (layer.weight, layer.bias), _shaped(eqx.nn.LayerNorm, cfg.dim, eps=1e-5),
                           (to_device(params[name + "/scale"]), to_device(params[name + "/bias"])))
    blocks = []
    for i in range(cfg.depth):
        b = f"block{i}/"
        attn = _shaped(eqx.nn.MultiheadAttention, cfg.heads, cfg.dim, use_query_bias=True, use_key_bias=True,
                       use_value_bias=True, use_output_bias=True, key=key)
        wq, wk, wv = np.split(params[b + "qkv/w"], 3, axis=1)
        bq, bk, bv = np.split(params[b + "qkv/b"], 3)
        attn = eqx.tree_at(
            lambda a: (a.query_proj.weight, a.query_proj.bias, a.key_proj.weight, a.key_proj.bias,
                       a.value_proj.weight, a.value_proj.bias, a.output_proj.weight, a.output_proj.bias),
            attn, tuple(to_device(x) for x in (wq.T, bq, wk.T, bk, wv.T, bv, params[b + "proj/w"].T,
                                                 params[b + "proj/b"])))
        blocks.append(Block(ln(b + "ln1"), attn, ln(b + "ln2"),
                            _linear(params[b + "mlp1/w"], params[b + "mlp1/b"], key),
                            _linear(params[b + "mlp2/w"], params[b + "mlp2/b"], key)))
    return ViT(_linear(params["patch/w"], params["patch/b"], key), to_device(params["cls"]),
               to_device(params["pos"]), tuple(blocks), ln("head/ln"),
               _linear(params["head/w"], params["head/b"], key), cfg.patch)


def loss_fn(model, x, y):
    from ._jaxnn import cross_entropy

    return cross_entropy(jax.vmap(model)(x), y)


def param_count(model) -> int:
    return sum(leaf.size for leaf in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)))
