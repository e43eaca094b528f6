"""Real runs of the jax backend through the CLI and the runner (seconds each)."""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from gcbench import results
from gcbench.config import Suite
from gcbench.runner import run_cells
from conftest import run_cli

pytestmark = pytest.mark.slow


def test_short_jax_run_writes_valid_results(tmp_path, mnist_dir):
    out = tmp_path / "out"
    proc = run_cli("run", "--backends", "jax", "--workloads", "mlp", "--gc", "default,manual:5",
                   "--networks", "3", "--steps", "30", "--warmup", "2", "--data", str(mnist_dir),
                   "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "jax/mlp/default" in proc.stdout and "median ms" in proc.stdout
    docs = results.load_dir(out)
    assert [d["gc_policy"] for d in docs] == ["default", "manual:5"]
    for doc in docs:
        assert doc["status"] == "ok"
        assert doc["data"]["kind"] == "real" and doc["data"]["samples"] == 512
        assert doc["networks"] == 3 and doc["params_per_network"] == 4992
        assert len(doc["wall_ns"]) == 30 and len(doc["warmup"]["wall_ns"]) == 2
        # Compilation happens in warm-up: the first warm-up step is the slowest of all.
        assert doc["warmup"]["wall_ns"][0] > max(doc["wall_ns"])
        assert doc["traces"] == {"update": 1}
        assert doc["loss"]["value"][-1] < doc["loss"]["value"][0]
        assert doc["metadata"]["packages"]["jax"] and doc["metadata"]["jax_backend"] == "cpu"
        assert doc["metadata"]["command"][:3] == ["gcbench", "run", "--backends"]
        assert doc["probe"]["bracket_ok"]
    manual = docs[1]
    full = np.asarray(manual["gc_collections"])[:, 2]
    assert np.flatnonzero(full).tolist() == [4, 9, 14, 19, 24, 29]


def _fake_python(tmp_path, crash_on: str, how: str) -> str:
    """An interpreter wrapper whose worker crashes for cells whose file name holds `crash_on`."""
    script = tmp_path / "python"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$3" in
          *{crash_on}*) {how} ;;
        esac
        exec {sys.executable} "$@"
    """))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.parametrize("how,expect", [
    ('echo "boom: out of cheese" >&2; exit 3', "exit code 3"),
    ('kill -SEGV $$', "killed by signal 11"),
    ("sleep 30", "timed out after 4 s"),
])
def test_crashing_worker_does_not_lose_other_cells(tmp_path, monkeypatch, how, expect):
    suite = Suite(backends=["jax"], workloads=["mlp", "lenet5"], steps=5, warmup=1,
                  networks={"mlp": 2, "lenet5": 1}).validate()
    cells = suite.cells()
    import gcbench.runner as runner

    fake = _fake_python(tmp_path, "lenet5", how)
    real = runner.run_worker
    monkeypatch.setattr(runner, "run_worker", lambda *a, **k: real(*a, **k, python=fake))
    timeout = 4 if "sleep" in how else 300
    docs = run_cells(cells, tmp_path, ["test"], timeout, log=lambda *_: None, progress=False)
    assert [d["status"] for d in docs] == ["ok", "failed"]
    assert expect in docs[1]["reason"]
    if "boom" in how:
        assert "boom: out of cheese" in docs[1]["reason"]
    on_disk = {p.name: results.load(p)["status"] for p in tmp_path.glob("*.json")}
    assert on_disk == {"jax__mlp__default__r0.json": "ok", "jax__lenet5__default__r0.json": "failed"}


def test_ctrl_c_keeps_finished_cells(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gcbench", "run", "--backends", "jax", "--workloads", "mlp",
         "--gc", "default,freeze,disable", "--networks", "2", "--steps", "20000", "--warmup", "1",
         "--out", str(out), "--no-progress", "--timeout", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait for the first cell's worker to be running, then interrupt the manager.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "suite.json").exists():
        time.sleep(0.2)
    time.sleep(8)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert json.loads((out / "suite.json").read_text())["cells"][0] == "jax__mlp__default__r0"
    # The interrupted cell left no partial result, and no worker survives the manager.
    assert not list(out.glob("*.tmp"))
    time.sleep(0.5)
    ps = subprocess.run(["pgrep", "-f", f"gcbench.worker {out}"], capture_output=True, text=True)
    assert ps.stdout.strip() == ""


def test_finished_cells_survive_interrupt_of_a_later_cell(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gcbench", "run", "--backends", "jax", "--workloads", "mlp,lenet5",
         "--networks", "1", "--steps", "5", "--warmup", "1", "--gc", "default",
         "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "jax__mlp__default__r0.json").exists():
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    if proc.returncode == 0:  # the second cell beat the signal; nothing to interrupt
        pytest.skip("run finished before the interrupt")
    assert proc.returncode == 130, stderr
    assert results.load(out / "jax__mlp__default__r0.json")["status"] == "ok"
    assert "1 finished cells kept" in stderr


def test_run_with_report_writes_the_report(tmp_path):
    proc = run_cli("run", "--backends", "jax,flux", "--workloads", "mlp", "--networks", "2", "--steps", "12",
                   "--warmup", "1", "--gc", "default,freeze", "--out", str(tmp_path / "results" / "demo"),
                   "--no-progress", "--report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = tmp_path / "reports" / "demo"
    assert (report / "index.html").is_file() and (report / "trace_mlp.png").is_file()
    md = (report / "index.md").read_text()
    assert "| jax/mlp/default | 12 |" in md
    assert "| flux/mlp/freeze | unavailable | GC policy freeze has no meaning for flux (julia) |" in md
    assert "only 12 timed steps (< 100)" in md  # short cells are flagged unstable
