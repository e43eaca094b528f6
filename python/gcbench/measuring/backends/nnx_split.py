"""`nnx-split`: Flax NNX with `nnx.split` once and a pure `jax.jit` step over
(graphdef, state), the faster idiom of Flax's performance guide."""

from __future__ import annotations

import functools

import jax
import numpy as np
from flax import nnx

from ..workloads import BATCH_SIZE
from . import _jaxnn, _nnx_models


class Trainer(_jaxnn.LoopTrainer):
    def __init__(self, workload, params, data):
        tx = _jaxnn.optimizer()
        states, graphdef = [], None
        for k, p in enumerate(params):
            model = _nnx_models.build(workload, p, seed=k)
            graphdef, state = nnx.split((model, nnx.Optimizer(model, tx, wrt=nnx.Param)))
            states.append(state)
        super().__init__(data, states)
        traces = self.traces
        assert graphdef is not None, "a trainer holds at least one network"
        self.graphdef = graphdef

        @functools.partial(jax.jit, static_argnums=0, donate_argnums=2)
        def train_step(graphdef, batch, state):
            traces.hit("update")
            model, optimizer = nnx.merge(graphdef, state)
            loss, grads = nnx.value_and_grad(_nnx_models.loss_fn)(model, *batch)
            optimizer.update(model, grads)
            return nnx.state((model, optimizer)), loss

        self.train_step = train_step
        self.update = functools.partial(train_step, graphdef)

    def lower_step(self):
        batch = _jaxnn.take(self.images, self.labels, np.zeros(BATCH_SIZE, np.int32))
        return self.train_step.lower(self.graphdef, batch, self.states[0])

    def param_count(self) -> int:
        model, _ = nnx.merge(self.graphdef, self.states[0])
        return _nnx_models.param_count(model)


def build(workload, params, data):
    return Trainer(workload, params, data)
