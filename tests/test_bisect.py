import re

import numpy as np
import pytest

from conftest import run_cli
from gcbench.analysing import version_bisect
from gcbench.core.errors import UsageError
from gcbench.measuring import envspec, results
from gcbench.measuring.cell import Cell
from gcbench.publishing import bisect_text
from gcbench.running import venvs

CELL = ("equinox-filter", "vit", "default")


def write_version(folder, version, gc_share, repeat=0, base_ms=100.0, steps=200, status="ok", reason="", seed=0):
    """A result of CELL in an environment holding equinox `version`: steps of `base_ms` (a
    little noise), GC pauses adding up to about `gc_share` of the step time (one full
    collection per 100 steps)."""
    rng = np.random.default_rng([seed, repeat, int(1e6 * gc_share)])
    env = f"python=3.11 equinox=={version}"
    cell = Cell(*CELL, repeat, 1, 27978, steps, 2, 0, 10, env=env)
    environment = {"spec": env, "name": f"py3.11 equinox=={version}", "python": "3.11.7",
                   "pins": [f"equinox=={version}"], "packages": {"equinox": version, "jax": "0.6.2"}}
    if status != "ok":
        doc = results.new(cell, status, reason, environment=environment)
    else:
        wall = base_ms * 1e6 * rng.normal(1, 0.01, steps)
        gc_ns = wall * gc_share * rng.normal(1, 0.03)
        colls = np.zeros((steps, 3), int)
        colls[99::100, 2] = 1
        doc = results.new(cell, "ok", data={"kind": "synthetic"}, environment=environment,
                          metadata={"python": "3.11.7", "packages": {"equinox": version, "jax": "0.6.2"}},
                          wall_ns=wall.astype(int).tolist(), gc_ns=gc_ns.astype(int).tolist(),
                          gc_collections=colls.tolist(), loss={"step": [0], "value": [2.3]})
    results.write(doc, folder / f"{doc.cell}.json")
    return doc


def write_versions(folder, shares, repeats=3):
    for version, share in shares:
        for r in range(repeats):
            write_version(folder, version, share, repeat=r)


@pytest.fixture
def bisect_dir(tmp_path):
    folder = tmp_path / "res"
    write_versions(folder, [("0.11.11", 0.005), ("0.12.0", 0.0055), ("0.12.2", 0.02), ("0.13.2", 0.021)])
    write_version(folder, "0.13.8", 0, status="unavailable", reason="No matching distribution found for jax==9")
    return folder


def test_table_marks_the_first_version_that_changed(bisect_dir):
    docs = results.load_dir(bisect_dir)
    tab = version_bisect.table(docs, "equinox", CELL, version_bisect.get_metric("gc_share"), 2.0)
    assert [r.version for r in tab.rows] == ["0.11.11", "0.12.0", "0.12.2", "0.13.2", "0.13.8"]
    rows = {r.version: r for r in tab.rows}
    assert rows["0.11.11"].value == pytest.approx(0.5, rel=0.05)
    assert rows["0.12.0"].runs == 3
    assert rows["0.12.2"].change == pytest.approx(2.0 / 0.55, rel=0.05)
    assert tab.first_change == "0.12.2"
    assert rows["0.12.2"].first_change
    assert rows["0.12.2"].p_adj < 0.05
    assert rows["0.12.0"].p_adj >= 0.0
    assert not rows["0.13.2"].first_change
    assert rows["0.13.8"].status == "unavailable"
    assert "No matching distribution" in rows["0.13.8"].reason
    assert rows["0.12.2"].median_ms == pytest.approx(100.0, rel=0.01)
    assert rows["0.12.2"].full_per_1000 == 10
    text = bisect_text.release_table(tab)
    line = next(line for line in text.splitlines() if line.startswith("0.12.2"))
    assert "<- first change > 2x" in line
    assert re.search(r"x3\.[5-8]\d \(p=", line)
    assert "gc_share" not in text.splitlines()[1]  # the GC % column is the metric: not shown twice
    assert "unavailable: No matching distribution found for jax==9" in text


