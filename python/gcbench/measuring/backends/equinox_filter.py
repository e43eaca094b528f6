"""`equinox-filter`: the model is an `eqx.Module`, stepped with `eqx.filter_jit` +
`eqx.filter_value_and_grad` (the configuration reported to spike)."""

from __future__ import annotations

import equinox as eqx
import jax

from . import _eqx_models, _jaxnn


class Trainer(_jaxnn.LoopTrainer):
    def __init__(self, workload, params, data):
        tx = _jaxnn.optimizer()
        states = []
        for k, p in enumerate(params):
            model = _eqx_models.build(workload, p, jax.random.key(k))
            states.append((model, tx.init(eqx.filter(model, eqx.is_inexact_array))))
        super().__init__(data, states, channels_first=True)
        traces = self.traces

        # The batch is argument one, so "all-except-first" donates exactly the state.
        @eqx.filter_jit(donate="all-except-first")
        def update(batch, state):
            traces.hit("update")
            model, opt_state = state
            loss, grads = eqx.filter_value_and_grad(_eqx_models.loss_fn)(model, *batch)
            updates, opt_state = tx.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
            return (eqx.apply_updates(model, updates), opt_state), loss

        self.update = update

    def param_count(self) -> int:
        return _eqx_models.param_count(self.states[0][0])


def build(workload, params, data):
    return Trainer(workload, params, data)
