"""`jax`: parameters as plain dicts of arrays, `jax.jit` + `jax.value_and_grad` + optax."""

from __future__ import annotations

import jax

from . import _jaxnn


class Trainer(_jaxnn.LoopTrainer):
    def __init__(self, workload, params, data):
        tx = _jaxnn.optimizer()
        states = []
        for p in params:
            p = _jaxnn.to_device(p)
            states.append((p, tx.init(p)))
        super().__init__(data, states)

        def loss_fn(p, x, y):
            return _jaxnn.cross_entropy(_jaxnn.forward(workload, p, x), y)

        self.update = _jaxnn.jitted_update(loss_fn, tx, self.traces)

    def param_count(self) -> int:
        return sum(leaf.size for leaf in jax.tree.leaves(self.states[0][0]))


def build(workload, params, data):
    return Trainer(workload, params, data)