def test_a_change_with_one_repeat_is_shown_but_never_marked(tmp_path):
    folder = tmp_path / "one"
    write_versions(folder, [("1.0", 0.005), ("1.1", 0.05)], repeats=1)
    tab = version_bisect.table(results.load_dir(folder), "equinox", CELL, version_bisect.get_metric("gc_share"), 1.5)
    assert tab.rows[1].change == pytest.approx(10, rel=0.1)
    assert tab.first_change is None
    assert "untested: fewer than 3 repeats" in bisect_text.release_table(tab)


def test_fixed_schedules_of_full_collections_are_compared_exactly(tmp_path):
    def write(folder, repeats):
        for version, every in [("1.0", 100), ("1.1", 10)]:
            for r in range(repeats):
                doc = write_version(folder, version, 0.01, repeat=r)
                colls = np.zeros((200, 3), int)
                colls[every - 1::every, 2] = 1
                doc.gc_collections = colls.tolist()
                results.write(doc, folder / f"{doc.cell}.json")
        return version_bisect.table(results.load_dir(folder), "equinox", CELL, version_bisect.get_metric("full_gc"),
                                    2.0)

    tab = write(tmp_path / "fixed", 2)  # 2 against 20 in every repeat: a fact, not a sample
    assert tab.first_change == "1.1"
    assert tab.rows[1].change == pytest.approx(10)
    assert tab.rows[1].exact
    assert tab.rows[1].full_per_repeat == [20, 20]
    assert "(exact: fixed schedules)" in bisect_text.release_table(tab)
    one = write(tmp_path / "one", 1)  # one repeat cannot show that a schedule is fixed
    assert one.first_change is None
    assert "untested" in bisect_text.release_table(one)


def test_factor_and_floor(bisect_dir, tmp_path):
    docs = results.load_dir(bisect_dir)
    tab = version_bisect.table(docs, "equinox", CELL, version_bisect.get_metric("gc_share"), 5.0)
    assert tab.first_change is None
    # below the floor (0.1 % of step time) zero and 0.05 % are the same: no change to report
    quiet = tmp_path / "quiet"
    write_versions(quiet, [("1.0", 0.0), ("1.1", 0.0005), ("1.2", 0.003)])
    tab = version_bisect.table(results.load_dir(quiet), "equinox", CELL, version_bisect.get_metric("gc_share"), 1.5)
    assert tab.rows[1].change == pytest.approx(1.0)
    assert tab.first_change == "1.2"
    assert tab.rows[2].change == pytest.approx(3.0, rel=0.05)


def test_given_versions_order_the_table_and_missing_ones_are_named(bisect_dir):
    docs = results.load_dir(bisect_dir)
    tab = version_bisect.table(docs, "equinox", CELL, version_bisect.get_metric("p99"), 1.5,
                               versions=["0.12.2", "0.11.11", "0.9.0"])
    assert [r.version for r in tab.rows][:2] == ["0.12.2", "0.11.11"]
    assert tab.missing == ["0.9.0"]
    text = bisect_text.release_table(tab)
    assert "no results for 0.9.0" in text
    assert "p99 ms" in text.splitlines()[1]  # a metric the table does not show anyway gets its own column


def test_version_order():
    assert sorted(["0.13.10", "0.13.9", "0.9.0", "0.13.2"], key=venvs.version_key) == \
        ["0.9.0", "0.13.2", "0.13.9", "0.13.10"]


def test_plan_envs_keeps_the_base_and_replaces_the_package():
    base = envspec.parse("python=3.12 jax==0.6.2 equinox==0.10.0")
    specs = version_bisect.plan_envs("Equinox", ["0.12.0", "0.13.2"], base)
    assert [s.text for s in specs] == [
        "python=3.12 equinox==0.12.0 jax==0.6.2",
        "python=3.12 equinox==0.13.2 jax==0.6.2",
    ]
    assert version_bisect.plan_envs("equinox", ["1.0"], envspec.EnvSpec(None, ()))[0].text == "equinox==1.0"
    with pytest.raises(UsageError, match="twice"):
        version_bisect.plan_envs("equinox", ["1.0", "1.0"], base)


