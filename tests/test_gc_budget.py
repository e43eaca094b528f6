"""GC budgets in a test suite (the pytest plugin `gcbench`, fixture `gc_budget`): counts
that pass or fail the same way in every process and under load, a failure that names what
and where, the baseline file, and budgets on each JAX-family backend's own step."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gcbench import pytest_plugin
from gcbench.measuring import results

CASES = pathlib.Path(__file__).resolve().parent / "budget_cases"


def _pytest(folder: pathlib.Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A fresh pytest process, as a project's own test suite runs (the plugin comes from the
    installed gcbench's entry point)."""
    import os

    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "-o", "addopts=", *args], cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def _counts(report: pathlib.Path) -> dict:
    """Per budget: promotions per step, collections per generation in the timed steps, full
    collection steps and tracked growth, from what --gc-budget-report saved."""
    out = {}
    expl = {e["cell"]["workload"]: e for e in json.loads((report / "explain.json").read_text())["explanations"]}
    for doc in results.load_dir(report):
        colls = np.asarray(doc["gc_collections"]).reshape(len(doc["wall_ns"]), -1)
        m = doc["memory"]
        out[doc["workload"]] = {"promoted": expl[doc["workload"]]["python"]["promoted_per_step"],
                                "collections": colls.sum(axis=0).tolist(),
                                "full_at": np.flatnonzero(colls[:, -1]).tolist(),
                                "tracked": m["tracked_end"] - m["tracked_start"]}
    return out


@pytest.mark.slow
def test_counts_are_identical_in_three_processes_and_under_load(tmp_path):
    """Issue 33, item 2: the counted figures of a plain Python loop and of an Equinox step are
    the same in three fresh processes, one of them beside a process that keeps a core busy."""
    folder = tmp_path / "suite"
    shutil.copytree(CASES, folder)
    runs = []
    for i in range(3):
        burn = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if i == 1 else None
        try:
            proc = _pytest(folder, "test_steps_under_budget.py", f"--gc-budget-report={tmp_path / f'r{i}'}")
        finally:
            if burn is not None:
                burn.kill()
                burn.wait()
        assert proc.returncode == 0, proc.stdout + proc.stderr
        runs.append(_counts(tmp_path / f"r{i}"))
    assert set(runs[0]) == {"test_python_records", "test_equinox_step"}
    assert runs[0] == runs[1] == runs[2]
    py = runs[0]["test_python_records"]
    assert 2.5 <= sum(py["promoted"]) / len(py["promoted"]) <= 3.5  # 3 tracked objects kept a step
    assert sum(py["collections"]) > 0


