"""`jax-vmap`: all N networks stacked on a leading axis and trained by one jitted,
vmapped step: no per-network dispatch, the floor the per-network loops are compared with.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..workloads import BATCH_SIZE
from . import _jaxnn


class Trainer(_jaxnn.JaxTrainer):
    def __init__(self, workload, params, data):
        if workload.vit is not None:
            raise ValueError("jax-vmap stacks many networks; vit is one network")
        super().__init__(data)
        tx = _jaxnn.optimizer()
        stacked = {k: _jaxnn.to_device(np.stack([p[k] for p in params])) for k in params[0]}
        self.state = (stacked, jax.vmap(tx.init)(stacked))
        traces = self.traces

        def update_one(x, y, p, opt_state):
            loss, grads = jax.value_and_grad(
                lambda p: _jaxnn.cross_entropy(_jaxnn.forward(workload, p, x), y))(p)
            updates, opt_state = tx.update(grads, opt_state, p)
            return optax.apply_updates(p, updates), opt_state, loss

        @functools.partial(jax.jit, donate_argnums=2)
        def update(images, labels, state, idx):
            traces.hit("update")
            x, y = images[idx], labels[idx]
            p, opt_state, loss = jax.vmap(update_one, in_axes=(None, None, 0, 0))(x, y, *state)
            return (p, opt_state), loss

        self._update = update
        self.losses: Any = None  # the last step's losses, once a step ran

    def dispatch(self, idx: np.ndarray) -> None:
        self.state, self.losses = self._update(self.images, self.labels, self.state, idx)

    def wait(self) -> None:
        self.losses.block_until_ready()

    def loss(self) -> float:
        return float(jnp.mean(self.losses))

    def network_losses(self) -> list[float]:
        """Each network's loss at the last step, as Python floats (what a logging loop keeps)."""
        return np.asarray(self.losses).tolist()

    def lower_step(self):
        """The jitted step of all N networks, lowered for `gcbench memory`."""
        idx = np.zeros(BATCH_SIZE, np.int32)
        return self._update.lower(self.images, self.labels, self.state, idx)

    def param_count(self) -> int:
        return sum(leaf[0].size for leaf in jax.tree.leaves(self.state[0]))


def build(workload, params, data):
    return Trainer(workload, params, data)