@pytest.mark.parametrize(("text", "message"), [
    ("equinox-filter/vit", "BACKEND/WORKLOAD/POLICY"),
    ("nope/vit/default", "unknown backend"),
    ("jax-vmap/vit/default", "does not implement workload vit"),
    ("jax/vit/sometimes", "GC policy"),
])
def test_parse_cell_errors(text, message):
    with pytest.raises(UsageError, match=message):
        version_bisect.parse_cell(text)


def test_bisect_cli_on_written_results(bisect_dir, tmp_path):
    out = run_cli("bisect", "--package", "equinox", "--cell", "equinox-filter/vit/default", "--results",
                  str(bisect_dir), "--factor", "2", "--report", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "equinox bisect of equinox-filter/vit/default: GC share of CPU time" in out.stdout
    marked = [line for line in out.stdout.splitlines() if "first change" in line]
    assert len(marked) == 1
    assert marked[0].startswith("0.12.2")
    assert not (bisect_dir / "bisect.json").exists()  # --results reads; it writes nothing there
    md = (tmp_path / "reports" / "res" / "index.md").read_text()
    assert "The first version whose gc share of cpu time" in md
    assert "`equinox 0.12.2`" in md
    assert (tmp_path / "reports" / "res" / "bisect.png").read_bytes()[:4] == b"\x89PNG"
    assert "| py3.11 equinox==0.12.2 | 3.11.7 | 0.12.2 |" in md  # the environments, with what differs
    # the report carries the table it showed: rebuilt from its own archive, it shows it again
    rebuilt = run_cli("report", str(tmp_path / "reports" / "res"), cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    again = (tmp_path / "reports" / "res" / "index.md").read_text()
    def section(text):
        return text[text.index("## Bisect"):text.index("## Summary")]
    assert section(again) == section(md)
    assert "`equinox 0.12.2`" in again


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cell", "equinox-filter/vit/default"], "--versions is needed"),
        (["--cell", "equinox-filter/vit/default", "--versions", "1.0", "--metric", "speed"], "unknown metric"),
        (
            ["--cell", "equinox-filter/vit/default", "--versions", "1.0", "--factor", "1"],
            "--factor must be a finite number greater than 1",
        ),
        (["--cell", "vit", "--versions", "1.0"], "BACKEND/WORKLOAD/POLICY"),
        (["--cell", "equinox-filter/vit/default", "--versions", "1.0", "--env", "python=3.12 jax"], "pins no version"),
    ],
)
def test_bisect_cli_usage_errors(args, message):
    out = run_cli("bisect", "--package", "equinox", *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_repeat_under_load_is_left_out_and_the_table_says_so(tmp_path):
    folder = tmp_path / "load"
    write_versions(folder, [("1.0", 0.01)], repeats=3)
    loaded = write_version(folder, "1.1", 0.2, repeat=0)  # the outlier ran on a busy machine
    loaded.machine_state = {"cpu_count": 2, "load_before": 5.0, "load_after": 5.0}
    results.write(loaded, folder / f"{loaded.cell}.json")
    for r in (1, 2, 3):  # three planned and the replacement a run measures for the flagged one
        write_version(folder, "1.1", 0.01, repeat=r)
    tab = version_bisect.table(results.load_dir(folder), "equinox", CELL, version_bisect.get_metric("gc_share"), 1.5)
    rows = {r.version: r for r in tab.rows}
    assert rows["1.1"].used == 3
    assert rows["1.0"].used == 3
    assert rows["1.1"].value == pytest.approx(1.0, rel=0.05)  # the loaded repeat's 20 % is not in it
    assert tab.first_change is None
    line = next(line for line in bisect_text.release_table(tab).splitlines() if line.startswith("1.1"))
    assert "4/4 (3 used)" in line
