"""`jax`: parameters as plain dicts of arrays, `jax.jit` + `jax.value_and_grad` + optax."""

from __future__ import annotations

import functools

import jax
import optax

from . import _jaxnn


class Trainer(_jaxnn.LoopTrainer):
    def __init__(self, workload, params, data):
        tx = _jaxnn.optimizer()
        states = []
        for p in params:
            p = _jaxnn.to_device(p)
            states.append((p, tx.init(p)))
        super().__init__(data, states)
        traces = self.traces

        def loss_fn(p, x, y):
            return _jaxnn.cross_entropy(_jaxnn.forward(workload, p, x), y)

        @functools.partial(jax.jit, donate_argnums=1)
        def update(batch, state):
            traces.hit("update")
            p, opt_state = state
            loss, grads = jax.value_and_grad(loss_fn)(p, *batch)
            updates, opt_state = tx.update(grads, opt_state, p)
            return (optax.apply_updates(p, updates), opt_state), loss

        self.update = update

    def param_count(self) -> int:
        return sum(leaf.size for leaf in jax.tree.leaves(self.states[0][0]))


def build(workload, params, data):
    return Trainer(workload, params, data)
