"""A data loader that keeps its tokens in Python lists: every document a tracked list.

Reconstructed (small, written for gcbench) from the report in karpathy/nanochat#477
("Dataloader fix for garbage collector slowdowns"): the loader buffered documents as
Python lists and assembled each batch from them, the objects survived long enough to be
promoted, and full collections made the occasional long step. The fix kept the tokens
in preallocated arrays. This loop fetches its batch inside the step and does a small
NumPy update on it.

    python examples/list_dataloader.py --out results/loader-lists                 # as reported
    python examples/list_dataloader.py --out results/loader-arrays --arrays       # the fix
    python examples/list_dataloader.py --out results/loader-freeze --freeze       # gc.freeze() after warm-up
    gcbench compare results/loader-lists results/loader-arrays

Run each line three times (three fresh processes) before comparing.
"""

from __future__ import annotations

import argparse
import collections
import gc

import numpy as np

import gcbench

ROW, BATCH, VOCAB = 256, 8, 50_000


class ListLoader:
    """Documents as lists of token ids, tokenized a few thousand at a time into a buffer;
    rows are cut from the front of it."""

    REFILL = 4096  # documents tokenized at once, as a tokenizer's batch

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.buffer: collections.deque[list[int]] = collections.deque()

    def _refill(self) -> None:
        lengths = self.rng.integers(16, 128, self.REFILL)
        tokens = self.rng.integers(0, VOCAB, int(lengths.sum())).tolist()
        start = 0
        for n in lengths.tolist():
            self.buffer.append(tokens[start:start + n])
            start += n

    def batch(self) -> np.ndarray:
        rows = []
        for _ in range(BATCH):
            row: list[int] = []
            while len(row) < ROW:
                if not self.buffer:
                    self._refill()
                doc = self.buffer.popleft()
                row.extend(doc[: ROW - len(row)])
            rows.append(row)
        return np.asarray(rows, dtype=np.int64)


class ArrayLoader:
    """The same token stream kept in one preallocated array: no Python list per document."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.pool = np.zeros(64 * 512, np.int64)
        self.filled = 0
        self.out = np.zeros((BATCH, ROW), np.int64)

    def batch(self) -> np.ndarray:
        for r in range(BATCH):
            if self.filled < ROW:
                n = int(self.rng.integers(16 * 512, 32 * 512))
                self.pool[self.filled:self.filled + n] = self.rng.integers(0, VOCAB, n)
                self.filled += n
            self.out[r] = self.pool[:ROW]
            self.pool[: self.filled - ROW] = self.pool[ROW:self.filled]
            self.filled -= ROW
        return self.out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="results folder (default: the one `gcbench run --script` names)")
    parser.add_argument("--steps", type=int, default=3_000)
    parser.add_argument("--arrays", action="store_true", help="the fix: tokens in a preallocated array")
    parser.add_argument("--freeze", action="store_true", help="gc.collect() and gc.freeze() after the warm-up")
    parser.add_argument("--explain", action="store_true", help="record why, instead of timings")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    loader = ArrayLoader(rng) if args.arrays else ListLoader(rng)
    embed = rng.normal(size=(VOCAB % 997, 16)).astype(np.float32)
    weight = np.zeros((16, 16), np.float32)
    warmup = 5
    with gcbench.measure("list-dataloader", warmup=warmup, batch_size=BATCH, variant="arrays" if args.arrays else None,
                         policy="freeze" if args.freeze else None, explain=args.explain or None) as m:
        for i in range(args.steps + warmup):
            if args.freeze and i == warmup:
                gc.collect()
                gc.freeze()
            with m.step():
                tokens = loader.batch()
                x = embed[tokens % len(embed)].mean(axis=1)
                weight -= 1e-3 * (x.T @ (x @ weight - x))
    print(m)
    m.save(args.out)
    gc.unfreeze()


if __name__ == "__main__":
    main()
