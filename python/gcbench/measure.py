"""`gcbench.measure`: gcbench's probe around your own training loop.

    import gcbench

    with gcbench.measure("my-loop", warmup=3) as m:
        for batch in batches:
            with m.step():
                state, loss = train_step(state, batch)
                m.dispatched()                # optional: host time (Python, dispatch) ends here
                jax.block_until_ready(loss)   # the step ends when its results are ready
    print(m.summary())                        # median step, GC share, full collections
    m.save("results/my-loop")                 # one result document, the schema of a cell

Each step records its wall time, GC pause time, collections per generation, objects
collected and GC pressure (net new tracked objects), exactly as gcbench's own cells are
measured; the first `warmup` steps are kept apart, as compilation happens there.
`save` writes one result per call into a results folder: run your script several times
(fresh processes) into one folder and `gcbench report` treats the runs as repeats.
"""

from __future__ import annotations

import gc
import os
import pathlib
import sys

from . import files, gcpolicy, metadata, results
from .config import _NAME, Cell
from .errors import UsageError
from .probe import StepProbe

DEFAULT_CAPACITY = 100_000
MAX_CAPACITY = 10_000_000  # as many timed steps as a run may have


class _Step:
    """`with m.step():` brackets one step; reused, so entering it allocates nothing."""

    def __init__(self, measurement: Measurement):
        self._m = measurement

    def __enter__(self) -> None:
        self._m._begin()

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self._m._end()
        else:  # the step raised: it is not a timed step (the exception goes on)
            self._m._abort()


