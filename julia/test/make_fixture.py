"""Write the fixture julia/test/runtests.jl checks the Julia backends against.

The `jax` backend trains each workload from gcbench's canonical initial weights on a
short, seeded batch schedule; its per-step losses are the reference. The fixture holds
what a Julia backend needs to train the same networks on the same batches (the
weights in each framework's layout, the images, labels and schedule, as raw
little-endian arrays) and the reference losses (fixture.toml).

    python julia/test/make_fixture.py        # from the repository root, with gcbench[jax]
"""

from __future__ import annotations

import pathlib

import numpy as np

from gcbench.measuring import data as datamod
from gcbench.measuring.backends import BACKENDS, _jaxnn, julia_layout
from gcbench.measuring.workloads import LEARNING_RATE, WORKLOADS, init_params

HERE = pathlib.Path(__file__).resolve().parent / "fixture"
STEPS, BATCH, SAMPLES, SEED = 40, 16, 96, 0
NETWORKS = {"mlp": 2, "lenet5": 1}


def main() -> None:
    import jax

    jax.config.update("jax_default_matmul_precision", "highest")  # float32 references on every platform (not TF32)
    HERE.mkdir(exist_ok=True)
    dataset = datamod.synthetic(SAMPLES, seed=SEED)
    schedule = datamod.batch_schedule(len(dataset), STEPS, SEED, BATCH)
    julia_layout.images_whcn(dataset.images).astype("<f4").ravel(order="F").tofile(HERE / "images.f32")
    dataset.labels.astype("<i8").tofile(HERE / "labels.i64")
    julia_layout.schedule_columns(schedule).astype("<i8").ravel(order="F").tofile(HERE / "schedule.i64")
    lines = ["# Written by make_fixture.py: the jax backend's losses on these weights and batches.",
             f"steps = {STEPS}", f"batch = {BATCH}", f"samples = {SAMPLES}", f"learning_rate = {LEARNING_RATE!r}", ""]
    for name, networks in NETWORKS.items():
        workload = WORKLOADS[name]
        params = init_params(workload, SEED, networks)
        # the logits of every network on the first step's batch, before training: (10, batch, networks)
        x = dataset.images[schedule[0]]
        logits = np.stack([np.asarray(_jaxnn.forward(workload, _jaxnn.to_device(p), jax.numpy.asarray(x))).T
                           for p in params], axis=2)
        logits.astype("<f4").ravel(order="F").tofile(HERE / f"{name}_logits.f32")
        trainer = BACKENDS["jax"].build(workload, params, dataset)
        losses = []
        for step in range(STEPS):
            trainer.step(schedule[step])
            losses.append(trainer.loss())
        for framework in ("flux", "simplechains"):
            weights = julia_layout.stacked_weights(workload, params, framework)
            weights.astype("<f4").ravel(order="F").tofile(HERE / f"{name}_{framework}.f32")
        table = julia_layout.layer_table(workload)
        lines += [f"[{name}]", f"networks = {networks}", f"params = {workload.params_per_network}",
                  "spec = [" + ", ".join("[" + ", ".join(map(str, row)) + "]" for row in table.tolist()) + "]",
                  "losses = [" + ", ".join(f"{x:.8g}" for x in losses) + "]", ""]
    (HERE / "fixture.toml").write_text("\n".join(lines))
    print(f"fixture written to {HERE}")


if __name__ == "__main__":
    main()
