"""`gcbench compare` on simulated repeats whose truth is known (its calibration, coverage
and power are in test_inference.py)."""

import json
import re

import numpy as np
import pytest

from conftest import run_cli
from gcbench.analysing import comparison
from gcbench.measuring import results
from gcbench.publishing import comparison_text
from simulate import docs


def test_a_folder_against_itself_is_the_same_or_inconclusive():
    rng = np.random.default_rng(5)
    a = docs(rng, 3, 10.0) + docs(rng, 3, 20.0, backend="nnx") + \
        docs(rng, 3, 30.0, backend="equinox-filter", full_every=40, pause_ms=60)
    c = comparison.compare_docs(a, a)
    assert {r.verdict for r in c.rows} <= {"same", "inconclusive"}
    for r in c.rows:
        assert all(t.verdict in ("same", "inconclusive") for t in r.tests)
    assert c.rows[0].tests[0].effect == pytest.approx(1.0)


def test_gc_and_full_collection_changes_are_tested_on_repeats():
    rng = np.random.default_rng(6)
    a = docs(rng, 3, 30.0, full_every=20, pause_ms=50)
    b = docs(rng, 3, 30.0)
    c = comparison.compare_docs(a, b)
    median, share, full, mean, colls = c.rows[0].tests
    assert full.verdict == "fewer full GCs"
    assert full.exact
    assert full.b == 0
    assert full.a == pytest.approx(50)
    assert colls.verdict == "fewer collections"
    assert colls.exact
    assert colls.a == pytest.approx(50)
    assert share.verdict == "less GC"
    assert share.effect < -0.03
    assert median.verdict in ("same", "inconclusive")  # one step in 20 costs more: the median does not move
    # ... but the time a run takes does: 50 ms every 20 steps of 30 ms is 2.5 ms a step, 8 %
    assert mean.effect < 1  # (8 % by construction; three noisy repeats a side estimate it loosely)
    # counts first; the full collections by their period (A's read, B's at least the window)
    assert c.rows[0].summary.startswith("fewer full GCs (a full collection every 20 -> at least 300 steps), fewer "
                                        "collections")
    assert "less GC" in c.rows[0].summary
    assert c.tests == 3  # the fixed schedules are compared exactly; the other three are tested together
    rejected = sum(t.p_adj <= 0.05 for t in (median, share, mean))
    assert share.level == pytest.approx(1 - rejected * 0.05 / 3)  # the false-coverage-rate level


def test_the_mean_step_answers_what_the_median_cannot():
    """Full collections every 10th step, 100 ms each: the median step does not move, the
    time a run takes falls by a quarter without them, and the mean step's test says so
    (both sides in one run, as an interleaved A/B is)."""
    rng = np.random.default_rng(16)
    c = comparison.compare_docs(docs(rng, 5, 30.0, full_every=10, pause_ms=100, run_id="r1"),
                             docs(rng, 5, 30.0, run_id="r1"))
    median, _share, _full, mean, _ = c.rows[0].tests
    assert median.verdict in ("same", "inconclusive")
    assert mean.verdict == "faster run"
    assert mean.effect == pytest.approx(30 / 40, rel=0.05)
    assert mean.ci[0] < mean.effect < mean.ci[1] < 1
    assert "faster run (-2" in c.rows[0].summary


def test_one_repeat_cannot_be_called_faster():
    rng = np.random.default_rng(7)
    c = comparison.compare_docs(docs(rng, 1, 10.0), docs(rng, 1, 30.0))
    median = c.rows[0].tests[0]
    assert median.verdict == "inconclusive"
    assert "3 or more repeats" in median.note
    assert c.detectable is None


def test_benjamini_hochberg_steps_up():
    assert comparison.benjamini_hochberg([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.04, 0.04])
    assert comparison.benjamini_hochberg([0.5]) == [0.5]
    assert comparison.benjamini_hochberg([0.001, 0.2, 0.9, 0.04]) == pytest.approx([0.004, 0.2667, 0.9, 0.08], abs=1e-4)


