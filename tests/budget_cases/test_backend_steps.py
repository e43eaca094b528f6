"""gcbench's own JAX-family backends, each step under a GC budget (run by
tests/test_gc_budget.py in a fresh pytest process): the vit workload (the deep module
tree that makes the collections), 1 network, batch 8, 100 timed steps, no sites traced."""

import pytest

from gcbench.measuring import worker
from gcbench.measuring.backends import BACKENDS
from gcbench.measuring.cell import Cell

STEPS, WARMUP = 100, 3
# Budgets of promotions a step, each backend's own (`BackendInfo.vit_promotions`): what each
# idiom promoted here, counted from a heap settled after the warm-up (jax 0.10.2, equinox
# 0.13.8, flax 0.12.8: 0, 1,144, 173, 4,567 and 1,799, the probe's counts), with about a quarter
# more room (nnx-split read 1,467 while the diagnosis counted them, and lost some: CHANGELOG).
# eqx.filter_jit and nnx.jit walk the module on every call; equinox before 0.13.3 (0277a30,
# "perf: code generation") promoted about 2,500 a step under filter_jit, over its budget.
BUDGETS = {b.name: b.vit_promotions for b in BACKENDS.values() if b.language == "python" and b.supports("vit")}
MEASURED_WITH = {"jax": "0.10.2", "equinox": "0.13.8", "flax": "0.12.8"}  # the budgets hold for these


@pytest.mark.parametrize("backend", list(BUDGETS))
def test_backend_step(gc_budget, backend, record_property):
    cell = Cell(backend, "vit", "default", 0, 1, 0, STEPS, WARMUP, 0, 10, batch_size=8)
    trainer, schedule, _, _, _ = worker.prepare(cell, progress=lambda *a: None)
    with gc_budget(warmup=WARMUP, max_promotions_per_step=BUDGETS[backend], sites=False) as b:
        for i in range(WARMUP + STEPS):
            with b.step():
                trainer.step(schedule[i])
    f = b.figures
    record_property("counts", {"promotions_per_step": round(f.max_promotions_per_step, 2),
                               "full_per_1000": round(f.max_full_per_1000, 2),
                               "collections_per_1000": [round(x, 2) for x in f.max_collections_per_1000]})
    print(f"COUNTS {backend} promotions/step {f.max_promotions_per_step:.2f} "
          f"full/1000 {f.max_full_per_1000:.2f} collections/1000 "
          + " ".join(f"{x:.1f}" for x in f.max_collections_per_1000))
