"""`nnx`: Flax NNX with `nnx.jit`, `nnx.value_and_grad` and `nnx.Optimizer`.

One optax transformation is shared by every network's `nnx.Optimizer`: a transformation
per optimizer lands in each graphdef and makes every network compile on its own.
"""

from __future__ import annotations

import numpy as np
from flax import nnx

from ..workloads import BATCH_SIZE
from . import _jaxnn, _nnx_models


class Trainer(_jaxnn.LoopTrainer):
    def __init__(self, workload, params, data):
        tx = _jaxnn.optimizer()
        states = []
        for k, p in enumerate(params):
            model = _nnx_models.build(workload, p, seed=k)
            states.append((model, nnx.Optimizer(model, tx, wrt=nnx.Param)))
        super().__init__(data, states)
        traces = self.traces

        @nnx.jit
        def train_step(model, optimizer, x, y):
            traces.hit("update")
            loss, grads = nnx.value_and_grad(_nnx_models.loss_fn)(model, x, y)
            optimizer.update(model, grads)
            return loss

        def update(batch, state):  # NNX objects are updated in place
            return state, train_step(*state, *batch)

        self.update = update
        self.train_step = train_step

    def lower_step(self):
        """One network's `nnx.jit` step, lowered for `gcbench memory`."""
        x, y = _jaxnn.take(self.images, self.labels, np.zeros(BATCH_SIZE, np.int32))
        return self.train_step.lower(*self.states[0], x, y)

    def param_count(self) -> int:
        return _nnx_models.param_count(self.states[0][0])


def build(workload, params, data):
    return Trainer(workload, params, data)