def test_pairs_that_differ_in_settings_are_refused_unless_forced():
    rng = np.random.default_rng(8)
    a = docs(rng, 3, 10.0)
    b = docs(rng, 3, 10.0, steps=200)
    for d in b:
        d.networks = 50
    c = comparison.compare_docs(a, b)
    assert not c.rows
    assert c.refused == ["jax/mlp/default: networks 2 in A, 50 in B; steps 300 in A, 200 in B"]
    forced = comparison.compare_docs(a, b, force=True)
    assert forced.rows
    assert forced.rows[0].forced
    other_machine = docs(rng, 3, 10.0)
    for d in other_machine:
        d.metadata["cpu"] = "another cpu"
    assert not comparison.compare_docs(a, other_machine).refused  # compared on counts (below)


def _on(documents, cpu=None, others=None, cpu_time=False):
    """The documents as measured on another CPU model, and/or beside processes that used
    `others` cores of 2; `cpu_time`: with per-step CPU times (the wall time less a third)."""
    for d in documents:
        if cpu:
            d.metadata["cpu"] = cpu
        if others is not None:
            d.machine_state.update(cpu_count=2, others_cores=others, steal=0.0, load_seconds=3.0)
        if cpu_time:
            d.cpu_ns = [int(w * 2 / 3) for w in d.wall_ns]
            d.gc_cpu_ns = list(d.gc_ns)
    return documents


def test_two_kinds_of_machine_compare_on_counts_and_say_times_are_not_compared(tmp_path):
    """Issue 40: the README's CI recipe across CPU models. Counts are the same on any machine
    with the same interpreter and packages, so they are judged; the times (3 x slower here)
    are not, and one line says so. Exit 0 or 1 on the counts, never 2."""
    rng = np.random.default_rng(40)
    a = docs(rng, 3, 10.0, full_every=50, pause_ms=5)
    same_counts = _on(docs(rng, 3, 30.0, full_every=50, pause_ms=15), cpu="another cpu")
    c = comparison.compare_docs(a, same_counts)
    (row,) = c.rows
    by = {t.metric: t for t in row.tests}
    assert {by[m].verdict for m in ("median", "mean", "gc_share")} == {"not judged"}
    assert "other machine: A ran on sim x2, B on another cpu x2" in by["median"].not_judged
    assert by["full_rate"].verdict == "same"
    assert by["full_rate"].exact
    assert by["collections"].verdict == "same"
    folder_a, folder_b = _folder(tmp_path / "a", a), _folder(tmp_path / "b", same_counts)
    gate = ("--fail-on", "slower,slower-run,more-gc,more-full-gc")
    proc = run_cli("compare", str(folder_a), str(folder_b), *gate)
    assert proc.returncode == 0, proc.stderr
    # the table and its verdicts first, then why times are not compared, before the method
    first = " ".join(proc.stdout.split("repeats are the unit")[0].split())
    assert first.startswith(("cell ", "full/1000"))
    assert "times are not compared across kinds of machine (A ran on sim x2, B on another cpu x2)" in first
    assert "not judged" in proc.stderr
    assert "the counts still gate" in proc.stderr
    more = _folder(tmp_path / "more", _on(docs(rng, 3, 30.0, full_every=25, pause_ms=15), cpu="another cpu"))
    proc = run_cli("compare", str(folder_a), str(more), *gate)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().endswith("jax/mlp/default more full GCs"), proc.stderr


