"""Equinox: the module flattened twice per step, against once.

Reconstructed (small, written for gcbench) from the report in gcbench's seed 000 (an
Equinox issue, "Equinox has spikes in training step durations due to garbage
collector"): periodic slow steps in an Equinox training loop, rarer when
`eqx.filter_jit` was replaced by `jax.jit` over `eqx.partition`ed arrays, and present
as soon as the module was flattened twice per step. Here a deep module tree (many small
layers) trains with Adam on random data; `--variant twice` calls the `eqx.filter_jit`ted step and
flattens the module once more per step (as a logging or EMA helper would), `--variant
once` partitions the module once and runs a `jax.jit` step over its arrays.

    python examples/equinox_flatten.py --out results/eqx-twice --variant twice
    python examples/equinox_flatten.py --out results/eqx-once --variant once
    gcbench compare results/eqx-twice results/eqx-once

Run each line three times (three fresh processes) before comparing.
"""

from __future__ import annotations

import argparse

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import gcbench

DEPTH, WIDTH, HEADS, TOKENS, BATCH = 12, 16, 8, 16, 8
LEARNING_RATE = 1e-2


class Block(eqx.Module):
    """A transformer block: attention and an MLP, each with a layer norm and a residual."""

    norm1: eqx.nn.LayerNorm
    attention: eqx.nn.MultiheadAttention
    norm2: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.norm1, self.norm2 = eqx.nn.LayerNorm(WIDTH), eqx.nn.LayerNorm(WIDTH)
        self.attention = eqx.nn.MultiheadAttention(HEADS, WIDTH, key=k1)
        self.mlp = eqx.nn.MLP(WIDTH, WIDTH, 2 * WIDTH, 1, key=k2)

    def __call__(self, x):
        h = jax.vmap(self.norm1)(x)
        x = x + self.attention(h, h, h)
        return x + jax.vmap(self.mlp)(jax.vmap(self.norm2)(x))


class Deep(eqx.Module):
    """DEPTH transformer blocks over TOKENS tokens: a deep module tree, as a ViT has."""

    blocks: list

    def __init__(self, key):
        self.blocks = [Block(k) for k in jax.random.split(key, DEPTH)]

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


OPTIMIZER = optax.adam(LEARNING_RATE)


@eqx.filter_jit(donate="all-except-first")
def step_filtered(x, y, model, opt_state):
    value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results folder")
    parser.add_argument("--variant", choices=("twice", "once"), required=True)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--explain", action="store_true", help="record why, instead of timings")
    args = parser.parse_args(argv)
    model = Deep(jax.random.PRNGKey(0))
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64 * BATCH, TOKENS, WIDTH)).astype(np.float32)
    ys = rng.normal(size=(64 * BATCH, TOKENS, WIDTH)).astype(np.float32)
    opt_state = OPTIMIZER.init(eqx.filter(model, eqx.is_array))
    warmup = 3
    if args.variant == "once":
        params, static = eqx.partition(model, eqx.is_array)

        @jax.jit
        def step_arrays(x, y, params, opt_state):
            value, grads = jax.value_and_grad(lambda p: loss(eqx.combine(p, static), x, y))(params)
            updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, value

    with gcbench.measure("equinox-flatten", warmup=warmup, batch_size=BATCH, variant=args.variant,
                         explain=args.explain or None) as m:
        for i in range(args.steps + warmup):
            with m.step():
                at = slice((i % 64) * BATCH, (i % 64 + 1) * BATCH)
                x, y = jnp.asarray(xs[at]), jnp.asarray(ys[at])
                if args.variant == "twice":
                    model, opt_state, value = step_filtered(x, y, model, opt_state)
                    jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))  # the second flatten
                else:
                    params, opt_state, value = step_arrays(x, y, params, opt_state)
                m.dispatched()
                value.block_until_ready()
    print(m)
    m.save(args.out)


if __name__ == "__main__":
    main()
