"""`equinox-partition`: `eqx.partition(model, eqx.is_array)` once; plain `jax.jit` over
the arrays with the static part closed over (the Equinox maintainers' suggested
workaround for the spikes)."""

from __future__ import annotations

import functools

import equinox as eqx
import jax

from . import _eqx_models, _jaxnn


class Trainer(_jaxnn.LoopTrainer):
    def __init__(self, workload, params, data):
        tx = _jaxnn.optimizer()
        states, static = [], None
        for k, p in enumerate(params):
            model = _eqx_models.build(workload, p, jax.random.key(k))
            arrays, static = eqx.partition(model, eqx.is_array)
            states.append((arrays, tx.init(arrays)))
        super().__init__(data, states, channels_first=True)
        traces = self.traces
        # Every network has the same structure, so one static part serves them all.
        self.static = static

        def loss_fn(arrays, x, y):
            return _eqx_models.loss_fn(eqx.combine(arrays, static), x, y)

        @functools.partial(jax.jit, donate_argnums=1)
        def update(batch, state):
            traces.hit("update")
            arrays, opt_state = state
            loss, grads = jax.value_and_grad(loss_fn)(arrays, *batch)
            updates, opt_state = tx.update(grads, opt_state, arrays)
            return (eqx.apply_updates(arrays, updates), opt_state), loss

        self.update = update

    def param_count(self) -> int:
        return _eqx_models.param_count(eqx.combine(self.states[0][0], self.static))


def build(workload, params, data):
    return Trainer(workload, params, data)