def test_times_from_a_loaded_machine_are_not_judged_and_no_fail_on_fires_on_them(tmp_path):
    """Issue 40: an A/A whose first run was loaded (its steps 60 % longer): every timed test
    reads 'not judged' with the load, the counts are judged, and the GC share is read in
    CPU time where both sides recorded it, and not judged either within what load alone
    moved it in A/As (issue 52)."""
    rng = np.random.default_rng(41)
    quiet = _on(docs(rng, 3, 10.0, full_every=50, pause_ms=5), others=0.02, cpu_time=True)
    loaded = _on(docs(rng, 3, 16.0, full_every=50, pause_ms=5), others=1.3, cpu_time=True)
    for d in loaded:  # the load stretches wall time, not the thread's CPU time
        d.cpu_ns = [int(c / 1.6) for c in d.cpu_ns]
    c = comparison.compare_docs(loaded, quiet)
    by = {t.metric: t for t in c.rows[0].tests}
    assert by["median"].verdict == by["mean"].verdict == "not judged"
    assert "loaded machine: A 3 of 3 repeats loaded, other processes used 1.3 of 2 cores" in by["median"].not_judged
    assert by["gc_share"].note.startswith("in CPU time")
    assert by["gc_share"].verdict == "not judged"
    assert "within what load alone moves it (x1.2)" in by["gc_share"].not_judged
    assert by["full_rate"].verdict == "same"
    assert by["full_rate"].exact
    # the refusal comes with what was measured all the same (issue 64: a 550 x step read "not judged" alone)
    words = comparison.overall(c.rows[0].tests)
    assert words.startswith("same counts; times not judged (")
    assert f"median step {by['median'].effect:.3g} x measured" in words
    a, b = _folder(tmp_path / "a", loaded), _folder(tmp_path / "b", quiet)
    proc = run_cli("compare", str(a), str(b), "--fail-on", "slower,slower-run,more-gc,more-full-gc")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "times not judged in 1 of 1 cells (loaded machine: A 3 of 3 repeats" in text
    assert text.index("A->B") < text.index("times not judged in") < text.index("repeats are the unit")
    # without CPU times the GC share is a wall-time share: not judged either
    for d in loaded + quiet:
        del d.cpu_ns, d.gc_cpu_ns
    assert comparison.compare_docs(loaded, quiet).rows[0].tests[1].verdict == "not judged"
    # a quiet machine's readings leave every test judged
    assert comparison.compare_docs(quiet, quiet).rows[0].tests[0].verdict in ("same", "inconclusive")


def test_environments_are_part_of_the_key():
    rng = np.random.default_rng(9)
    envs = ["python=3.11 jax==0.8.0", "python=3.12 jax==0.8.0"]
    a = [d for e in envs for d in docs(rng, 3, 10.0, env=e)]
    b = [d for e in envs for d in docs(rng, 3, 10.0, env=e)]
    c = comparison.compare_docs(a, b)
    assert len(c.rows) == 2
    assert {r.key_a[3] for r in c.rows} == {"py3.11 jax==0.8.0", "py3.12 jax==0.8.0"}


def test_two_folders_that_differ_only_in_environment_pair_across_it():
    rng = np.random.default_rng(10)
    a = docs(rng, 3, 10.0, env="python=3.11") + docs(rng, 3, 20.0, backend="nnx", env="python=3.11")
    b = docs(rng, 3, 10.0, env="python=3.12") + docs(rng, 3, 20.0, backend="nnx", env="python=3.12")
    c = comparison.compare_docs(a, b)
    assert len(c.rows) == 2
    assert any("paired across environments" in n for n in c.notes)
    assert all(r.key_a[3] == "py3.11" and r.key_b[3] == "py3.12" for r in c.rows)


def _folder(path, documents):
    path.mkdir()
    for d in documents:
        results.write(d, path / f"{d.cell}.json")
    return path


def test_compare_cli_text_and_json(tmp_path):
    rng = np.random.default_rng(13)
    a = _folder(tmp_path / "a", docs(rng, 3, 10.0) + docs(rng, 3, 10.0, backend="nnx"))
    b = _folder(tmp_path / "b", docs(rng, 3, 20.0) + docs(rng, 3, 10.0, backend="nnx"))
    proc = run_cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("jax/mlp/default"))
    change = float(re.search(r"([+-][\d.]+) % \(", lines[at]).group(1))  # the median's change, its first
    assert lines[at + 1].lstrip().startswith("slower (+")
    assert 70 < change < 130
    assert "smallest change of a median detected with 80 % power at 3 repeats per cell" in proc.stdout
    assert "Benjamini-Hochberg" in proc.stdout
    import shutil

    copy = shutil.copytree(a, tmp_path / "a-again")  # the same runs in another folder: an A/A pair
    proc = run_cli("compare", str(a), str(copy), "--json")
    doc = json.loads(proc.stdout)
    assert {r["verdict"] for r in doc["rows"]} <= {"same", "inconclusive"}
    assert doc["rows"][0]["tests"][0]["metric"] == "median"
    assert doc["min_effect"] == 0.05


