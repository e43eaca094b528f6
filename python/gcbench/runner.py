"""The runner: one fresh worker process per cell, with a timeout, progress and summary.

A cell whose worker crashes or times out becomes a `failed` result holding the tail of
the worker's standard error; the other cells go on. Ctrl-C stops the current worker and
keeps every finished cell.
"""

from __future__ import annotations

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

from tqdm import tqdm

from . import results
from .backends import get_backend
from .config import Cell
from .envs import isolated_environ

STDERR_TAIL_LINES = 25


def _unsupported_reason(cell: Cell) -> str | None:
    info = get_backend(cell.backend)
    if not info.supports(cell.workload):
        return f"{cell.backend} does not implement workload {cell.workload}"
    kind = cell.policy.partition(":")[0]
    if kind not in info.policies:
        return f"GC policy {kind} has no meaning for {cell.backend} ({info.language})"
    return None


def _worker_env(isolated: bool = False) -> dict:
    """The worker's environment variables. A worker in one of gcbench's virtual environments
    (`isolated`) sees nothing of the manager's packages: gcbench comes from the environment's
    own link to it, and PYTHONPATH and the user site are kept out."""
    if isolated:
        env = isolated_environ()
    else:  # workers import this very copy of gcbench, installed or not
        env = dict(os.environ)
        package_root = str(pathlib.Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _tail(path: pathlib.Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


class CellFailed(Exception):
    pass


def run_worker(cell: Cell, out_file: pathlib.Path, command: list[str], timeout: float,
               bar: tqdm | None, python: str = sys.executable, environment: dict | None = None) -> None:
    """Run `cell` in a worker process; raise `CellFailed(reason)` if it does not finish.
    With `environment` (an `envs.Environment.describe()`), `python` is that environment's."""
    spec = json.dumps({"cell": cell.to_json(), "command": command, "environment": environment})
    with tempfile.NamedTemporaryFile("w+", prefix="gcbench-stderr-", suffix=".txt", delete=False) as err:
        err_path = pathlib.Path(err.name)
    try:
        with open(err_path, "w") as err_file:
            proc = subprocess.Popen(
                [python, "-m", "gcbench.worker", str(out_file)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_file,
                text=True, env=_worker_env(isolated=environment is not None), start_new_session=True,
            )
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
        reader.start()
        try:
            proc.stdin.write(spec)
            proc.stdin.close()
        except BrokenPipeError:  # the worker died before reading its cell: its exit code says why
            pass
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None or not lines.empty() or reader.is_alive():
                if time.monotonic() > deadline:
                    _kill(proc)
                    raise CellFailed(f"timed out after {timeout:g} s\n{_tail(err_path)}".rstrip())
                try:
                    line = lines.get(timeout=0.1)
                except queue.Empty:
                    continue
                if bar is not None and line.startswith("gcbench-progress "):
                    _, phase, done, total = line.split()
                    bar.set_postfix_str(phase, refresh=False)
                    bar.total = int(total)
                    bar.n = int(done)
                    bar.refresh()
        except BaseException:
            _kill(proc)
            raise
        if proc.returncode != 0:
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
            raise CellFailed(f"worker {how}\n{_tail(err_path)}".rstrip())
        if not out_file.is_file():
            raise CellFailed(f"worker wrote no result\n{_tail(err_path)}".rstrip())
    finally:
        err_path.unlink(missing_ok=True)


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()


def run_cells(cells: list[Cell], out_dir: pathlib.Path, command: list[str], timeout: float,
              log=print, progress: bool | None = None, environments: dict | None = None) -> list[dict]:
    """Run every cell, writing `out_dir/<cell>.json`; return the documents in cell order.

    `environments` maps each cell's `env` to its `envs.Environment`, or to the
    `envs.EnvUnavailable` that kept it from being built: that environment's cells are
    recorded as unavailable with the reason. `progress=None` shows bars only on a terminal.
    KeyboardInterrupt propagates after the current worker is stopped; every finished cell
    is on disk by then.
    """
    show_bars = sys.stderr.isatty() if progress is None else progress
    docs = []
    announced: set[str] = set()
    for n, cell in enumerate(cells, 1):
        out_file = out_dir / f"{cell.id}.json"
        env = None if cell.env is None else environments[cell.env]
        reason = _unsupported_reason(cell)
        in_env = {}  # run_worker's arguments for a cell in a built environment
        if env is not None and reason is None:
            if isinstance(env, Exception):
                reason = f"environment {cell.env_spec.name}: {env}"
                if cell.env not in announced:
                    announced.add(cell.env)
                    count = sum(c.env == cell.env for c in cells)
                    log(f"environment {cell.env_spec.name}: unavailable ({count} cells recorded as unavailable)")
            else:
                in_env = {"python": env.python, "environment": env.describe()}
        elif reason is None:  # this interpreter: ask here, once per backend; an environment's worker asks there
            ok, why = get_backend(cell.backend).availability()
            if not ok:
                reason = why
                if cell.backend not in announced:  # one line per backend, not one per cell
                    announced.add(cell.backend)
                    count = sum(c.backend == cell.backend for c in cells)
                    log(f"{cell.backend}: unavailable: {why} ({count} cells recorded as unavailable)")
        elif cell.backend not in announced:
            log(f"[{n}/{len(cells)}] {cell.label}: not run: {reason}")
        if reason is not None:
            doc = results.new(cell, "unavailable", reason)
            results.write(doc, out_file)
            docs.append(doc)
            continue
        out_file.unlink(missing_ok=True)
        desc = f"[{n}/{len(cells)}] {cell.label}"
        bar = tqdm(total=cell.steps, desc=desc, unit="step", dynamic_ncols=True) if show_bars else None
        t0 = time.monotonic()
        try:
            run_worker(cell, out_file, command, timeout, bar, **in_env)
            doc = results.load(out_file)
            status = f"ok in {time.monotonic() - t0:.1f} s" if doc["status"] == "ok" else \
                f"{doc['status']}: {doc['reason'].splitlines()[0] if doc['reason'] else ''}"
        except CellFailed as e:
            doc = results.new(cell, "failed", str(e),
                              **({"environment": in_env["environment"]} if in_env else {}))
            results.write(doc, out_file)
            status = "FAILED: " + str(e).splitlines()[0]
        finally:
            if bar is not None:
                bar.close()
        log(f"{desc}: {status}")
        docs.append(doc)
    return docs
