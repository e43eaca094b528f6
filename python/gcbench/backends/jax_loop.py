"""`jax`: parameters as plain dicts of arrays, `jax.jit` + `jax.value_and_grad` + optax."""

from __future__ import annotations

import functools

import jax
import optax

from . import _jaxnn
from ._jaxnn import LoopTrainer


class Trainer(LoopTrainer):
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

        @functools.partial(jax.jit, donate_argnums=0)
        def update(state, x, y):
            traces.hit("update")
            p, opt_state = state
            loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
            updates, opt_state = tx.update(grads, opt_state, p)
            return (optax.apply_updates(p, updates), opt_state), loss

        self.update = update

    def export_params(self):
        return [_jaxnn.to_numpy(p) for p, _ in self.states]


def build(workload, params, data):
    return Trainer(workload, params, data)