def test_compare_cli_refuses_in_one_line_per_cell(tmp_path):
    rng = np.random.default_rng(14)
    a = _folder(tmp_path / "a", docs(rng, 3, 10.0))
    b = _folder(tmp_path / "b", docs(rng, 3, 10.0, steps=100))
    proc = run_cli("compare", str(a), str(b))
    assert proc.returncode == 2
    assert "jax/mlp/default: steps 300 in A, 100 in B" in proc.stdout
    assert proc.stderr.count("\n") == 1
    assert "--force" in proc.stderr
    assert run_cli("compare", str(a), str(b), "--force").returncode == 0
    bad = run_cli("compare", str(a), str(b), "--min-effect", "5")
    assert bad.returncode == 2
    assert "fraction" in bad.stderr


def test_compare_json_is_strict_json_when_one_side_has_no_full_collection(tmp_path):
    """A ratio against zero full collections is infinite: `--json` writes null, which every
    JSON parser reads (Python's json would accept `Infinity`; JSON.parse does not)."""
    rng = np.random.default_rng(15)
    varying = docs(rng, 3, 10.0, full_every=50, pause_ms=20)
    extra = np.asarray(varying[0].gc_collections)
    extra[10, 2] = 1  # 7, 6, 6 full collections: counts that vary are tested, not compared exactly
    varying[0].gc_collections = extra.tolist()
    a = _folder(tmp_path / "a", varying)
    b = _folder(tmp_path / "b", docs(rng, 3, 10.0))

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    proc = run_cli("compare", str(a), str(b), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Infinity" not in proc.stdout
    assert "NaN" not in proc.stdout
    doc = json.loads(proc.stdout, parse_constant=refuse)
    full = next(t for t in doc["rows"][0]["tests"] if t["metric"].startswith("full"))
    assert full["verdict"] in ("fewer full GCs", "inconclusive")


def test_fail_on_slower_fails_a_ci_job_on_a_real_slowdown_and_not_on_an_aa_pair(tmp_path):
    """`compare --fail-on slower` exits 1 when a cell is slower (here 2.5 x: two runs apart
    a change must clear each run's own level, comparison.RUN_SD), 0 on an A/A
    pair (the same results twice: two independent runs are called slower at the test's
    level, which test_inference calibrates), and 2 when the folders share no cell."""
    rng = np.random.default_rng(21)
    same = docs(rng, 3, 10.0) + docs(rng, 3, 10.0, backend="nnx")
    a = _folder(tmp_path / "a", same)
    a2 = _folder(tmp_path / "a2", same)
    b = _folder(tmp_path / "b", docs(rng, 3, 25.0) + same[3:])  # jax 2.5 x slower, nnx unchanged
    slow = run_cli("compare", str(a), str(b), "--fail-on", "slower")
    assert slow.returncode == 1, slow.stderr
    assert slow.stderr.strip() == "gcbench: --fail-on slower: 1 verdict: jax/mlp/default slower"
    assert run_cli("compare", str(a), str(a2), "--fail-on", "slower,more-gc,more-full-gc").returncode == 0
    assert run_cli("compare", str(a), str(b)).returncode == 0  # without --fail-on a verdict is only printed
    other = _folder(tmp_path / "other", docs(rng, 3, 10.0, workload="lenet5"))
    none = run_cli("compare", str(a), str(other), "--json")
    assert none.returncode == 2
    assert "share no cell" in none.stderr
    assert none.stderr.count("\n") == 1
    bad = run_cli("compare", str(a), str(b), "--fail-on", "slower,faster")
    assert bad.returncode == 2
    assert ("--fail-on takes slower, slower-run, more-gc, more-full-gc, more-collections, "
                                    "more-memory") in bad.stderr


def test_an_interleaved_ab_in_one_folder_is_compared_paired_and_without_the_run_allowance(tmp_path):
    """`gcbench run --env BASE --env HEAD` measures both sides in one invocation, round by
    round; `compare FOLDER --base --head` compares them paired by round, with no allowance
    for two runs apart. Two folders from separate runs get that allowance, and say so."""
    rng = np.random.default_rng(11)
    drift = rng.normal(0, 0.05, 6).tolist()
    base = docs(rng, 6, 10.0, env="python=3.11", run_id="r1", rounds=drift, shift_sd=0.02)
    head = docs(rng, 6, 11.0, env="python=3.12", run_id="r1", rounds=drift, shift_sd=0.02)
    folder = _folder(tmp_path / "ab", base + head)
    proc = run_cli("compare", str(folder), "--base", "py3.11", "--head", "py3.12", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["rows"][0]
    median = row["tests"][0]
    assert median["paired"]
    assert not row["runs_apart"]
    assert median["verdict"] == "slower"
    assert "two runs apart" not in median["note"]
    gate = run_cli("compare", str(folder), "--base", "py3.11", "--head", "py3.12", "--fail-on", "slower")
    assert gate.returncode == 1
    assert "slower" in gate.stderr
    # the same cells from two separate runs: widened, and said
    apart = comparison.compare_docs(docs(rng, 3, 10.0, run_id="r1"), docs(rng, 3, 10.0, run_id="r2"))
    assert apart.rows[0].runs_apart
    assert "two runs apart" in apart.rows[0].tests[0].note
    wrong = run_cli("compare", str(folder), "--base", "py3.11", "--head", "py3.21")
    assert wrong.returncode == 2
    assert "did you mean 'py3.12'" in wrong.stderr
    assert wrong.stderr.count("\n") == 1
    alone = run_cli("compare", str(folder))
    assert alone.returncode == 2
    assert "--base ENV --head ENV" in alone.stderr


def test_compare_fits_a_100_column_terminal_and_names_its_tests(tmp_path):
    """Issue 32: 149-column tables wrapped at 100 columns; COLUMNS=100 now fits."""
    rng = np.random.default_rng(21)
    long = "equinox-partition"
    a = _folder(tmp_path / "a", docs(rng, 3, 10.0, backend=long) + docs(rng, 3, 10.0, backend="nnx"))
    b = _folder(tmp_path / "b", docs(rng, 3, 25.0, backend=long) + docs(rng, 3, 10.0, backend="nnx"))
    import os

    for columns in (100, 80):
        proc = run_cli("compare", str(a), str(b), env=dict(os.environ, COLUMNS=str(columns)))
        assert proc.returncode == 0, proc.stderr
        assert max(len(line) for line in proc.stdout.splitlines()) <= columns, proc.stdout
        assert ("tests of the full collections, collections, GC share, median step, mean step"
                in " ".join(proc.stdout.split()))
        assert "equinox-partition/mlp/default" in proc.stdout
        assert "slower (+" in proc.stdout
    wide = run_cli("compare", str(a), str(b), env=dict(os.environ, COLUMNS="200"))
    assert "median ms A->B" in wide.stdout  # room: every column stays


def test_a_side_compared_with_itself_is_refused(tmp_path):
    from conftest import assert_one_line_error, run_cli

    proc = run_cli("compare", str(tmp_path), "--base", "py3.11", "--head", "py3.11")
    assert_one_line_error(proc, "--base and --head are both 'py3.11'")


def test_a_folder_compared_with_itself_is_refused_however_it_is_named(tmp_path, monkeypatch):
    """Issue 65, item 4: `compare X X` passed every gate (and in the gc-gate action a
    baseline equal to `out` passed forever): refused by real path, a link included."""
    from conftest import assert_one_line_error

    rng = np.random.default_rng(15)
    a = _folder(tmp_path / "a", docs(rng, 3, 10.0))
    (tmp_path / "link").symlink_to(a)
    monkeypatch.chdir(tmp_path)
    for other in ("a", "./a/", str(a), "link"):
        proc = run_cli("compare", "a", other, "--fail-on", "slower")
        assert_one_line_error(proc, "are the same folder: a run compared with itself says nothing")


def test_the_detectable_change_two_runs_apart_carries_the_run_term():
    """Issue 43: compare of two runs prints the smallest detectable change with each run's
    own level in it (what its test carries), and says that no number of repeats passes the
    floor; within one run it has none."""
    from gcbench.analysing import stats

    rng = np.random.default_rng(43)
    a, b = docs(rng, 3, 10.0, run_id="run-a"), docs(rng, 3, 10.0, run_id="run-b")
    apart = comparison.compare_docs(a, b).detectable
    d = apart
    assert d.run_sd == comparison.RUN_SD
    assert d.single == pytest.approx(stats.detectable_change(d.spread, 3, 3, comparison.ALPHA,
                                                                run_sd=comparison.RUN_SD, run_df=comparison.RUN_DF))
    assert d.single > stats.detectable_change(d.spread, 3, 3, comparison.ALPHA)
    text = comparison_text.format_detectable(d)
    assert "two runs apart" in text
    assert "the floor is" in text
    same = comparison.compare_docs(a, docs(rng, 3, 10.0, run_id="run-a")).detectable
    assert same.run_sd == 0.0
    assert "two runs apart" not in comparison_text.format_detectable(same)


@pytest.mark.parametrize(("pressure", "judged"), [(0.3, True), (0.9, False)])
def test_the_gc_share_under_load_is_judged_beyond_what_load_moves_and_only_as_far_as_measured(pressure, judged):
    """Issue 53: the GC share in CPU time moved by at most x1.20 beside up to four busy
    processes (CPU pressure up to 0.76; benchmarks/load_margins.py). A share three times as
    large is judged on a side loaded at pressure 0.3, and not at 0.9, beyond what was
    measured; a share as large as the other never is."""
    rng = np.random.default_rng(53)
    quiet = _on(docs(rng, 3, 10.0, full_every=50, pause_ms=5), others=0.02, cpu_time=True)
    loaded = _on(docs(rng, 3, 10.0, full_every=10, pause_ms=5), others=1.0, cpu_time=True)  # 5x the pauses
    same = _on(docs(rng, 3, 10.0, full_every=50, pause_ms=5), others=1.0, cpu_time=True)
    for d in loaded + same:
        d.machine_state["cpu_pressure"] = pressure
    share = {t.metric: t for t in comparison.compare_docs(quiet, loaded).rows[0].tests}["gc_share"]
    assert (share.verdict == "more GC") is judged, share
    if judged:
        assert share.note.startswith("in CPU time")
    if not judged:
        assert "CPU pressure 0.90, beyond the 0.80 of the A/As" in share.not_judged
    alike = {t.metric: t for t in comparison.compare_docs(quiet, same).rows[0].tests}["gc_share"]
    assert alike.verdict == "not judged"


def test_user_loops_measured_in_turn_are_one_period_and_in_sequence_two_runs():
    """Repeats without a run id (a user's loops, each its own process): where the two sides'
    repeats interleave in time they were measured over one period, and no run term widens
    their test; one side's repeats all before the other's are two runs apart, as ever, and
    so are repeats of unknown start."""
    import datetime

    def dated(ds, minutes):
        for d, m in zip(ds, minutes, strict=True):
            d.metadata["date"] = (datetime.datetime(2026, 11, 27, 3, 0, tzinfo=datetime.timezone.utc)
                                     + datetime.timedelta(minutes=m)).isoformat()
        return ds

    rng = np.random.default_rng(31)
    a, b = docs(rng, 3, 10.0), docs(rng, 3, 25.0)
    for minutes_a, minutes_b, apart in (([0, 2, 4], [1, 3, 5], False), ([0, 1, 2], [3, 4, 5], True)):
        c = comparison.compare_docs(dated(a, minutes_a), dated(b, minutes_b))
        row = c.rows[0]
        assert row.runs_apart is apart
        assert ("two runs apart" in row.tests[0].note) is apart
    for d in a:
        del d.metadata["date"]
    assert comparison.compare_docs(a, dated(b, [1, 3, 5])).rows[0].runs_apart is True
