"""Warm workers (running.warm_workers, gcbench.worker_server): a repeat forked from a server
that imported its backend is measured as a fresh interpreter's repeat is, and whatever a
server cannot do is done the old way without losing the repeat."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest

from gcbench.measuring import results
from gcbench.measuring.cell import Cell
from gcbench.running import runner, warm_workers

pytestmark = pytest.mark.skipif(not warm_workers.forks("python"), reason="worker servers fork: Linux only")


def _cell(steps: int = 20, repeat: int = 0, backend: str = "jax", workload: str = "mlp") -> Cell:
    return Cell(backend, workload, "default", repeat, 1, 0, steps, 2, 0, 10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_repeats_are_forked_from_one_server_and_say_so(tmp_path):
    said: list[str] = []
    with warm_workers.ServerPool(log=said.append) as pool:
        docs, pids = [], set()
        for repeat in range(2):
            cell = _cell(repeat=repeat)
            docs.append(runner.run_worker(cell, tmp_path / f"{cell.id}.json", ["t"], 300, None,
                                          fork=lambda *a: _note_pid(pool.spawn("jax", *a), pids)))
        servers = list(pool._servers.values())
    assert [d.status for d in docs] == ["ok", "ok"]
    assert [results.part(d, "machine_state").get("worker") for d in docs] == ["forked", "forked"]
    assert len(servers) == 1
    assert len(pids) == 2
    assert said == []
    assert servers[0]._proc.poll() is not None  # closed with the pool


def _note_pid(proc, pids: set):
    assert proc is not None
    pids.add(proc.pid)
    return proc


def test_a_fresh_interpreter_is_the_default_without_a_pool(tmp_path):
    cell = _cell(steps=5)
    doc = runner.run_worker(cell, tmp_path / "c.json", ["t"], 300, None)
    assert results.part(doc, "machine_state").get("worker") == "interpreter"


@pytest.mark.e2e
@pytest.mark.parametrize(("backend", "workload", "steps"), [("jax", "mlp", 400), ("equinox-filter", "vit", 60)])
def test_a_forked_repeat_collects_as_a_fresh_interpreter_does(tmp_path, backend, workload, steps):
    """The same cell, forked and in a fresh interpreter: the same collections of every
    generation at the same steps (the server imports what the worker imports, in the order
    a fresh worker does, `worker.preload`, and loads the run's data as it does). With one
    hash seed for both: fresh interpreters with seeds of their own could differ among
    themselves by a young collection (a dictionary's size, a set's order), which would move
    the phase of the oldest generation's."""
    cell = _cell(steps=steps, backend=backend, workload=workload)
    seed = {"PYTHONHASHSEED": "1234"}
    fresh = runner.run_worker(cell, tmp_path / "fresh.json", ["t"], 600, None, extra_env=seed)
    with warm_workers.ServerPool() as pool:
        forked = runner.run_worker(cell, tmp_path / "forked.json", ["t"], 600, None, extra_env=seed,
                                   fork=lambda *a: pool.spawn(backend, *a, data=(cell.data_path, cell.seed)))
    assert results.part(forked, "machine_state").get("worker") == "forked"
    a, b = np.asarray(fresh.gc_collections), np.asarray(forked.gc_collections)
    assert a.sum(axis=0).tolist() == b.sum(axis=0).tolist()
    assert np.nonzero(a[:, 2])[0].tolist() == np.nonzero(b[:, 2])[0].tolist()  # full collections at the same steps


def test_a_forked_worker_past_its_timeout_is_killed_and_the_server_goes_on(tmp_path):
    with warm_workers.ServerPool() as pool:
        pids: set[int] = set()
        with pytest.raises(runner.CellFailed, match="timed out"):
            runner.run_worker(_cell(steps=200_000), tmp_path / "slow.json", ["t"], 2, None,
                              fork=lambda *a: _note_pid(pool.spawn("jax", *a), pids))
        (slow,) = pids
        assert _gone_within(slow, 5)
        doc = runner.run_worker(_cell(steps=5), tmp_path / "next.json", ["t"], 300, None,
                                fork=lambda *a: pool.spawn("jax", *a))
    assert results.part(doc, "machine_state").get("worker") == "forked"


def test_a_forked_worker_killed_fails_its_cell_with_the_signal(tmp_path):
    import threading

    with warm_workers.ServerPool() as pool:
        pids: set[int] = set()

        def kill_when_started():
            deadline = time.monotonic() + 60
            while not pids and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)
            os.kill(next(iter(pids)), signal.SIGKILL)

        killer = threading.Thread(target=kill_when_started)
        killer.start()
        with pytest.raises(runner.CellFailed, match="killed by signal 9"):
            runner.run_worker(_cell(steps=200_000), tmp_path / "k.json", ["t"], 300, None,
                              fork=lambda *a: _note_pid(pool.spawn("jax", *a), pids))
        killer.join()
        assert not (tmp_path / "k.json").exists()
        doc = runner.run_worker(_cell(steps=5), tmp_path / "next.json", ["t"], 300, None,
                                fork=lambda *a: pool.spawn("jax", *a))
    assert results.part(doc, "machine_state").get("worker") == "forked"


