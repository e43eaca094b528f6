"""Real runs of the jax backend through the CLI and the runner (seconds each)."""

import json
import stat
import sys
import textwrap

import jax
import numpy as np
import pytest

from conftest import run_cli
from gcbench.commands._outcome import format_summary, present
from gcbench.core.errors import UsageError
from gcbench.measuring import results
from gcbench.measuring.cell import Cell
from gcbench.running.config import Suite
from gcbench.running.runner import RunSettings, run_cells

pytestmark = pytest.mark.slow


@pytest.mark.e2e  # a whole run of four cells in worker processes, 12 s
def test_short_jax_run_writes_valid_results(tmp_path, mnist_dir):
    out = tmp_path / "out"
    proc = run_cli("run", "--backends", "jax", "--workloads", "mlp", "--gc", "default,manual:5",
                   "--networks", "3", "--steps", "30", "--warmup", "2", "--repeats", "2", "--batch-size", "64",
                   "--bookkeeping", "metrics", "--data", str(mnist_dir), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "jax/mlp/default" in proc.stdout
    assert "median ms (95 % CI)" in proc.stdout
    assert "ok x2" in proc.stdout
    assert "] jax/mlp/default r2/2: ok in" in proc.stdout
    assert "[4/4] " in proc.stdout
    # the hint after a run names the counts gate, never a time gate for CI (issue 67)
    hint = " ".join(proc.stdout.split()).split("next: ")[1]
    assert "--fail-on more-full-gc,more-collections,more-allocations,more-retained,more-memory-kept,more-gc-work" \
        in hint
    assert "slower" not in hint
    docs = results.load_dir(out)
    assert sorted((d.gc_policy, d.repeat) for d in docs) == [("default", 0), ("default", 1),
                                                                    ("manual:5", 0), ("manual:5", 1)]
    for doc in docs:
        assert doc.status == "ok"
        assert doc.batch_size == 64
        assert doc.bookkeeping == "metrics"
        assert doc.data["kind"] == "real"
        assert doc.data["samples"] == 512
        assert doc.networks == 3
        assert doc.params_per_network == 4992
        assert len(doc.wall_ns) == 30
        assert len(doc.warmup["wall_ns"]) == 2
        # Compilation happens in warm-up: its one trace is there when the warm-up ends, and the timed steps
        # add none (counts: a loaded machine can make a timed step slower than a compile read from the cache)
        assert doc.warmup["traces"] == doc.traces == {"update": 1}
        assert doc.loss["value"][-1] < doc.loss["value"][0]
        # the worker runs on JAX's default platform: the CPU here, the GPU on a GPU machine
        assert doc.metadata["packages"]["jax"]
        assert doc.metadata["jax_backend"] == jax.default_backend()
        assert doc.metadata["command"][:3] == ["gcbench", "run", "--backends"]
        assert doc.probe["bracket_ok"]
        assert doc.probe["bookkeeping_entries"] == 90
        # host time (until the step function returned) is part of every step, and shorter than it
        assert len(doc.host_ns) == 30
        assert all(
            0 < h < w for h, w in zip(doc.host_ns, doc.wall_ns, strict=True)
        )
        # the bookkeeping keeps 3 dicts per step alive: the pressure says so
        assert np.median(doc.gc_pressure) >= 3
        assert doc.machine_state["cpu_count"] >= 1
        assert "load_before" in doc.machine_state
        assert doc.cell_spec["batch_size"] == 64
        assert doc.alloc_blocks is None
    manual = next(d for d in docs if d.gc_policy == "manual:5")
    full = np.asarray(manual.gc_collections)[:, 2]
    assert np.flatnonzero(full).tolist() == [4, 9, 14, 19, 24, 29]
    plan = json.loads((out / "suite.json").read_text())
    assert plan["state"] == "finished"
    assert len(plan["cells"]) == 4
    assert plan["runs"][0]["mode"] == "new"
    assert (out / "suite.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.e2e
def test_run_json_summary(tmp_path):
    proc = run_cli("run", "--backends", "jax,flux", "--workloads", "mlp", "--networks", "2", "--steps", "10",
                   "--warmup", "1", "--repeats", "1", "--out", str(tmp_path / "o"), "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    cells = {c["cell"]: c for c in doc["cells"]}
    assert cells["jax/mlp/default"]["median_ms"] > 0
    assert cells["jax/mlp/default"]["status"] == "ok"
    assert cells["flux/mlp/default"]["status"] == "unavailable" or cells["flux/mlp/default"]["median_ms"]
    assert "jax/mlp/default" in proc.stderr  # the progress and the table go to standard error


def test_summary_table_writes_a_shared_reason_once(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")  # a terminal wide enough for one line per cell
    def doc(backend, status, reason):
        return results.new(Cell(backend, "mlp", "default", 0, 2, 4992, 3, 1, 0, 1), status, reason)
    no_julia = "no Julia installed, and gcbench does not download one during a run"
    table = format_summary([doc("flux", "unavailable", no_julia), doc("lux", "unavailable", no_julia + "\ndetail"),
                            doc("simplechains", "failed", "worker crashed")])
    lines = table.splitlines()
    assert table.count(no_julia) == 1
    assert "detail" not in table
    assert [ln.split()[-1] for ln in lines[2:5]] == ["[1]", "[1]", "[2]"]
    assert lines[5:] == [f"[1] {no_julia}", "[2] worker crashed"]
    monkeypatch.setenv("COLUMNS", "80")  # narrower: each cell's name above its row, notes wrapped
    narrow = format_summary([doc("flux", "unavailable", no_julia), doc("simplechains", "failed", "worker crashed")])
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "flux/mlp/default\n" in narrow


def test_run_exits_1_when_nothing_was_measured(tmp_path):
    proc = run_cli("run", "--backends", "jax-vmap", "--workloads", "vit", "--repeats", "1", "--steps", "5",
                   "--out", str(tmp_path / "o"), "--no-progress")
    assert proc.returncode == 1
    assert "nothing was measured" in proc.stdout


def test_a_flow_is_called_from_the_library_with_typed_options(tmp_path):
    """`pipeline.run_suite` takes a suite and a `RunOptions`, as the command builds them: the
    same run as `gcbench run`, with no command line (jax-vmap does not run the ViT, so no
    worker starts and nothing is measured)."""
    from gcbench.flows import pipeline
    from gcbench.flows.options import RunOptions

    said = []

    def out_fn(*parts):
        said.append(" ".join(map(str, parts)))

    suite = Suite(name="lib", backends=["jax-vmap"], workloads=["vit"], gc=["default"], repeats=1, steps=5).validate()
    opts = RunOptions(argv=("run", "--from-a-test"), out=str(tmp_path / "o"), progress=False)
    shown = []
    outcome = pipeline.run_suite(suite, opts, out_fn, shown.append)
    assert outcome.code == 1
    assert outcome.folder == tmp_path / "o"
    assert [d.status for d in outcome.docs] == ["unavailable"]
    plan = json.loads((outcome.folder / "suite.json").read_text())
    assert plan["command"] == ["gcbench", "run", "--from-a-test"]
    assert plan["state"] == "finished"
    assert shown == [outcome]  # the flow hands its outcome over; what is printed is the command's
    assert not any("nothing was measured" in line for line in said)
    present(outcome, out_fn)
    assert "gcbench: nothing was measured" in said
    with pytest.raises(UsageError, match=r"^`detach` needs a scheduler \(`executor` slurm"):  # options, not flags
        pipeline.run_suite(suite, opts.replace(out=str(tmp_path / "p"), detach=True), out_fn)
    assert not (tmp_path / "p").exists()  # refused before anything was written


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


@pytest.mark.parametrize(("how", "expect"), [
    ('echo "boom: out of cheese" >&2; exit 3', "exit code 3"),
    ('kill -SEGV $$', "killed by signal 11"),
    ("sleep 30", "timed out after 3 s"),
])
def test_crashing_worker_does_not_lose_other_cells(tmp_path, monkeypatch, how, expect):
    suite = Suite(backends=["jax"], workloads=["mlp", "lenet5"], steps=5, warmup=1, repeats=1,
                  networks={"mlp": 2, "lenet5": 1}).validate()
    cells = suite.cells()
    import gcbench.running.runner as runner

    fake = _fake_python(tmp_path, "lenet5", how)
    real = runner.run_worker

    def run_worker(cell, out_file, command, timeout, *a, **k):
        # only the worker that hangs gets the short limit: the real cell has all the time it needs
        return real(cell, out_file, command, 3 if cell.workload == "lenet5" else 300, *a, **k, python=fake)

    monkeypatch.setattr(runner, "run_worker", run_worker)
    # the fake interpreter crashes the worker it starts: fresh interpreters (a forked worker that
    # dies: tests/test_warm_workers.py)
    docs = run_cells(cells, tmp_path, ["test"], 300,
                     RunSettings(log=lambda *_: None, progress=False, fork_workers=False))
    by = {d.workload: d for d in docs}
    assert by["mlp"].status == "ok"
    assert by["lenet5"].status == "failed"
    assert expect in by["lenet5"].reason
    if "boom" in how:
        assert "boom: out of cheese" in by["lenet5"].reason
    on_disk = {p.name: results.load(p).status for p in tmp_path.glob("*.json")}
    assert on_disk == {"jax__mlp__default__r0.json": "ok", "jax__lenet5__default__r0.json": "failed"}
    assert not list(tmp_path.glob(".*"))  # no partial result left behind


@pytest.mark.e2e
def test_run_with_report_writes_the_report(tmp_path):
    proc = run_cli("run", "--backends", "jax,flux", "--workloads", "mlp", "--networks", "2", "--steps", "12",
                   "--warmup", "1", "--repeats", "2", "--gc", "default,freeze", "--out",
                   str(tmp_path / "results" / "demo"), "--no-progress", "--report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = tmp_path / "reports" / "demo"
    assert (report / "index.html").is_file()
    assert (report / "summary_mlp.png").is_file()
    assert (report / "results.tar.gz").is_file()
    md = (report / "index.md").read_text()
    # a trace only of cells that made a full collection; where none did, the page says so
    assert (report / "trace_mlp.png").is_file() == ("No cell made a full collection in any repeat" not in md)
    summary_rows = md.split("## Summary", 1)[1].splitlines()  # the verdict's headline table has the cell too
    row = [c.strip() for c in next(line for line in summary_rows if line.startswith("| jax/mlp/default")).split("|")]
    assert row[2] == "2", row
    assert row[-2] == "24", row  # repeats, then counts first, the steps last
    assert "| unavailable | GC policy freeze has no meaning for flux (julia) | 2 |" in md
    assert "only 12 timed steps per repeat (&lt; 100)" in md  # short cells are flagged


def test_the_eta_holds_once_each_kind_of_cell_has_run():
    """Issue 45: cells of two kinds (a slow vit, a fast mlp), interleaved: once one of each
    has finished, the estimate of what is left is the truth, and it does not swing."""
    from gcbench.measuring.cell import Cell
    from gcbench.running.runner import KindETA

    now = [0.0]
    took = {"vit": 30.0, "mlp": 3.0}
    cells = [Cell("nnx", w, "default", r, 1, 0, 150, 3, 0, 10) for r in range(3) for w in ("vit", "mlp")]
    eta = KindETA(cells, clock=lambda: now[0])
    seen = []
    for i, c in enumerate(cells):
        eta.start(c)
        now[0] += took[c.workload]
        eta.finish(c)
        truth = sum(took[x.workload] for x in cells[i + 1:])
        if i >= 1:  # one of each kind has run
            seen.append(eta.seconds())
            assert eta.seconds() == pytest.approx(truth)
    assert seen[-1] == 0
