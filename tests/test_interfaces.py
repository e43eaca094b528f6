"""The interfaces users reach for besides `run`: gcbench.measure around their own loop,
export to CSV and DataFrames, and the public API."""

import csv
import gc
import io
import json
import pathlib
import re

import pytest

import gcbench
from conftest import copy_of, run_cli
from gcbench.core.errors import UsageError
from gcbench.measuring import results

REPO = pathlib.Path(__file__).resolve().parent.parent


def _loop(m, steps=120, keep=None):
    for _i in range(steps):
        with m.step():
            if keep is not None:
                keep.append([[] for _ in range(30)])  # 31 tracked objects kept per step


def test_measure_records_a_users_loop_in_the_schema_of_a_cell(tmp_path, classic_thresholds):
    kept = []
    with gcbench.measure("my-loop", warmup=5) as m:
        _loop(m, 125, kept)
    assert m.steps == 120
    doc = m.result()
    results.validate(doc)
    assert doc.backend == "user"
    assert doc.workload == "my-loop"
    assert doc.gc_policy == "default"
    assert len(doc.wall_ns) == 120
    assert len(doc.warmup["wall_ns"]) == 5
    assert (
        29 <= sorted(doc.gc_pressure)[60] <= 33
    )  # what the loop keeps, per step (31), give or take the test process
    assert sum(row[0] for row in doc.gc_collections) >= 3  # the young generation filled up
    s = m.summary()
    assert s["median_ms"] > 0
    assert s["steps"] == 120
    first, second = m.save(tmp_path), m.save(tmp_path)
    assert first.name == "user__my-loop__default__r0.json"
    assert second.name == "user__my-loop__default__r1.json"
    assert [d.repeat for d in results.load_dir(tmp_path)] == [0, 1]


def test_measure_keeps_the_policy_the_user_named_and_counts_frozen_objects():
    """An interpreter that already holds frozen objects (a library froze them, as happens
    on GPU machines) does not make the loop a `freeze` loop; the count is recorded."""
    gc.freeze()
    try:
        with gcbench.measure("plain") as m:
            _loop(m, 10)
        with gcbench.measure("mine", policy="freeze") as named:
            _loop(named, 10)
    finally:
        gc.unfreeze()
    doc = m.result()
    assert doc.gc_policy == "default"
    assert doc.gc_state["frozen_objects"] > 0
    assert named.result().gc_policy == "freeze"
    with pytest.raises(UsageError, match="unknown GC policy"):
        gcbench.measure("x", policy="sometimes")


def test_measure_records_the_jax_devices_of_the_loop():
    jax = pytest.importorskip("jax")
    with gcbench.measure("on-device") as m:
        for _ in range(3):
            with m.step():
                jax.block_until_ready(jax.numpy.ones(4) * 2)
    meta = m.result().metadata
    assert meta["jax_backend"] == jax.default_backend()
    assert meta["devices"] == [str(d) for d in jax.devices()]


def test_measure_knows_a_disabled_collector_and_refuses_misuse():
    gc.disable()
    try:
        with gcbench.measure("off") as m:
            _loop(m, 10)
    finally:
        gc.enable()
    assert m.result().gc_policy == "disable"
    with pytest.raises(UsageError, match="outside"):
        with m.step():
            pass
    with pytest.raises(UsageError, match="name must be"):
        gcbench.measure("../x")
    with gcbench.measure("w", warmup=3) as m2:
        _loop(m2, 2)
    with pytest.raises(UsageError, match="no timed step"):
        m2.result()
    with gcbench.measure("small", capacity=3) as m3:
        with pytest.raises(UsageError, match="more than 3 timed steps"):
            _loop(m3, 4)


