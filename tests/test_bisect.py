import json

import numpy as np
import pytest

from gcbench import bisect, envs, results
from gcbench.config import Cell
from gcbench.errors import UsageError
from conftest import run_cli

CELL = ("equinox-filter", "vit", "default")


def write_version(folder, version, gc_share, repeat=0, base_ms=100.0, steps=200, status="ok", reason=""):
    """A result of CELL in an environment holding equinox `version`: every step `base_ms`, and
    GC pauses adding up to `gc_share` of the step time (one full collection per 100 steps)."""
    env = f"python=3.11 equinox=={version}"
    cell = Cell(*CELL, repeat, 1, 27978, steps, 2, 0, 10, env=env)
    environment = {"spec": env, "name": f"py3.11 equinox=={version}", "python": "3.11.7",
                   "pins": [f"equinox=={version}"], "packages": {"equinox": version, "jax": "0.6.2"}}
    if status != "ok":
        doc = results.new(cell, status, reason, environment=environment)
    else:
        wall = np.full(steps, base_ms * 1e6)
        gc_ns = np.full(steps, gc_share * base_ms * 1e6)
        colls = np.zeros((steps, 3), int)
        colls[99::100, 2] = 1
        doc = results.new(cell, "ok", data={"kind": "synthetic"}, environment=environment,
                          metadata={"python": "3.11.7", "packages": {"equinox": version, "jax": "0.6.2"}},
                          wall_ns=wall.astype(int).tolist(), gc_ns=gc_ns.astype(int).tolist(),
                          gc_collections=colls.tolist(), loss={"step": [0], "value": [2.3]})
    results.write(doc, folder / f"{doc['cell']}.json")
    return doc


@pytest.fixture
def bisect_dir(tmp_path):
    folder = tmp_path / "res"
    for version, share in [("0.11.11", 0.005), ("0.12.0", 0.0055), ("0.12.2", 0.02), ("0.13.2", 0.021)]:
        write_version(folder, version, share)
    write_version(folder, "0.12.0", 0.006, repeat=1)
    write_version(folder, "0.13.8", 0, status="unavailable", reason="No matching distribution found for jax==9")
    return folder


def test_table_marks_the_first_version_that_changed(bisect_dir):
    docs = results.load_dir(bisect_dir)
    tab = bisect.table(docs, "equinox", CELL, bisect.get_metric("gc_share"), 2.0)
    assert [r["version"] for r in tab["rows"]] == ["0.11.11", "0.12.0", "0.12.2", "0.13.2", "0.13.8"]
    rows = {r["version"]: r for r in tab["rows"]}
    assert rows["0.11.11"]["value"] == pytest.approx(0.5)
    assert rows["0.12.0"]["runs"] == 2 and rows["0.12.0"]["value"] == pytest.approx(0.575)  # median of two
    assert rows["0.12.0"]["change"] == pytest.approx(0.575 / 0.5)
    assert rows["0.12.2"]["change"] == pytest.approx(2.0 / 0.575)
    assert tab["first_change"] == "0.12.2" and rows["0.12.2"]["first_change"]
    assert not rows["0.13.2"].get("first_change")
    assert rows["0.13.8"]["status"] == "unavailable" and "No matching distribution" in rows["0.13.8"]["reason"]
    assert rows["0.12.2"]["median_ms"] == pytest.approx(100.0) and rows["0.12.2"]["full_per_1000"] == pytest.approx(10)
    text = bisect.format_table(tab)
    line = next(line for line in text.splitlines() if line.startswith("0.12.2"))
    assert "<- first change > 2x" in line and "x3.48" in line
    assert "gc_share" not in text.splitlines()[1]  # the GC % column is the metric: not shown twice
    assert "unavailable: No matching distribution found for jax==9" in text


