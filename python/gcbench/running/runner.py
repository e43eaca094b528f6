"""The runner: one fresh worker process per repeat of a cell, with a timeout.

How it works, and why: docs/internals.md, `gcbench.running.runner`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

from ..core import files, machineload, metadata
from ..core.errors import UsageError
from ..measuring import results
from ..measuring.backends import get_backend
from ..measuring.cell import Cell
from ..measuring.results import ResultDoc
from ..measuring.worker import PARENT_ENV, RESULT_WRITTEN
from . import warm_workers
from .venvs import isolated_environ

STDERR_TAIL_LINES = 25


class Interrupted(BaseException):
    """SIGINT or SIGTERM reached the manager; `signum` says which."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextlib.contextmanager
def interruptible():
    """SIGINT and SIGTERM raise `Interrupted` while the block runs."""
    def handler(signum, frame):
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def unsupported_reason(cell: Cell) -> str | None:
    info = get_backend(cell.backend)
    if not info.supports(cell.workload):
        return f"{cell.backend} does not implement workload {cell.workload}"
    kind = cell.policy.partition(":")[0]
    if kind not in info.policies:
        return f"GC policy {kind} has no meaning for {cell.backend} ({info.language})"
    return None


def _worker_env(isolated: bool = False, extra: dict | None = None) -> dict:
    """The worker's environment variables, with `extra`'s. A worker in one of gcbench's
    virtual environments (`isolated`) sees nothing of the manager's packages: gcbench comes
    from the environment's own link to it, and PYTHONPATH and the user site are kept out."""
    if isolated:
        env = isolated_environ()
    else:  # workers import this very copy of gcbench, installed or not
        env = dict(os.environ)
        package_root = str(pathlib.Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_ENV] = str(os.getpid())
    # the run's first gcbench process: a worker's load reading leaves out it and all it started
    env[machineload.ROOT_ENV] = os.environ.get(machineload.ROOT_ENV) or str(os.getpid())
    return {**env, **(extra or {})}