def test_over_budget_fails_with_figures_sites_and_the_baseline_line(tmp_path):
    """Issues 33, items 1 and 3: over budget, one message with the figure beside its budget,
    the full collections' schedule and the top sites (file:line and type); --gc-budget-update
    writes the baseline, later runs read it, and a failure names its file and line."""
    folder = tmp_path / "project"
    folder.mkdir()
    test = folder / "test_loop.py"
    test.write_text(textwrap.dedent("""
        import os
        KEEP = []
        WIDTH = int(os.environ.get("WIDTH", "1"))

        def test_loop(gc_budget):
            with gc_budget(warmup=2, max_full_per_1000=1000) as b:
                for i in range(1500):
                    with b.step():
                        KEEP.append([[] for _ in range(WIDTH)])  # KEEP-LINE
    """))
    proc = _pytest(folder, "--gc-budget-update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    baseline = (folder / "gc_budgets.toml").read_text()
    assert '["test_loop.py::test_loop"]' in baseline and "max_promotions_per_step = " in baseline
    assert _pytest(folder).returncode == 0  # the same loop, within its baseline
    proc = _pytest(folder, env={"WIDTH": "12"})  # twelve more objects kept a step (with six, the one collection of generation 1 in
    # these steps can fall where their mean promotions sit at the budget)
    assert proc.returncode == 1
    out = proc.stdout
    line = next(n for n, text in enumerate(test.read_text().splitlines(), 1) if "KEEP-LINE" in text)
    toml_line = next(n for n, text in enumerate(baseline.splitlines(), 1) if text.startswith("max_promotions_per_step"))
    assert "GC budget exceeded: test_loop.py::test_loop (1,498 steps after 2 warm-up)" in out
    assert f"promotions to the oldest generation per step: " in out and f"(gc_budgets.toml:{toml_line})" in out
    assert f"test_loop.py:{line} (list)" in out  # the site, file:line and type
    assert "full collection" in out and "PYTHONHASHSEED" in out
    assert out.count("GC budget exceeded: ") == 2  # the failure, and its line in the short summary


def test_a_budget_within_its_figures_passes_silently_and_bad_budgets_are_refused(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "test_ok.py").write_text(textwrap.dedent("""
        def test_ok(gc_budget):
            with gc_budget(warmup=1, max_promotions_per_step=1, max_full_per_1000=0,
                           max_collections_per_1000=(50, 5, 0), max_tracked_growth_per_1000=50) as b:
                for _ in range(200):
                    with b.step():
                        sum([[] for _ in range(10)], [])

        def test_bad(gc_budget):
            gc_budget(max_gc_share=2.0)
    """))
    proc = _pytest(folder, "-rA")
    assert "test_ok.py::test_ok" in proc.stdout and "PASSED test_ok.py::test_ok" in proc.stdout
    assert "max_gc_share is a fraction from 0 to 1, got 2.0" in proc.stdout + proc.stderr


def test_the_plugin_is_registered_as_gcbench():
    from importlib.metadata import entry_points

    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("gcbench") == "gcbench.pytest_plugin"
    assert pytest_plugin.BASELINE == "gc_budgets.toml"


@pytest.mark.slow
def test_each_jax_backends_step_keeps_its_promotion_budget(tmp_path):
    """Issue 33, item 4: gcbench's own JAX-family steps (vit) under budgets of promotions per
    step, in a fresh pytest process as a project's suite runs them."""
    folder = tmp_path / "suite"
    shutil.copytree(CASES, folder)
    proc = _pytest(folder, "test_backend_steps.py", "-s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    import re

    # pytest's progress dots share the line: "COUNTS" may follow a "."
    counts = dict(re.findall(r"COUNTS (\S+) (.*)", proc.stdout))
    assert set(counts) == {"jax", "equinox-filter", "equinox-partition", "nnx", "nnx-split"}
    assert counts["jax"].startswith("promotions/step 0.00")


def _equinox_env(root: pathlib.Path, version: str) -> pathlib.Path:
    """A virtual environment with equinox `version` (and jax 0.8.0, as the commit bisect of
    reports/cpu-vit-bisect-equinox-commits) that imports this gcbench; built with uv."""
    uv = shutil.which("uv") or str(pathlib.Path(sys.executable).with_name("uv"))
    if not pathlib.Path(uv).is_file() and not shutil.which("uv"):
        pytest.skip("uv is not installed (pip install 'gcbench[envs]')")
    env = root / f"equinox-{version}"
    made = subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(env)], capture_output=True, text=True)
    python = env / "bin" / "python"
    installed = made.returncode == 0 and subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), f"equinox=={version}", "jax==0.8.0", "jaxlib==0.8.0",
         "optax", "flax", "pytest", "numpy", "scipy", "jsonschema", "packaging", "filelock", "tqdm"],
        capture_output=True, text=True, timeout=900).returncode == 0
    if not installed:
        pytest.skip(f"equinox {version} with jax 0.8.0 could not be installed here (no package index?)")
    site = next((env / "lib").glob("python3*/site-packages"))
    (site / "gcbench-src.pth").write_text(str(pathlib.Path(pytest_plugin.__file__).resolve().parents[1]) + "\n")
    return python


@pytest.mark.slow
def test_the_budget_would_have_caught_the_equinox_regression(tmp_path):
    """Issue 33, item 4: the same budget (1,300 promotions a step on equinox-filter's vit step)
    fails under equinox 0.13.2 and passes under 0.13.3, the release of 0277a30 ("perf: code
    generation") that the commit bisect pinned."""
    folder = tmp_path / "suite"
    shutil.copytree(CASES, folder)
    outcome = {}
    for version in ("0.13.2", "0.13.3"):
        python = _equinox_env(tmp_path, version)
        proc = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-s",
                               "test_backend_steps.py", "-k", "equinox-filter"], cwd=folder, capture_output=True,
                              text=True, timeout=600)
        outcome[version] = proc
    before, after = outcome["0.13.2"], outcome["0.13.3"]
    assert before.returncode == 1 and "promotions to the oldest generation per step: 2," in before.stdout, before.stdout
    assert "> budget 1,300" in before.stdout
    assert after.returncode == 0, after.stdout[-2000:]
    promoted = float(after.stdout.split("COUNTS equinox-filter promotions/step ")[1].split()[0])
    assert promoted < 1300