class Measurement:
    """Per-step wall time and GC activity of a loop you run (see the module docstring)."""

    def __init__(self, name: str = "my-loop", warmup: int = 0, capacity: int = DEFAULT_CAPACITY,
                 alloc_blocks: bool = False, policy: str | None = None):
        if not isinstance(name, str) or not _NAME.match(name):
            raise UsageError(f"name must be letters, digits, '.', '_' or '-', got {name!r}")
        if policy is not None:
            if not isinstance(policy, str):
                raise UsageError(f"policy must be a GC policy name (default, freeze, disable, manual:K), got {policy!r}")
            gcpolicy.parse(policy)
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise UsageError(f"warmup must be a non-negative integer, got {warmup!r}")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or not 1 <= capacity <= MAX_CAPACITY:
            raise UsageError(f"capacity must be an integer from 1 to {MAX_CAPACITY:,}, got {capacity!r}")
        self.name = name
        self.warmup = warmup
        self.policy = policy
        self._warm = StepProbe(max(warmup, 1), alloc_blocks=alloc_blocks)
        try:
            self._timed = StepProbe(capacity, alloc_blocks=alloc_blocks)
        except MemoryError:
            raise UsageError(f"capacity={capacity:,} steps does not fit in memory: pass a smaller one") from None
        self._step = _Step(self)
        self._n = 0  # steps begun
        self._probe = self._warm if warmup else self._timed
        self._active = False
        self._in_step = False
        self.raised = 0  # steps that raised, not recorded
        self.gc_state: dict = {}

    # -- the context managers ---------------------------------------------------------
    def __enter__(self) -> Measurement:
        self._active = True
        self._probe.install()
        return self

    def __exit__(self, *exc) -> None:
        self._probe.uninstall()
        self._active = False

    def step(self) -> _Step:
        """The context manager for one step: `with m.step(): ...`."""
        return self._step

    def dispatched(self) -> None:
        """Inside a step: the step function has returned and what follows waits for its
        results (`jax.block_until_ready`). Called in every step, it records the host time
        of each step (Python and dispatch) beside its wall time."""
        if not self._in_step:
            raise UsageError("m.dispatched() belongs inside `with m.step():`")
        self._probe.dispatched()

    def _begin(self) -> None:
        if not self._active:
            raise UsageError("a step outside `with gcbench.measure(...)`")
        if self._in_step:
            raise UsageError("a step inside a step: `m.step()` brackets one step and does not nest")
        if self._n == self.warmup and self._probe is self._warm and self.warmup:
            self._warm.uninstall()
            self._probe = self._timed
            self._timed.install()
        if self._probe is self._timed and self._timed.steps >= self._timed.capacity:
            raise UsageError(f"more than {self._timed.capacity:,} timed steps: pass a larger capacity=")
        if self._probe is self._timed and self._timed.steps == 0:
            self.gc_state = {"gc_enabled": gc.isenabled(), "frozen_objects": gc.get_freeze_count(),
                             "gc_thresholds": list(gc.get_threshold())}
        self._probe.begin()
        self._in_step = True

    def _end(self) -> None:
        probe = self._probe
        probe.end(probe.steps)
        self._in_step = False
        self._n += 1

    def _abort(self) -> None:
        if self._in_step:
            self._probe.abort()
            self._in_step = False
            self.raised += 1

    # -- what was measured ----------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Timed steps measured so far (warm-up steps not counted)."""
        return self._timed.steps

    def result(self) -> dict:
        """A result document in the schema of a cell (backend `user`, workload = name)."""
        if not self._timed.steps:
            raise UsageError("no timed step was measured" + (f" (the first {self.warmup} steps are warm-up)"
                                                             if self.warmup else ""))
        # the policy the user named; else what can be told for sure: the collector was off, or
        # it was not. Frozen objects alone do not make a `freeze` loop: libraries freeze too
        # (the count is in gc_state).
        policy = self.policy or ("disable" if not self.gc_state.get("gc_enabled", True) else "default")
        cell = Cell("user", self.name, policy, 0, 1, 0, self._timed.steps, self.warmup, 0, 1)
        meta = metadata.collect()
        if "jax" in sys.modules:  # the loop used JAX: its devices, as gcbench's own cells record them
            meta.update(metadata.jax_devices())
        meta["command"] = ["gcbench.measure", self.name]
        warm = self._warm.arrays() if self.warmup else {"wall_ns": []}
        doc = results.new(cell, "ok", data={"kind": "user", "source": "the user's own loop"}, metadata=meta,
                          warmup={**warm, "loss": None}, **self._timed.arrays(),
                          gc_events=self._timed.event_log(), loss={"step": [], "value": []},
                          gc_state=self.gc_state, machine_state={"cpu_count": os.cpu_count(),
                                                                  "load_after": metadata.load_average()},
                          probe={"steps_raised": self.raised})  # steps that raised are not timed steps
        doc.pop("cell_spec", None)
        return results.validate(doc, "measurement")

    def summary(self) -> dict:
        """This loop as one flat record: `median_ms`, `gc_share` (a fraction), `full_per_1000`,
        `full_collections`, ... (the names of `--json` and `export --per cell`; README,
        "Result fields")."""
        from .summary import record, summarize

        return record(summarize([self.result()]))

    def save(self, folder: str | os.PathLike) -> pathlib.Path:
        """Write the result into `folder` as the next repeat of this loop; return its path."""
        doc = self.result()
        folder = files.make_folder(folder, "results folder")
        repeat = 0
        while True:  # the next free repeat number, claimed exclusively: concurrent saves never share one
            doc["repeat"] = repeat
            doc["cell"] = f"user__{self.name}__{doc['gc_policy']}__r{repeat}"
            path = folder / f"{doc['cell']}.json"
            if not path.exists():
                results.validate(doc, str(path))
                if files.write_new(path, files.json_bytes(doc, indent=None)):
                    return path
            repeat += 1


def measure(name: str = "my-loop", warmup: int = 0, capacity: int = DEFAULT_CAPACITY,
            alloc_blocks: bool = False, policy: str | None = None) -> Measurement:
    """Measure your own loop: `with gcbench.measure("name") as m: ... with m.step(): ...`.

    Arguments:
        name: what the loop is called in results and reports (letters, digits, . _ -).
        warmup: the first steps, recorded apart (compilation happens there).
        capacity: the most timed steps that will be measured (arrays are preallocated).
        alloc_blocks: also count allocated memory blocks per step (walks the heap: slow).
        policy: the GC policy your loop follows, as results name it (`freeze` if you call
            `gc.freeze()`, `manual:K`, ...); by default `disable` when the collector is off
            at the first timed step and `default` otherwise.

    Returns:
        A `Measurement`: a context manager whose `step()` brackets one step, with
        `result()`, `summary()` and `save(folder)`.
    """
    return Measurement(name, warmup, capacity, alloc_blocks, policy)
