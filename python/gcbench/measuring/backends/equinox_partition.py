"""`equinox-partition`: `eqx.partition(model, eqx.is_array)` once; plain `jax.jit` over
the arrays with the static part closed over (the Equinox maintainers' suggested
workaround for the spikes). The jitted step is the `jax` backend's, over Equinox arrays."""

from __future__ import annotations

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
        # Every network has the same structure, so one static part serves them all.
        self.static = static

        def loss_fn(arrays, x, y):
            return _eqx_models.loss_fn(eqx.combine(arrays, static), x, y)

        self.update = _jaxnn.jitted_update(loss_fn, tx, self.traces, apply_updates=eqx.apply_updates)

    def param_count(self) -> int:
        return _eqx_models.param_count(eqx.combine(self.states[0][0], self.static))


def build(workload, params, data):
    return Trainer(workload, params, data)