def test_a_dead_server_falls_back_to_fresh_interpreters_and_says_so_once(tmp_path):
    said: list[str] = []
    with warm_workers.ServerPool(log=said.append) as pool:
        first = runner.run_worker(_cell(steps=5), tmp_path / "a.json", ["t"], 300, None,
                                  fork=lambda *a: pool.spawn("jax", *a))
        (server,) = pool._servers.values()
        os.killpg(server._proc.pid, signal.SIGKILL)
        server._proc.wait()
        later = [runner.run_worker(_cell(steps=5, repeat=r), tmp_path / f"{r}.json", ["t"], 300, None,
                                   fork=lambda *a: pool.spawn("jax", *a)) for r in (1, 2)]
    assert results.part(first, "machine_state").get("worker") == "forked"
    assert [results.part(d, "machine_state").get("worker") for d in later] == ["interpreter", "interpreter"]
    assert len(said) == 1
    assert said[0].startswith("jax: each repeat starts a fresh interpreter instead of a forked worker")


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_every_server_is_forked_from_one_base_that_imported_the_worker_once(tmp_path):
    """Each backend's server is forked from the interpreter's base server (gcbench's worker,
    0.5 s of imports, imported once) and forks its own repeats; the pool ends them all."""
    with warm_workers.ServerPool() as pool:
        pids: set[int] = set()
        docs = [runner.run_worker(_cell(steps=5, backend=b), tmp_path / f"{b}.json", ["t"], 300, None,
                                  fork=lambda *a, b=b: _note_pid(pool.spawn(b, *a), pids))
                for b in ("jax", "jax-vmap")]
        (base,) = pool._bases.values()
        servers = list(pool._servers.values())
        assert [s.backend for s in servers] == ["jax", "jax-vmap"]
        assert {_parent_of(s._proc.pid) for s in servers} == {base._proc.pid}
    assert [results.part(d, "machine_state").get("worker") for d in docs] == ["forked", "forked"]
    assert [s._proc.returncode for s in servers] == [0, 0]
    assert base._proc.returncode == 0


def test_a_dead_base_leaves_its_servers_to_fresh_interpreters_and_says_so_once_each(tmp_path):
    said: list[str] = []
    with warm_workers.ServerPool(log=said.append) as pool:
        pool.start("jax", runner.sys.executable, runner._worker_env())
        (base,) = pool._bases.values()
        os.killpg(base._proc.pid, signal.SIGKILL)
        docs = [runner.run_worker(_cell(steps=5, repeat=r), tmp_path / f"{r}.json", ["t"], 300, None,
                                  fork=lambda *a: pool.spawn("jax", *a)) for r in (0, 1)]
    assert [d.status for d in docs] == ["ok", "ok"]
    assert [results.part(d, "machine_state").get("worker") for d in docs] == ["interpreter", "interpreter"]
    assert len(said) == 1
    assert said[0].startswith("jax: each repeat starts a fresh interpreter instead of a forked worker")
    assert "the base worker server ended" in said[0]


def test_a_server_that_cannot_start_is_said_and_the_repeat_still_runs(tmp_path):
    said: list[str] = []
    with warm_workers.ServerPool(log=said.append) as pool:
        doc = runner.run_worker(_cell(steps=5), tmp_path / "a.json", ["t"], 300, None,
                                fork=lambda python, *a: pool.spawn("no-such-backend", python, *a))
    assert doc.status == "ok"
    assert results.part(doc, "machine_state").get("worker") == "interpreter"
    assert len(said) == 1
    assert "no-such-backend" in said[0]
    assert "ended (exit code" in said[0]