def _tail(path: pathlib.Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


class CellFailed(Exception):
    pass


def partial_path(out_file: pathlib.Path) -> pathlib.Path:
    return out_file.with_name(f".{out_file.stem}.partial.json")


def run_worker(cell: Cell, out_file: pathlib.Path, command: list[str], timeout: float,
               bar: Progress | None, python: str = sys.executable, environment: dict | None = None,
               machine_state: dict | None = None, explain: dict | None = None, load=results.load,
               extra_env: dict | None = None, fork: Callable[..., Any] | None = None) -> Any:
    """Run `cell` in a worker process and return its result document, which is then at
    `out_file`; raise `CellFailed(reason)` if the worker does not finish with one. With
    `environment` (an `envs.Environment.describe()`), `python` is that environment's. With
    `explain` (its options), the worker makes the diagnostic run of `gcbench explain`, and
    `load` reads what it wrote: what `load` returns is returned (a `ResultDoc` with the
    default `results.load`). With `fork` (a `warm_workers.ServerPool.spawn` for the cell's
    backend), the worker is forked by that backend's server where it can be, and started
    as a fresh interpreter where not."""
    spec = json.dumps({"cell": cell.to_json(), "command": command, "environment": environment,
                       "machine_state": machine_state, "explain": explain})
    partial = partial_path(out_file)
    partial.unlink(missing_ok=True)
    fd, err_name = tempfile.mkstemp(prefix=files.owned_temp_prefix("stderr"), suffix=".txt")
    err_path = pathlib.Path(err_name)
    proc, written = None, False
    try:
        env = _worker_env(isolated=environment is not None, extra=extra_env)
        with os.fdopen(fd, "w") as err_file:
            proc = None if fork is None else fork(python, env, partial, err_file)
            if proc is None:
                proc = subprocess.Popen([python, "-m", "gcbench.child", str(partial)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_file,
                                        text=True, env=env, start_new_session=True)
        # a forked worker is left to end on its own once its result is written: the kernel frees
        # its memory (75 ms a GiB) while the next repeat forks and builds, before any timed step
        written = _follow(proc, spec, timeout, bar, err_path, isinstance(proc, warm_workers.ForkedWorker))
        return _outcome(proc.returncode, written, partial, out_file, err_path, load, crash_kept=explain is None)
    finally:
        _release(proc, written)
        err_path.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)


def _outcome(returncode: int, written: bool, partial: pathlib.Path, out_file: pathlib.Path,
             err_path: pathlib.Path, load: Callable[[pathlib.Path], Any], crash_kept: bool) -> Any:
    """What an ended worker leaves: its result, moved to `out_file`; where it crashed after
    completing its steps (`crash_kept`: a measured run), the result it did not spoil;
    else `CellFailed` with the tail of its error output."""
    if not written and returncode != 0:
        kept = _complete_before_crash(partial, returncode, load) if crash_kept else None
        if kept is None:
            raise _failed(returncode, _tail(err_path))
        results.write(kept, out_file)  # the crash, noted in the result it did not spoil
        return kept
    if not partial.is_file():
        raise CellFailed(f"worker wrote no result\n{_tail(err_path)}".rstrip())
    try:
        doc = load(partial)
    except UsageError as e:
        raise CellFailed(f"worker wrote an invalid result: {e}") from None
    partial.replace(out_file)
    return doc


def _release(proc, written: bool) -> None:
    """A forked worker that wrote its result is left to end on its own; any other is killed;
    its input is closed (its output is left to the reader thread, which ends at its end)."""
    if isinstance(proc, warm_workers.ForkedWorker) and written:
        proc.release()
    elif proc is not None:
        _kill(proc)
    with contextlib.suppress(OSError):
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()


def _send(proc, spec: str) -> None:
    """The spec as one line; stdin stays open: the worker treats its end as our death."""
    if proc.stdin is None:
        raise RuntimeError("the worker was started without a pipe to its standard input")
    try:
        proc.stdin.write(spec + "\n")
        proc.stdin.flush()
    except BrokenPipeError:  # the worker died before reading its cell: its exit code says why
        pass


def _follow(proc: subprocess.Popen | warm_workers.ForkedWorker, spec: str, timeout: float, bar: Progress | None,
            err_path: pathlib.Path, until_written: bool = False) -> bool:
    """Hand the worker its cell and follow it to its end: its progress lines to the bar,
    killed (a `CellFailed`) when it runs past `timeout`. With `until_written`, only until
    it says its result is written (then True)."""
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
    reader.start()
    _send(proc, spec)
    deadline = time.monotonic() + timeout
    while proc.poll() is None or not lines.empty() or reader.is_alive():
        if time.monotonic() > deadline:
            _kill(proc)
            raise CellFailed(f"timed out after {timeout:g} s\n{_tail(err_path)}".rstrip())
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if bar is not None and line.startswith("gcbench-progress "):
            bar.line(line)
        elif until_written and line.strip() == RESULT_WRITTEN:
            return True
    return False


def _failed(returncode: int, tail: str) -> CellFailed:
    """Why a worker that ended without a result failed: its own one-line reason (exit 2), a
    signal, or its exit code, with the tail of its standard error."""
    said = [line for line in tail.splitlines() if line.startswith("gcbench: ")]
    if returncode == 2 and said:  # the worker's own one-line reason
        return CellFailed(f"worker: {said[-1].removeprefix('gcbench: ')}\n{tail}".rstrip())
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
    return CellFailed(f"worker {how}\n{tail}".rstrip())


def _complete_before_crash(partial: pathlib.Path, returncode: int, load=results.load) -> ResultDoc | None:
    """The result a worker wrote whole before it crashed (a Julia worker's exit hook can
    segfault after the result is on disk: PythonCall issue #764), with the crash noted in
    its reason (the Julia exit hook named only for a Julia backend's worker); None where
    there is no complete, valid, ok result to keep."""
    if returncode == 2 or not partial.is_file():  # 2: the worker's own refusal, never a crash after the fact
        return None
    try:
        doc = load(partial)
    except UsageError:
        return None
    if doc.status != "ok":
        return None
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
    why = " (a Julia exit hook with several threads: PythonCall issue #764)" \
        if get_backend(doc.backend).language == "julia" else ""
    doc.reason = f"kept: the worker ended with {how} after writing this complete result{why}"
    return doc


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


class KindETA:
    """The time left in a run, from what each kind of cell (backend, workload, steps) took
    so far: a ViT cell and an MLP cell differ tenfold, so one rate of steps over every
    cell swung the estimate by half as the kinds came and went (56, 28, 34 minutes in one
    25-minute run). Kinds not run yet take the mean time per step of those that have;
    None until a cell has finished."""

    def __init__(self, cells: list[Cell], clock=time.monotonic):
        self.left = {id(c): c for c in cells}
        self.clock = clock
        self.took: dict[tuple, list[float]] = {}
        self._started: dict[int, float] = {}

    @staticmethod
    def kind(cell: Cell) -> tuple:
        return cell.backend, cell.workload, cell.steps, cell.warmup

    def start(self, cell: Cell) -> None:
        self._started[id(cell)] = self.clock()

    def finish(self, cell: Cell) -> None:
        began = self._started.pop(id(cell), None)
        if self.left.pop(id(cell), None) is not None and began is not None:
            self.took.setdefault(self.kind(cell), []).append(self.clock() - began)

    def seconds(self) -> float | None:
        if not self.took:
            return None
        per_step = sum(sum(v) for v in self.took.values()) / sum(
            len(v) * (k[2] + k[3]) for k, v in self.took.items())
        total = 0.0
        for id_, cell in self.left.items():
            known = self.took.get(self.kind(cell))
            guess = sum(known) / len(known) if known else per_step * (cell.steps + cell.warmup)
            if id_ in self._started:  # running: what is left of it
                guess = max(guess - (self.clock() - self._started[id_]), 0.0)
            total += guess
        return total


class Progress:
    """Two bars on standard error: every cell's steps together (`overall`: warm-up and timed
    steps of every cell to run, with the ETA of the whole run) and the current cell's
    phase (`cell`: its warm-up and its timed steps counted apart, so that each has its own
    rate and ETA). Lines said meanwhile go above the bars (`tqdm.write`), never glued to them."""

    def __init__(self, cells: list[Cell], stream):
        self.stream = stream
        self.overall = tqdm(total=sum(c.warmup + c.steps for c in cells), desc="all cells", unit="step",
                            dynamic_ncols=True, position=0, leave=False, file=sys.stderr,
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")
        self.cell = None
        self._phase = None
        self._done = 0  # steps of the current cell already counted in `overall`
        self._warmup = 0
        self.eta = KindETA(cells)

    def eta_text(self) -> str:
        left = self.eta.seconds()
        return "" if left is None else f"left ~{_duration(left)} (by cell kind)"

    def say(self, *parts) -> None:
        tqdm.write(" ".join(map(str, parts)), file=self.stream)
        self.stream.flush()

    def start(self, cell: Cell, desc: str) -> None:
        self.eta.start(cell)
        self.overall.set_postfix_str(self.eta_text(), refresh=True)
        self.cell = tqdm(total=0, desc=desc, unit="step", dynamic_ncols=True, position=1, leave=False,
                         file=sys.stderr)
        self._phase, self._done, self._warmup = None, 0, cell.warmup

    def line(self, line: str) -> None:
        """A worker's `gcbench-progress PHASE DONE TOTAL`."""
        parts = line.split()
        if self.cell is None or len(parts) != 4 or not (parts[2].isdigit() and parts[3].isdigit()):
            return
        _, phase, done, total = parts[0], parts[1], int(parts[2]), int(parts[3])
        if phase != self._phase:  # a new phase: a bar of its own (its rate is not the warm-up's)
            self._phase = phase
            self.cell.reset(total=total)
            self.cell.set_postfix_str({"build": "building", "warmup": "warm-up (compiling)"}.get(phase, phase),
                                      refresh=False)
        self.cell.n = done
        self.cell.refresh()
        if phase in ("warmup", "timed"):
            counted = done if phase == "warmup" else self._warmup + done
            self.overall.update(max(0, counted - self._done))
            self._done = max(self._done, counted)

    def finish(self, cell: Cell) -> None:
        """The cell is done (or skipped): all its steps count, whatever the worker said."""
        self.eta.finish(cell)
        self.overall.set_postfix_str(self.eta_text(), refresh=False)
        self.overall.update(max(0, cell.warmup + cell.steps - self._done))
        if self.cell is not None:
            self.cell.close()
        self.cell, self._done = None, 0

    def close(self) -> None:
        self.overall.close()


def _pump(stream, lines: queue.Queue) -> None:
    with contextlib.suppress(ValueError, OSError):
        for line in stream:
            lines.put(line)


def _kill(proc: subprocess.Popen | warm_workers.ForkedWorker) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()


def reusable(doc: ResultDoc | None, cell: Cell, data_kind: str | None) -> bool:
    """Whether an existing result answers the same question as `cell` (for --resume)."""
    if doc is None or doc.status != "ok":
        return False
    spec = dict(doc.cell_spec or {})
    spec.pop("data_path", None)
    return spec == cell.settings() and (data_kind is None or doc.data.get("kind") == data_kind)


def existing(out_file: pathlib.Path) -> ResultDoc | None:
    """The result already at `out_file`, or None (none, or unreadable)."""
    if not out_file.is_file():
        return None
    try:
        return results.load(out_file)
    except UsageError:
        return None


def check_resumable(cells: list[Cell], out_dir: pathlib.Path) -> None:
    """Refuse, before anything runs, to resume into a folder holding a result of the plan
    that cannot be read (a newer schema, no permission, corrupt): resuming would replace
    it, and only --force may replace results."""
    for cell in cells:
        out_file = out_dir / f"{cell.id}.json"
        if out_file.exists() or out_file.is_symlink():
            try:
                results.load(out_file)
            except UsageError as e:
                raise UsageError(f"--resume would replace a result it cannot read: {str(e).splitlines()[0]}; "
                                 "move it away, or use --force to replace it") from None


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """How `run_cells` runs its cells, beside what they are and where they go.

    `log` says each line; `progress=None` shows bars only on a terminal. `environments`
    maps each cell's `env` to its `envs.Environment`, or to the `envs.EnvUnavailable` that
    kept it from being built: that environment's cells are recorded as unavailable with the
    reason. With `resume`, a cell whose ok result with the same settings is already there is
    not run again; `data_kind` is the data those results must have used. `run_id` names the
    invocation (its repeats with one repeat number form a round; a new one by default);
    `scheduler` is the job this runs in (`cluster.job_facts`), recorded in each result's
    `machine_state`. `cache`: the compilation cache folder (`compile_cache`) of an
    invocation that runs cells in several calls (replacement repeats), so that its later
    cells load what its first compiled. `fork_workers`: each Python backend's repeats are
    forked from a server that imported the backend once (`warm_workers`); False starts a
    fresh interpreter for every repeat, as gcbench before 0.4 did; `servers`: the worker
    servers of an invocation that runs cells in several calls, kept for its later calls.
    """

    log: Callable[..., None] = print
    progress: bool | None = None
    environments: dict | None = None  # None: no environments (gcbench's own interpreter)
    resume: bool = False
    data_kind: str | None = None
    run_id: str | None = None
    scheduler: dict | None = None
    cache: str | None = None
    fork_workers: bool = True
    servers: warm_workers.ServerPool | None = None  # an invocation's, kept across its calls (and not closed here)


def run_cells(cells: list[Cell], out_dir: pathlib.Path, command: list[str], timeout: float,
              settings: RunSettings | None = None) -> list[ResultDoc]:
    """Run every cell, writing `out_dir/<cell>.json`; return the documents in plan order.

    A new result that is not ok never replaces an ok one. `Interrupted` and
    KeyboardInterrupt propagate after the current worker is stopped; every finished cell
    is on disk by then. `settings` (`RunSettings`): how.
    """
    s = settings or RunSettings()
    if s.resume:
        check_resumable(cells, out_dir)
    show_bars = sys.stderr.isatty() if s.progress is None else s.progress
    log = s.log
    with contextlib.nullcontext(s.cache) if s.cache else compile_cache() as folder, \
            contextlib.nullcontext(s.servers) if s.servers else warm_workers.ServerPool(enabled=s.fork_workers) \
            as servers:
        batch = _Batch(cells, out_dir, command, timeout, log, s.environments or {}, s.resume, s.data_kind,
                       compile_cache_env(folder), s.run_id or new_run_id(), s.scheduler, servers)
        bars = Progress(cells, getattr(log, "stream", sys.stdout)) if show_bars else None
        if bars is not None:
            batch.log, batch.progress = bars.say, bars
        servers.log = batch.log
        try:
            return _run_each(batch)
        finally:
            if bars is not None:
                bars.close()


@dataclasses.dataclass
class _Batch:
    """One `run_cells` call: what running each of its cells needs, and what it has said."""

    cells: list[Cell]
    out_dir: pathlib.Path
    command: list[str]
    timeout: float
    log: Callable[..., None]
    environments: dict
    resume: bool
    data_kind: str | None
    cache_env: dict
    run_id: str
    scheduler: dict | None
    servers: warm_workers.ServerPool
    progress: Progress | None = None
    why_not: dict[str, str] = dataclasses.field(default_factory=dict)  # backends this interpreter cannot run
    announced: set[str] = dataclasses.field(default_factory=set)  # reasons said once already


@contextlib.contextmanager
def compile_cache():
    """A temporary folder for JAX's persistent compilation cache, for one invocation."""
    for kind in ("jax-cache", "stderr"):  # what runs killed with SIGKILL left behind
        files.sweep_stale_temps(kind)
    with tempfile.TemporaryDirectory(prefix=files.owned_temp_prefix("jax-cache")) as folder:
        yield folder


def new_run_id() -> str:
    """A name for one invocation: its repeats with one repeat number form a round."""
    return uuid.uuid4().hex


def compile_cache_env(folder: str) -> dict:
    """JAX's persistent compilation cache in `folder`, for every program however quick to
    compile: the repeats of a cell (and its other policies) load what the first compiled.
    Only the warm-up, which is recorded apart, gets shorter; the programs are the same."""
    return {"JAX_COMPILATION_CACHE_DIR": folder, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def cache_safe(environment: dict | None) -> bool:
    """Whether the persistent compilation cache may be used: jaxlib before 0.5 aborts
    ("corrupted double-linked list", seen with 0.4.38 on CPU) when it loads a cached
    program, so environments with an older jaxlib compile every time."""
    if environment is None:
        return True
    from .venvs import version_key

    jaxlib = (environment.get("packages") or {}).get("jaxlib")
    return jaxlib is None or version_key(jaxlib) >= version_key("0.5")


def _unavailable(backend: str) -> str | None:
    """Why a backend cannot run in this interpreter; None where it can."""
    ok, why = get_backend(backend).availability()
    return None if ok else why


def _unavailable_backends(cells, log) -> dict[str, str]:
    """Why each backend that cannot run in this interpreter cannot, said before any cell runs,
    in one line per reason: the three Julia backends share theirs."""
    here = [c for c in cells if c.env is None and unsupported_reason(c) is None]
    why_not = {b: why for b in dict.fromkeys(c.backend for c in here) if (why := _unavailable(b)) is not None}
    by_reason: dict[str, list[str]] = {}
    for backend, why in why_not.items():
        by_reason.setdefault(why, []).append(backend)
    for why, backends in by_reason.items():
        count = sum(c.backend in backends for c in here)
        log(f"{', '.join(backends)}: unavailable: {why} ({count} cells recorded as unavailable)")
    return why_not


def _repeats_of(cells: list[Cell]) -> dict[tuple, int]:
    """Each cell's repeats in this plan: its runs are named r1/3, r2/3, ..."""
    repeats: dict[tuple, int] = {}
    for c in cells:
        key = (c.backend, c.workload, c.policy, c.env)
        repeats[key] = max(repeats.get(key, 0), c.repeat + 1)
    return repeats


def _run_each(batch: _Batch) -> list[ResultDoc]:
    cells = batch.cells
    docs = []  # repeats of one run_id with one repeat number share a round
    batch.why_not = _unavailable_backends(cells, batch.log)
    batch.announced.update(batch.why_not)  # their other cells (a policy they do not support) need no line of their own
    # numbered among the cells that will run: those of a backend that cannot run here are said once above
    runnable = [c for c in cells if c.backend not in batch.why_not and unsupported_reason(c) is None]
    repeats = _repeats_of(cells)
    number = {c.id: f"{i}/{len(runnable)}" for i, c in enumerate(runnable, 1)}
    if batch.progress is not None:  # the bar and its ETA count only the steps that will run
        batch.progress.overall.total = sum(c.warmup + c.steps for c in runnable)
        batch.progress.overall.refresh()
    _start_servers(batch, runnable)
    last = {(c.backend, c.env): i for i, c in enumerate(cells)}  # where each backend's server can go
    for i, cell in enumerate(cells):
        of = repeats[cell.backend, cell.workload, cell.policy, cell.env]
        docs.append(_run_one(f"[{number.get(cell.id, '-')}] {cell.label_of(of)}", cell, batch))
        if batch.progress is not None and cell.id in number:
            batch.progress.finish(cell)
        if last[cell.backend, cell.env] == i:
            batch.servers.done(cell.backend, _python(cell, batch))
    return docs


def _start_servers(batch: _Batch, runnable: list[Cell]) -> None:
    """A worker server for each forking backend with a cell to run in this interpreter (not
    one whose results `--resume` keeps), all starting at once: their imports overlap, before
    any step is timed."""
    first = {c.backend: c for c in reversed(runnable) if c.env is None and not (
        batch.resume and reusable(existing(batch.out_dir / f"{c.id}.json"), c, batch.data_kind))}
    for backend, c in reversed(first.items()):
        if warm_workers.forks(get_backend(backend).language):
            batch.servers.start(backend, sys.executable, _worker_env(extra=batch.cache_env), (c.data_path, c.seed))
    batch.servers.wait_all()


def _python(cell: Cell, batch: _Batch) -> str:
    """The interpreter `cell`'s worker runs in: its environment's, or this one."""
    env = None if cell.env is None else batch.environments.get(cell.env)
    return sys.executable if env is None or isinstance(env, Exception) else env.python


def _announce_environment(cell: Cell, batch: _Batch) -> None:
    """An environment that could not be built, said once for all its cells."""
    if cell.env is not None and cell.env not in batch.announced:
        batch.announced.add(cell.env)
        count = sum(c.env == cell.env for c in batch.cells)
        batch.log(f"environment {cell.env_spec.name}: unavailable ({count} cells recorded as unavailable)")


def _not_runnable(cell: Cell, batch: _Batch) -> tuple[str | None, dict]:
    """Why `cell` cannot run (said once per reason), or None and `run_worker`'s arguments for
    its environment."""
    env = None if cell.env is None else batch.environments[cell.env]
    reason = unsupported_reason(cell)
    if env is not None and reason is None:
        if isinstance(env, Exception):
            _announce_environment(cell, batch)
            return f"environment {cell.env_spec.name}: {env}", {}
        return None, {"python": env.python, "environment": env.describe()}
    if reason is None:  # this interpreter: asked once, above; an environment's worker asks there
        return batch.why_not.get(cell.backend), {}
    if cell.backend not in batch.announced and reason not in batch.announced:  # once per reason, not per repeat
        _announce(batch, reason)
    return reason, {}


def _announce(batch: _Batch, reason: str) -> None:
    """Say once which cells a reason keeps from running (a policy a backend does not support)."""
    batch.announced.add(reason)
    alike = [c for c in batch.cells if c.backend not in batch.why_not and unsupported_reason(c) == reason]
    labels = list(dict.fromkeys(f"{c.backend}/{c.workload}/{c.policy}" for c in alike))
    batch.log(f"{', '.join(labels[:4])}{' and more' if len(labels) > 4 else ''}: not run: {reason} "
              f"({len(alike)} runs recorded as unavailable)")


def _ended(doc: ResultDoc, seconds: float) -> str:
    """How a repeat ended, for the run's log: `ok in 4.2 s`, or its status and first reason line."""
    if doc.status == "ok":
        return f"ok in {seconds:.1f} s"
    return f"{doc.status}: {doc.reason.splitlines()[0] if doc.reason else ''}"


def _run_one(desc: str, cell: Cell, batch: _Batch) -> ResultDoc:
    out_file = batch.out_dir / f"{cell.id}.json"
    old = existing(out_file)
    if batch.resume and old is not None and reusable(old, cell, batch.data_kind):
        batch.log(f"{desc}: kept (an ok result with the same settings is there)")
        return old
    reason, in_env = _not_runnable(cell, batch)
    if reason is not None:
        return keep(results.new(cell, "unavailable", reason), old, out_file, desc, batch.log)
    if batch.progress is not None:
        batch.progress.start(cell, desc)
    t0 = time.monotonic()
    state = {"load_before": metadata.load_average(), "run_id": batch.run_id,
             **({"scheduler": batch.scheduler} if batch.scheduler else {})}
    try:
        fork = functools.partial(batch.servers.spawn, cell.backend, data=(cell.data_path, cell.seed)) \
            if warm_workers.forks(get_backend(cell.backend).language) else None
        doc = run_worker(cell, out_file, batch.command, batch.timeout, batch.progress, machine_state=state,
                         extra_env=batch.cache_env if cache_safe(in_env.get("environment")) else None, fork=fork,
                         **in_env)
        batch.log(f"{desc}: {_ended(doc, time.monotonic() - t0)}")
    except CellFailed as e:
        batch.log(f"{desc}: FAILED: {str(e).splitlines()[0]}")
        doc = keep(results.new(cell, "failed", str(e), **({"environment": in_env["environment"]} if in_env else {})),
                   old, out_file, desc, batch.log)
    return doc


def keep(doc: ResultDoc, old: ResultDoc | None, out_file: pathlib.Path, desc: str, log) -> ResultDoc:
    """Write a result that is not ok, unless it would replace an ok one: then keep that
    (marked `superseded` when this run's attempt failed, so that the run counts the failure)."""
    if old is not None and old.status == "ok":
        log(f"{desc}: kept the earlier ok result instead of this {doc.status} one")
        return dataclasses.replace(old, superseded=True) if doc.status == "failed" else old
    try:
        results.write(doc, out_file)
    except UsageError as e:
        log(f"{desc}: {e}")
        doc = dataclasses.replace(doc, reason=f"{doc.reason}\n(not saved: {e})".strip())
    return doc