def test_saved_measurements_report_and_export_like_cells(tmp_path):
    for _ in range(2):
        with gcbench.measure("loop") as m:
            _loop(m, 60)
        m.save(tmp_path / "res")
    proc = run_cli("report", str(tmp_path / "res"), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "rep" / "index.md").read_text()
    # flagged where the machine was loaded (the half second after a loop this short says so)
    row = next(line for line in md.splitlines() if re.match(r"\| user/loop/default( \(\d flagged\))? \| 2 \|", line))
    assert row.endswith("| 120 |")  # counts first, the steps last
    assert "Batch size" not in md
    assert "Loops measured by `gcbench.measure`" in md
    proc = run_cli("export", str(tmp_path / "res"), "--csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 120
    assert {"wall_ns", "gc_ns", "gc_gen0", "gc_pressure", "step", "repeat"} <= set(rows[0])
    proc = run_cli("export", str(tmp_path / "rep"), "--csv", "--per", "cell", "--out", str(tmp_path / "c.csv"))
    assert proc.returncode == 0
    assert "1 rows" in proc.stderr
    cell = next(csv.DictReader(open(tmp_path / "c.csv")))
    assert cell["cell"] == "user/loop/default"
    assert cell["repeats"] == "2"
    assert float(cell["median_ms"]) > 0
    assert run_cli("export", str(tmp_path / "res")).stdout == proc_csv_default(tmp_path)  # CSV is the default
    rows = json.loads(run_cli("export", str(tmp_path / "rep"), "--json", "--per", "cell").stdout)["rows"]
    api = m.summary()
    assert set(api) <= set(rows[0])
    assert set(cell) == set(rows[0])
    assert rows[0]["full_per_1000"] == float(cell["full_per_1000"])
    assert 0 <= api["gc_share"] < 1


def proc_csv_default(tmp_path) -> str:
    return run_cli("export", str(tmp_path / "res"), "--csv").stdout


def test_to_dataframe_has_a_row_per_step_and_per_cell(tmp_path):
    pd = pytest.importorskip("pandas")
    with gcbench.measure("loop") as m:
        _loop(m, 30)
    m.save(tmp_path)
    steps = gcbench.to_dataframe(tmp_path)
    assert isinstance(steps, pd.DataFrame)
    assert len(steps) == 30
    assert steps["wall_ns"].gt(0).all()
    cells = gcbench.to_dataframe(tmp_path, per="cell")
    assert list(cells["cell"]) == ["user/loop/default"]
    assert cells["median_ms"][0] > 0
    assert cells["median_ci_low_ms"].isna().all()  # one run (one repeat): no interval, not a narrow one
    assert gcbench.records(tmp_path)[0]["step"] == 0
    with pytest.raises(UsageError, match="per must be"):
        gcbench.records(tmp_path, per="repeat")


def test_the_public_api():
    assert set(gcbench.__all__) >= {"measure", "load", "load_dir", "summarize", "to_dataframe", "records"}
    assert gcbench.__version__.count(".") == 2


@pytest.mark.e2e  # six measured loops of full collections in a busy heap, 8 s
def test_compare_gives_a_verdict_on_fixed_schedules_of_a_users_loop(tmp_path):
    """Two loops measured with gcbench.measure, each run three times: one collects fully at
    steps 10 and 30, the other at step 10 only. The schedules are fixed, so compare says
    fewer, however few the collections; the same loop against itself is the same."""
    def run(folder, at):
        for _ in range(3):
            with gcbench.measure("loop") as m:
                for i in range(40):
                    with m.step():
                        if i in at:
                            gc.collect()
            m.save(folder)

    run(tmp_path / "two", (10, 30))
    run(tmp_path / "one", (10,))
    run(tmp_path / "one-again", (10,))
    proc = run_cli("compare", str(tmp_path / "two"), str(tmp_path / "one"), "--json")
    assert proc.returncode == 0, proc.stderr
    full = json.loads(proc.stdout)["rows"][0]["tests"][2]
    assert full["metric"] == "full_rate"
    assert full["exact"]
    assert full["verdict"] == "fewer full GCs"
    assert "2 full collections in every repeat of 40 steps, at steps 10, 30" in full["note"]
    same = json.loads(run_cli("compare", str(tmp_path / "one"), str(tmp_path / "one-again"), "--json").stdout)
    assert same["rows"][0]["tests"][2]["verdict"] == "same"
    # a time: not judged where the machine was loaded meanwhile (another test beside this one)
    assert same["rows"][0]["verdict"] in ("same", "inconclusive", "not judged")


def _strict(text: str) -> dict:
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    doc = json.loads(text, parse_constant=refuse)
    assert doc["gcbench"]["version"] == gcbench.__version__
    assert "commit" in doc["gcbench"]
    return doc


@pytest.mark.e2e
def test_every_json_output_is_strict_json_and_names_the_gcbench_that_wrote_it(tmp_path):
    """`python -c "import json,sys; json.load(sys.stdin)"` reads every --json output (here:
    a strict parser that refuses Infinity and NaN); words go to standard error."""
    from test_report import make_results

    res = make_results(tmp_path / "res")
    committed = REPO / "reports" / "cpu-vit-bisect-equinox"
    runs = {
        "list": ["list", "--json"],
        "report": ["report", str(res), "--out", str(tmp_path / "rep"), "--json"],
        "export": ["export", str(res), "--json", "--per", "cell"],
        "compare": ["compare", str(res), str(copy_of(res)), "--json"],
        "bisect": ["bisect", "--results", str(committed), "--package", "equinox", "--cell",
                   "equinox-filter/vit/default", "--metric", "full_gc", "--json"],
        "memory": ["memory", "--size", "small", "--index-dtype", "int32", "--backends", "jax", "--workloads", "mlp",
                   "--no-measure", "--out", str(tmp_path / "mem"), "--json"],
        "run": ["run", "--backends", "jax", "--workloads", "mlp", "--networks", "2", "--steps", "5", "--warmup", "1",
                "--repeats", "1", "--gc", "default", "--out", str(tmp_path / "run"), "--no-progress", "--json"],
    }
    for name, argv in runs.items():
        proc = run_cli(*argv)
        assert proc.returncode == 0, (name, proc.stderr)
        doc = _strict(proc.stdout)
        assert len(doc) > 1, name
    status = _strict(run_cli("status", str(tmp_path / "run"), "--json").stdout)  # after run wrote the folder
    assert status["planned"] == 1
    assert status["results"]["ok"] == 1
    assert "submission" not in status
    assert _strict(run_cli(*runs["report"]).stdout)["report"]["plots"]
    assert _strict(run_cli(*runs["bisect"]).stdout)["bisect"]["first_change"] == "0.13.3"


def test_a_measurement_with_a_manual_policy_saves(tmp_path):
    import gcbench

    with gcbench.measure("loop", policy="manual:5", warmup=1) as m:
        for _ in range(4):
            with m.step():
                [object() for _ in range(50)]
    path = m.save(tmp_path / "res")
    assert path.name == "user__loop__manual-5__r0.json"
    assert results.load(path).gc_policy == "manual:5"