def test_closing_the_pool_ends_the_server_and_the_worker_it_runs(tmp_path):
    pool = warm_workers.ServerPool()
    env = runner._worker_env()
    with open(tmp_path / "err.txt", "w") as err:
        proc = pool.spawn("jax", runner.sys.executable, env, tmp_path / "never.json", err)
    assert proc is not None
    proc.stdin.write(json.dumps({"cell": _cell(steps=200_000).to_json(), "command": ["t"]}) + "\n")
    proc.stdin.flush()
    (server,) = pool._servers.values()
    time.sleep(1.0)  # well inside its 200,000 steps
    assert proc.poll() is None
    pool.close()
    assert server._proc.returncode is not None
    assert _gone_within(proc.pid, 5)


def test_a_server_whose_exit_lines_were_never_read_ends_cleanly(tmp_path):
    """The runner releases a worker once its result is written and never reads its `exit`
    line; closing a socket with unread data resets the connection. The server took the
    reset for an error: a traceback and the interpreter's teardown of JAX, 0.3 s a server at
    the end of every run. Now it is the runner gone: exit code 0, and every server of a pool
    is hung up on before any is waited for."""
    import select

    with warm_workers.ServerPool() as pool:
        cell = _cell(steps=5)
        pids: set[int] = set()
        doc = runner.run_worker(cell, tmp_path / "c.json", ["t"], 300, None,
                                fork=lambda *a: _note_pid(pool.spawn("jax", *a), pids))
        assert doc.status == "ok"
        (server,) = pool._servers.values()
        assert _gone_within(pids.pop(), 30)
        ready, _, _ = select.select([server._sock], [], [], 30)  # its `exit` line, left unread
        assert ready
    assert server._proc.returncode == 0


def test_a_runner_killed_takes_its_server_and_worker_with_it(tmp_path):
    """SIGKILL of the process that runs the cells (no `finally` runs): the server dies with it
    (PR_SET_PDEATHSIG), the worker with the server."""
    import subprocess
    import sys

    script = tmp_path / "runner.py"
    script.write_text(
        "import sys, time\n"
        "from gcbench.running import runner, warm_workers\n"
        "pool = warm_workers.ServerPool()\n"
        f"err = open({str(tmp_path / 'err.txt')!r}, 'w')\n"
        f"proc = pool.spawn('jax', sys.executable, runner._worker_env(), {str(tmp_path / 'x.json')!r}, err)\n"
        "(server,) = pool._servers.values()\n"
        "print(server._proc.pid, proc.pid, flush=True)\n"
        "time.sleep(600)\n")
    manager = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        server_pid, worker_pid = map(int, manager.stdout.readline().split())
        assert _alive(server_pid)
        assert _alive(worker_pid)
        manager.kill()
        manager.wait()
        assert _gone_within(server_pid, 10)
        assert _gone_within(worker_pid, 10)
    finally:
        manager.kill()


def test_julia_backends_are_never_forked():
    assert not warm_workers.forks("julia")
    assert warm_workers.forks("python")


def test_fresh_interpreters_on_the_command_line(tmp_path):
    from gcbench.cli import build_parser
    from gcbench.commands import _common

    args = build_parser().parse_args(["run", "--fresh-interpreters", "--out", str(tmp_path)])
    args.argv = []
    assert _common.run_options(args).fork_workers is False
    args = build_parser().parse_args(["run", "--out", str(tmp_path)])
    args.argv = []
    assert _common.run_options(args).fork_workers is True


def test_a_short_forked_repeat_still_reads_the_machine(tmp_path):
    """A forked worker's life holds no imports: a cell too short for its timed steps to be
    read is read over that life, as a short window, not left unread."""
    with warm_workers.ServerPool() as pool:
        doc = runner.run_worker(_cell(steps=5), tmp_path / "s.json", ["t"], 300, None,
                                fork=lambda *a: pool.spawn("jax", *a))
    state = results.part(doc, "machine_state")
    assert state.get("worker") == "forked"
    assert "others_cores" in state
    assert state.get("load_window") == "short" or state["load_seconds"] >= 0.5
