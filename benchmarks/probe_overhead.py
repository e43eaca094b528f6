"""The probe's own overhead: median step time with the probe on vs. off, in one process.

Blocks of steps alternate between "on" (StepProbe.begin/end around every step, gc
callbacks installed) and "off" (a bare perf_counter_ns around every step), so drift of
the machine affects both alike. Prints both medians, their ratio, the ratio of
whole-block times, and the probe's absolute cost per step (begin+end around nothing,
less a bare timer pair), which is the figure least disturbed by a noisy machine, for
the default probe (wall, GC pauses, collections, GC pressure) and with the opt-in
allocated-blocks count (`sys.getallocatedblocks()`, which walks the heap).

    python benchmarks/probe_overhead.py [--workload mlp] [--blocks 20] [--block-steps 25]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gcbench.measuring import mnist
from gcbench.measuring.backends import get_backend
from gcbench.measuring.probe import StepProbe
from gcbench.measuring.workloads import get_workload, init_params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="jax")
    ap.add_argument("--workload", default="mlp")
    ap.add_argument("--networks", type=int)
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--block-steps", type=int, default=25)
    args = ap.parse_args()

    workload = get_workload(args.workload)
    networks = args.networks or workload.default_networks
    dataset = mnist.load()
    total = 3 + args.blocks * args.block_steps
    schedule = mnist.batch_schedule(len(dataset), total, seed=0)
    trainer = get_backend(args.backend).build(workload, init_params(workload, 0, networks), dataset)
    for i in range(3):
        trainer.step(schedule[i])

    on, off, block_on, block_off = [], [], [], []
    i = 3
    for block in range(args.blocks):
        probe = StepProbe(args.block_steps)  # a probe measures one run of steps (made outside the block's clock)
        t_block = time.perf_counter_ns()
        if block % 2 == 0:
            with probe:
                for j in range(args.block_steps):
                    probe.begin()
                    trainer.step(schedule[i])
                    probe.end(j)
                    i += 1
            on.extend(probe.column("wall_ns").tolist())
            block_on.append(time.perf_counter_ns() - t_block)
        else:
            for _ in range(args.block_steps):
                t0 = time.perf_counter_ns()
                trainer.step(schedule[i])
                off.append(time.perf_counter_ns() - t0)
                i += 1
            block_off.append(time.perf_counter_ns() - t_block)

    # The probe's absolute cost: begin()+end() around nothing, minus a bare timer pair.
    reps = 5_000

    def cost(**kw) -> float:
        empty = StepProbe(reps, **kw)
        with empty:
            t0 = time.perf_counter_ns()
            for j in range(reps):
                empty.begin()
                empty.end(j)
            return (time.perf_counter_ns() - t0) / reps

    probe_ns, blocks_ns = cost(), cost(alloc_blocks=True)
    t0 = time.perf_counter_ns()
    for _ in range(reps):
        time.perf_counter_ns()
        time.perf_counter_ns()
    bare_ns = (time.perf_counter_ns() - t0) / reps

    m_on, m_off = np.median(on) / 1e6, np.median(off) / 1e6
    b_on, b_off = np.median(block_on) / 1e6, np.median(block_off) / 1e6
    print(f"{args.backend}/{args.workload} x{networks}, {len(on)} steps each way, data {dataset.kind}")
    print(f"median step, probe on : {m_on:9.3f} ms")
    print(f"median step, probe off: {m_off:9.3f} ms")
    print(f"step ratio on/off     : {m_on / m_off:9.4f}  ({100 * (m_on / m_off - 1):+.2f} %)")
    print(f"block ratio on/off    : {b_on / b_off:9.4f}  ({100 * (b_on / b_off - 1):+.2f} %)")
    for name, ns in (("probe cost per step   ", probe_ns), ("  with --alloc-blocks ", blocks_ns)):
        extra = ns - bare_ns
        print(f"{name}: {extra / 1e3:9.3f} us  ({100 * extra / (m_off * 1e6):.4f} % of the median step)")


if __name__ == "__main__":
    main()
