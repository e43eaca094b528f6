"""Cyclic garbage that waits in the oldest generation: memory grows, full collections never run.

Reconstructed (small, written for gcbench) from CPython issue python/cpython#83242
(bpo-39061, "Garbage Collection makes some object live for very long"): each step makes
one object that refers to itself and holds a buffer. The loop keeps the most recent ones
for a while (a window, as a prefetch queue or a cache of recent batches does), so they
survive the young collections and are promoted; once they leave the window they are
garbage, but garbage in the oldest generation, whose collection the collector's rule
keeps putting off. The reporter's fix, `gc.collect()` every few hundred steps, bounds the
memory and costs time: gcbench reports both.

    python examples/cycles_in_gen2.py --out results/cycles            # as reported
    python examples/cycles_in_gen2.py --out results/cycles-fix --collect-every 500
    gcbench compare results/cycles results/cycles-fix

Run each line three times (three fresh processes) before comparing.
"""

from __future__ import annotations

import argparse
import collections
import gc

import gcbench


class Record:
    """One step's record: it refers to itself, so only the collector can free it."""

    def __init__(self, size: int):
        self.me = self
        self.buffer = bytearray(size)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results folder")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=1_000, help="steps a record stays referenced")
    # 16 KiB: the records' growth stands above the interpreter's own ~100 MiB, so compare
    # reports the fix's memory saved beside its time (with 4 KiB it reported only the time)
    parser.add_argument("--buffer", type=int, default=16_384, help="bytes each record holds")
    parser.add_argument("--collect-every", type=int, default=0, help="the fix: gc.collect() every N steps")
    parser.add_argument("--explain", action="store_true", help="record why, instead of timings")
    args = parser.parse_args(argv)
    variant = f"collect-every-{args.collect_every}" if args.collect_every else None
    recent = collections.deque(maxlen=args.window)
    with gcbench.measure("cycles-in-gen2", warmup=10, variant=variant, explain=args.explain or None) as m:
        for i in range(args.steps + 10):
            with m.step():
                recent.append(Record(args.buffer))
                if args.collect_every and i % args.collect_every == args.collect_every - 1:
                    gc.collect()
    print(m)
    m.save(args.out)


if __name__ == "__main__":
    main()
