"""Loops run under gc_budget by tests/test_gc_budget.py, in fresh pytest processes: a plain
Python loop that keeps records, an Equinox training step (eqx.filter_jit, Adam), and two
loops that make cyclic garbage, one of them reading a fixture's objects."""

import os

import pytest

HISTORY = []
STEPS = int(os.environ.get("GCBENCH_BUDGET_STEPS", "400"))


def test_python_records(gc_budget):
    with gc_budget(warmup=3) as b:
        for i in range(10 * STEPS):  # enough steps for collections of generation 1, which promote
            with b.step():
                HISTORY.append({"step": i, "metrics": {"loss": [0.5]}})  # RECORD-LINE


def test_equinox_step(gc_budget):
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    model = eqx.nn.MLP(8, 8, 16, 4, key=jax.random.PRNGKey(0))
    opt = optax.adam(1e-3)
    state = opt.init(eqx.filter(model, eqx.is_array))
    x = jnp.ones((16, 8))

    @eqx.filter_jit
    def step(model, state):
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean(jax.vmap(m)(x) ** 2))(model)
        updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, loss

    history = []
    with gc_budget(warmup=3) as b:
        for i in range(5 * STEPS):  # enough for collections of generation 1, which promote
            with b.step():
                model, state, loss = step(model, state)
                loss.block_until_ready()
                history.append({"step": i, "metrics": {"loss": [loss]}})  # a loop's records: what makes collections


def test_python_cycles(gc_budget):
    kept = []
    with gc_budget(warmup=3) as b:
        for i in range(3 * STEPS):  # cycles a step: garbage only the collector frees, some alive as it runs
            with b.step():
                for _ in range(300):
                    x: list = []
                    x.append([x])
                kept.append([i])  # CYCLES-LINE


@pytest.fixture
def batches():
    return [[[j] for j in range(20)] for _ in range(50)]  # made by a fixture, before the budget


def test_python_fixture(gc_budget, batches):
    seen = []
    with gc_budget(warmup=3) as b:
        for i in range(3 * STEPS):  # a step that reads the fixture's objects and makes cycles
            with b.step():
                for _ in range(200):
                    x: list = []
                    x.append([x])
                seen.append(batches[i % len(batches)][0])  # FIXTURE-LINE