def test_factor_and_floor(bisect_dir, tmp_path):
    docs = results.load_dir(bisect_dir)
    assert bisect.table(docs, "equinox", CELL, bisect.get_metric("gc_share"), 5.0)["first_change"] is None
    # below the floor (0.1 % of step time) zero and 0.05 % are the same: no change to report
    quiet = tmp_path / "quiet"
    write_version(quiet, "1.0", 0.0)
    write_version(quiet, "1.1", 0.0005)
    write_version(quiet, "1.2", 0.003)
    tab = bisect.table(results.load_dir(quiet), "equinox", CELL, bisect.get_metric("gc_share"), 1.5)
    assert tab["rows"][1]["change"] == pytest.approx(1.0)
    assert tab["first_change"] == "1.2" and tab["rows"][2]["change"] == pytest.approx(3.0)


def test_given_versions_order_the_table_and_missing_ones_are_named(bisect_dir):
    docs = results.load_dir(bisect_dir)
    tab = bisect.table(docs, "equinox", CELL, bisect.get_metric("p99"), 1.5, versions=["0.12.2", "0.11.11", "0.9.0"])
    assert [r["version"] for r in tab["rows"]][:2] == ["0.12.2", "0.11.11"]
    assert tab["missing"] == ["0.9.0"]
    text = bisect.format_table(tab)
    assert "no results for 0.9.0" in text
    assert "p99 ms" in text.splitlines()[1]  # a metric the table does not show anyway gets its own column


def test_version_order():
    assert sorted(["0.13.10", "0.13.9", "0.9.0", "0.13.2"], key=envs.version_key) == \
        ["0.9.0", "0.13.2", "0.13.9", "0.13.10"]


def test_plan_envs_keeps_the_base_and_replaces_the_package():
    base = envs.parse("python=3.12 jax==0.6.2 equinox==0.10.0")
    specs = bisect.plan_envs("Equinox", ["0.12.0", "0.13.2"], base)
    assert [s.text for s in specs] == ["python=3.12 equinox==0.12.0 jax==0.6.2", "python=3.12 equinox==0.13.2 jax==0.6.2"]
    assert bisect.plan_envs("equinox", ["1.0"], envs.EnvSpec(None, ()))[0].text == "equinox==1.0"
    with pytest.raises(UsageError, match="twice"):
        bisect.plan_envs("equinox", ["1.0", "1.0"], base)


@pytest.mark.parametrize("text, message", [
    ("equinox-filter/vit", "BACKEND/WORKLOAD/POLICY"),
    ("nope/vit/default", "unknown backend"),
    ("jax-vmap/vit/default", "does not implement workload vit"),
    ("jax/vit/sometimes", "GC policy"),
])
def test_parse_cell_errors(text, message):
    with pytest.raises(UsageError, match=message):
        bisect.parse_cell(text)


def test_bisect_cli_on_written_results(bisect_dir, tmp_path):
    out = run_cli("bisect", "--package", "equinox", "--cell", "equinox-filter/vit/default", "--results",
                  str(bisect_dir), "--factor", "2", "--report", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "equinox bisect of equinox-filter/vit/default: GC share of step time" in out.stdout
    marked = [line for line in out.stdout.splitlines() if "first change" in line]
    assert len(marked) == 1 and marked[0].startswith("0.12.2")
    saved = json.loads((bisect_dir / "bisect.json").read_text())
    assert saved["first_change"] == "0.12.2"
    md = (tmp_path / "reports" / "res" / "index.md").read_text()
    assert "The first version whose gc share of step time differs" in md and "**equinox 0.12.2**" in md
    assert (tmp_path / "reports" / "res" / "bisect.png").read_bytes()[:4] == b"\x89PNG"
    assert "| py3.11 equinox==0.12.2 | 3.11.7 | 0.12.2 |" in md  # the environments, with what differs


@pytest.mark.parametrize("args, message", [
    (["--cell", "equinox-filter/vit/default"], "--versions is needed"),
    (["--cell", "equinox-filter/vit/default", "--versions", "1.0", "--metric", "speed"], "unknown metric"),
    (["--cell", "equinox-filter/vit/default", "--versions", "1.0", "--factor", "1"], "--factor must be greater"),
    (["--cell", "vit", "--versions", "1.0"], "BACKEND/WORKLOAD/POLICY"),
    (["--cell", "equinox-filter/vit/default", "--versions", "1.0", "--env", "python=3.12 jax"], "neither"),
])
def test_bisect_cli_usage_errors(args, message):
    out = run_cli("bisect", "--package", "equinox", *args)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
