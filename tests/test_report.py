import base64
import re

import numpy as np
import pytest

from gcbench import results
from gcbench.config import Cell
from gcbench.report import build_report
from conftest import run_cli
from test_stats import spiky_series


def make_results(folder, slow=1.0, seed=0):
    """A small results folder: jax with periodic full-GC spikes under default and none
    under freeze, nnx without GC, one failed and one unavailable cell."""
    rng = np.random.default_rng(seed)

    def cell(backend, policy, workload="mlp"):
        return Cell(backend, workload, policy, 0, 2, 4992, 300, 2, 0, 10)

    def ok(backend, policy, spikes):
        wall, gc_ns, colls = spiky_series(n=300) if spikes else (np.full(300, 10e6), np.zeros(300), np.zeros((300, 3), int))
        wall = wall * slow * rng.uniform(0.98, 1.02, 300)
        doc = results.new(cell(backend, policy), "ok", data={"kind": "synthetic", "samples": 1000},
                          metadata={"python": "3.11", "cpu": "test cpu", "cpu_count": 2, "packages": {"jax": "0.0"},
                                    "command": ["gcbench", "run"], "date": "today"},
                          warmup={"wall_ns": [5e8]}, wall_ns=wall.astype(int).tolist(), gc_ns=gc_ns.astype(int).tolist(),
                          gc_collections=colls.tolist(), loss={"step": [0], "value": [2.3]})
        results.write(doc, folder / f"{doc['cell']}.json")

    ok("jax", "default", spikes=True)
    ok("jax", "freeze", spikes=False)
    ok("nnx", "default", spikes=False)
    results.write(results.new(cell("equinox-filter", "default"), "failed", "worker exit code 1\nTraceback ..."),
                  folder / "f.json")
    results.write(results.new(cell("flux", "default"), "unavailable", "Julia is not installed"), folder / "u.json")
    return folder


def test_report_files_plots_and_content(tmp_path):
    paths = build_report(make_results(tmp_path / "res"), tmp_path / "rep")
    assert {"markdown", "html", "gc_share", "policy_effect", "trace_mlp", "ecdf_mlp"} <= set(paths)
    for name, path in paths.items():
        if path.suffix == ".png":
            data = path.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    md = paths["markdown"].read_text()
    assert "Data: synthetic" in md
    assert "| jax/mlp/default | 300 |" in md
    assert "`jax` spikes 30 times under `default`, about every 10 steps, 50 % of them at a full collection" in md
    assert "`freeze` removes them" in md
    assert "Steps with a full collection, against the median step: `jax` under `default` 5.0 x (50 per 1,000 steps)" in md
    assert "Highest GC share: `jax` under `default`" in md
    assert "| equinox-filter/mlp/default | failed | worker exit code 1 |" in md
    assert "| flux/mlp/default | unavailable | Julia is not installed |" in md
    assert "![" in md and "(trace_mlp.png)" in md


def test_html_is_self_contained(tmp_path):
    paths = build_report(make_results(tmp_path / "res"), tmp_path / "rep")
    page = paths["html"].read_text()
    assert not re.search(r"""(src|href)=["']?(https?:|//|[^"'d#])""", page)  # nothing outside the file
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 4
    for data in images:
        assert base64.b64decode(data)[:4] == b"\x89PNG"


def test_negligible_gc_is_called_negligible(tmp_path):
    from gcbench.report.findings import findings

    docs = [{"cell": "a", "backend": "nnx", "gc_policy": "default"}, {"cell": "b", "backend": "jax", "gc_policy": "default"}]
    base = {"spike_factor": 3.0, "spikes": 0, "spike_period": None, "spikes_with_full_gc": None, "steps": 1000,
            "max_over_median": 1.5, "full_per_1000": 0.0, "full_gc_step_ratio": None}
    summaries = {"a": {**base, "gc_share": 0.0001, "gc_ms_total": 0.5, "collections": [5, 0, 0], "median_ms": 10.0},
                 "b": {**base, "gc_share": 0.0, "gc_ms_total": 0.0, "collections": [0, 0, 0], "median_ms": 5.0}}
    text = findings(docs, summaries)
    assert text[0] == ("The collector is negligible here: at most 0.01 % of step time in any cell, "
                       "5 collections in 2,000 timed steps, 0 of them full.")
    assert "fastest `jax` (5 ms), slowest `nnx` (10 ms, 2.0 x)" in text[1]


def test_report_of_only_unavailable_cells(tmp_path):
    res = tmp_path / "res"
    results.write(results.new(Cell("flux", "mlp", "default", 0, 2, 4992, 3, 1, 0, 1), "unavailable", "no Julia"),
                  res / "u.json")
    paths = build_report(res, tmp_path / "rep")
    assert "| flux/mlp/default | unavailable | no Julia |" in paths["markdown"].read_text()
    assert not list((tmp_path / "rep").glob("*.png"))


def test_compare_cli(tmp_path):
    a = make_results(tmp_path / "a", seed=0)
    b = make_results(tmp_path / "b", slow=2.0, seed=1)
    proc = run_cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith(("jax/", "nnx/"))}
    change = float(rows["nnx/mlp/default"].split()[3].rstrip("%"))
    assert 97 < change < 103 and "slower (p=" in rows["nnx/mlp/default"]  # B is 2x A, +-2 % noise
    same = run_cli("compare", str(a), str(make_results(tmp_path / "c", seed=2)))
    assert "not significant" in same.stdout
    assert "equinox-filter/mlp/default: not compared (failed in A, failed in B)" in proc.stdout


def test_report_cli_errors(tmp_path):
    proc = run_cli("report", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such results folder" in proc.stderr
    (tmp_path / "x.json").write_text('{"a": 1}')
    proc = run_cli("report", str(tmp_path))
    assert proc.returncode == 2 and "not a gcbench result" in proc.stderr and "Traceback" not in proc.stderr


def test_report_cli_writes_into_out(tmp_path):
    proc = run_cli("report", str(make_results(tmp_path / "res")), "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "index.html").is_file() and "4 plots" in proc.stdout
