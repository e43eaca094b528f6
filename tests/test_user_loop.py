"""A user's own loop under `gcbench.measure`: the probe changes nothing and loses nothing,
the loop is compared with its own fix, explained, and its memory is shown beside its time.
The three examples in examples/ are run as a user runs them."""

from __future__ import annotations

import gc
import json
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import gcbench
from conftest import run_cli
from gcbench.analysing import summary
from gcbench.measuring import results

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# One loop, run as is and under the probe: each step makes K objects that refer to
# themselves (cyclic garbage, only the collector frees it). Both runs import gcbench and
# start from a collected heap, so they differ only in `with m.step():`.
LOOP = textwrap.dedent("""
    import gc, json, sys
    import gcbench

    class Node:
        def __init__(self):
            self.me = self
            self.buffer = bytearray(1024)

    def step(k):
        for _ in range(k):
            Node()

    measured, k, steps = sys.argv[1] == "measured", int(sys.argv[2]), int(sys.argv[3])
    counts = [0, 0, 0]
    def count(phase, info):
        if phase == "stop":
            counts[info["generation"]] += 1
    m = gcbench.measure("selfref", capacity=steps)
    gc.collect()
    gc.callbacks.append(count)
    if measured:
        with m:
            for _ in range(steps):
                with m.step():
                    step(k)
    else:
        for _ in range(steps):
            step(k)
    gc.callbacks.remove(count)
    out = {"callbacks": counts}
    if measured:
        doc = m.result()
        events = doc.gc_events
        out["in_steps"] = [sum(1 for s, g in zip(events["step"], events["generation"]) if s >= 0 and g == q)
                           for q in range(3)]
        out["summary"] = m.summary()
    print(json.dumps(out))
""")


def _loop(tmp_path, measured: bool, k: int, steps: int) -> dict:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    proc = subprocess.run([sys.executable, str(script), "measured" if measured else "bare", str(k), str(steps)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(("k", "steps"), [(1, 20_000), (3, 20_000), (10, 10_000), (100, 2_000), (1_000, 200)])
def test_the_probe_moves_no_collection_and_files_each_in_its_step(tmp_path, k, steps):
    bare = _loop(tmp_path, False, k, steps)["callbacks"]
    measured = _loop(tmp_path, True, k, steps)
    for gen in range(2):  # young and middle collections: within 2 % of the loop run as is
        assert abs(measured["callbacks"][gen] - bare[gen]) <= max(1, 0.02 * bare[gen]), (bare, measured)
    assert measured["callbacks"][2] == bare[2]
    # at least 99 % of them inside the step that triggered them (the probe's own allocations
    # used to start every one of them between steps: GC share 0.00)
    assert sum(measured["in_steps"]) >= 0.99 * sum(measured["callbacks"]) > 0
    s = measured["summary"]
    assert s["gc_share"] > 0
    assert s["full_collections"] == measured["callbacks"][2]
    assert not any(s["between_steps_collections"])


def test_entering_and_leaving_a_step_creates_no_tracked_object():
    """With the young generation's threshold at 1 and one tracked object made per step, a
    collection starts at the step's allocation; any tracked object the probe made at a step's
    boundary would start one there, between steps."""
    thresholds = gc.get_threshold()
    keep = []
    gc.collect()
    gc.set_threshold(1, 10, 10)
    try:
        with gcbench.measure("boundaries", warmup=2, capacity=2_000) as m:
            for _ in range(2_002):
                with m.step():
                    keep.append([])
    finally:
        gc.set_threshold(*thresholds)
    doc = m.result()
    assert doc.between_steps["collections"] == [0, 0, 0]
    assert sum(map(sum, doc.gc_collections)) >= 900  # about one every other step, all of them in steps


def test_collections_between_steps_are_counted_in_the_gc_share():
    """Work the loop does outside `m.step()` is the loop's too: its collections are not
    lost, they are reported beside the steps and their pauses count in the GC share."""
    junk = []
    with gcbench.measure("between", capacity=500) as m:
        for i in range(500):
            with m.step():
                sum(range(100))
            junk.append([[] for _ in range(200)])  # a data loader's lists, between steps
            if i % 50 == 49:
                gc.collect()
    doc = m.result()
    between = doc.between_steps
    assert sum(between["collections"]) >= 10
    assert between["gc_ns"] > 0
    s = m.summary()
    steps_only = sum(doc.gc_ns) / sum(doc.wall_ns)
    assert s["gc_share"] > steps_only  # the pauses between steps are in the share
    assert s["between_steps_collections"] == between["collections"]
    assert "between steps" in " ".join(s["flags"])


def test_metadata_is_what_the_user_said_and_print_says_what_was_measured(tmp_path):
    with gcbench.measure("meta", warmup=2, batch_size=32) as m:
        for _ in range(12):
            with m.step():
                [[] for _ in range(10)]
    doc = m.result()
    assert doc.batch_size == 32
    assert doc.networks is None
    assert results.batch_size(doc) == 32
    assert doc.metadata["command"] == sys.orig_argv  # the interpreter, the script and its arguments
    text = repr(m)
    # counts first (issue 67: the collections of each generation and the promotions a step,
    # what a GC budget bounds, as README promises), then times
    gens = [int(n) for n in summary.collections_by_generation(doc)]
    assert text.startswith("gcbench.measure('meta'): 10 timed steps, full collections 0, collections by generation "
                           + " / ".join(map(str, gens)) + ", promotions ")
    assert text.index("promotions ") < text.index("median step ")
    assert "GC " in text
    assert "mean " in text
    with gcbench.measure("meta2") as bare:
        with bare.step():
            pass
    plain = bare.result()
    assert "batch_size" not in plain.to_doc()
    assert plain.networks is None
    assert results.batch_size(plain) is None
    assert m.summary()["warmup_gc_ms"] is not None  # the warm-up, summarized on its own


def test_the_environment_turns_explain_on_and_save_writes_the_explanation(tmp_path, monkeypatch):
    monkeypatch.setenv("GCBENCH_EXPLAIN", "1")
    history = []
    thresholds = gc.get_threshold()
    gc.set_threshold(100, 2, 10)  # young collections often enough that 300 steps promote
    try:
        with gcbench.measure("explained", policy="freeze") as m:
            for i in range(300):
                with m.step():
                    history.append({"step": i, "metrics": {"loss": 0.5}})  # RECORD-LINE
    finally:
        gc.set_threshold(*thresholds)
    assert "[explain: timings disturbed]" in repr(m)
    assert "policy='freeze'" in repr(m)
    path = m.save(tmp_path / "r")
    assert path.name == "explain.json"
    assert not list((tmp_path / "r").glob("user__*.json"))
    expl = json.loads(path.read_text())["explanations"][0]
    assert expl["label"] == "user/explained/freeze"
    line = next(n for n, text in enumerate(open(__file__), 1) if "# RECORD-LINE" in text)
    from gcbench.measuring import site_names

    assert f"user {site_names.site_path(__file__)}:{line}" in expl["python"]["promoted"]["by_site"]


def test_a_manual_policy_saves(tmp_path):
    with gcbench.measure("manual", policy="manual:5") as m:
        for _ in range(5):
            with m.step():
                pass
    path = m.save(tmp_path / "r")
    assert path.name == "user__manual__manual-5__r0.json"
    assert results.load(path).gc_policy == "manual:5"


def _run(script: str, *args: str, timeout: int = 300) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.e2e
@pytest.mark.slow
def test_a_memory_fix_is_reported_as_a_trade_not_a_regression(tmp_path):
    """examples/cycles_in_gen2.py (python/cpython#83242): as reported, full collections never
    run and memory grows; the reporter's fix, gc.collect() every 500 steps, costs time and
    halves the growth. compare says both, and each --fail-on picks its own side."""
    a, b = tmp_path / "as-reported", tmp_path / "collect-every-500"
    # the example as README runs it (16 KiB records over 20,000 steps: the growth stands well
    # above the interpreter's own ~100 MiB whatever the phase of the collector's counters
    # when the loop starts, which decides how many windows of records reach the oldest
    # generation by a given step)
    for _ in range(3):
        _run("cycles_in_gen2.py", "--out", str(a))
        _run("cycles_in_gen2.py", "--out", str(b), "--collect-every", "500")
    proc = run_cli("compare", str(a), str(b), "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["rows"][0]
    tests = {t["metric"]: t for t in row["tests"]}
    assert tests["full_rate"]["verdict"] == "more full GCs"
    assert tests["full_rate"]["exact"]
    assert tests["peak_rss"]["verdict"] == "less memory"
    assert tests["peak_rss"]["effect"] < 0.9
    assert run_cli("compare", str(a), str(b), "--fail-on", "more-memory").returncode == 0
    failed = run_cli("compare", str(a), str(b), "--fail-on", "slower-run,more-memory")
    # a time: judged slower where the machine allows; never faster. Beside other work it may be
    # left unjudged (a loaded machine, issue 40: why in its own field) or come out inconclusive
    # (noise below the load threshold widening three repeats' interval): memory is judged either way
    assert tests["mean"]["verdict"] in ("slower run", "not judged", "inconclusive"), tests["mean"]
    if tests["mean"]["verdict"] == "not judged":
        assert tests["mean"]["not_judged"].startswith("loaded machine: "), tests["mean"]
        assert "not judged" in failed.stderr
    if tests["mean"]["verdict"] != "slower run":
        assert "less memory (-" in row["summary"]
        assert failed.returncode == 0
    else:
        assert tests["mean"]["verdict"] == "slower run"
        # beside two busy processes the median and the GC share may be left unjudged, by name
        assert re.search(r"a trade, ([a-zA-Z ]+ for [a-zA-Z ]+, )*time for memory(; not judged: .+ measured)?$",
                         row["summary"]), row["summary"]
        assert "less memory (-" in row["summary"]
        assert failed.returncode == 1
        assert "slower run" in failed.stderr
        assert "more memory" not in failed.stderr
    summary = gcbench.to_dataframe(a, per="cell").iloc[0]
    fixed = gcbench.to_dataframe(b, per="cell").iloc[0]
    # as reported, full collections wait (none on 3.11 with gcbench's imports; 3 on 3.10,
    # whose smaller heap lets the rule's quarter pass sooner): fewer than the fix makes
    assert summary["rss_growth_mb_per_1000"] > 1
    assert summary["full_collections"] < fixed["full_collections"]


@pytest.mark.e2e
@pytest.mark.slow
def test_a_loop_against_its_freeze_and_its_fix_each_in_its_own_folder(tmp_path):
    """examples/list_dataloader.py (karpathy/nanochat#477): the same loop under default and
    freeze, and its array fix as a named variant, each in a folder of its own: compare
    pairs them by the loop's name, gives verdicts and applies --fail-on."""
    lists, freeze, arrays = tmp_path / "lists", tmp_path / "freeze", tmp_path / "arrays"
    for _ in range(3):  # 2,200 steps: the loop's one full collection comes at about step 1,800
        _run("list_dataloader.py", "--out", str(lists), "--steps", "2200")
        _run("list_dataloader.py", "--out", str(freeze), "--steps", "2200", "--freeze")
        _run("list_dataloader.py", "--out", str(arrays), "--steps", "2200", "--arrays")
    proc = run_cli("compare", str(lists), str(freeze))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # notes wrap to the terminal's width
    assert "user/list-dataloader/default vs user/list-dataloader/freeze" in text
    assert "paired by backend and workload" in text
    c = json.loads(run_cli("compare", str(lists), str(freeze), "--json").stdout)
    tests = {t["metric"]: t for t in c["rows"][0]["tests"]}
    # one full collection in every repeat against none: what a schedule of period about 2,000
    # steps gives in a window of 2,200 from two starting heaps, so compare says it without a
    # test, and calls it the phase (issue 52), never a change a gate fails on
    assert tests["full_rate"]["verdict"] == "same (phase)"
    assert tests["full_rate"]["exact"]
    assert tests["full_rate"]["a"] > 0
    assert tests["full_rate"]["b"] == 0
    # its effect on time is a measurement: that one collection is some 15 ms of a 0.35 s
    # repeat (about 6 points of GC share on a quiet machine), which three processes on a
    # loaded machine resolve only some of the time; compare may say "inconclusive" there
    # (its estimate then either side of zero: CI beside the other e2e tests read +0.03
    # points), never the opposite verdict, and never "the same"
    # (or "not judged": beside other work, within what load alone moves a share)
    assert tests["gc_share"]["verdict"] in ("less GC", "inconclusive", "not judged")
    if tests["gc_share"]["verdict"] == "less GC":
        assert tests["gc_share"]["effect"] < 0
    reverse = run_cli("compare", str(freeze), str(lists), "--fail-on", "more-full-gc")
    assert reverse.returncode == 0
    assert "same (phase): full collections 0 -> 1 a repeat" in " ".join(
        reverse.stdout.split())
    c = json.loads(run_cli("compare", str(lists), str(arrays), "--json").stdout)
    verdicts = {t["metric"]: t["verdict"] for t in c["rows"][0]["tests"]}
    # the time a run takes: faster, or not judged where the machine was loaded (issue 40), or
    # inconclusive beside other work below that; never slower. The GC share is judged either way
    # (of CPU time on a loaded machine), and the fix removes all of it
    assert verdicts["mean"] in ("faster run", "not judged", "inconclusive")
    # judged within the load the A/As behind its margin measured; beyond it, not judged, and said why
    share = next(t for t in c["rows"][0]["tests"] if t["metric"] == "gc_share")
    assert verdicts["gc_share"] == "less GC" or "of the A/As" in share["not_judged"], share
    assert c["rows"][0]["cell"] == "user/list-dataloader/default vs [arrays]"
    # the reverse fails the time gate where its share is judged; on a machine loaded beyond what
    # the A/As measured (beside the other e2e tests), the share is not judged, cannot fail, and
    # the gate says so: a time, which load decides, never asserted to fail under it
    back = json.loads(run_cli("compare", str(arrays), str(lists), "--json").stdout)
    share = next(t for t in back["rows"][0]["tests"] if t["metric"] == "gc_share")
    gated = run_cli("compare", str(arrays), str(lists), "--fail-on", "more-gc")
    if share["verdict"] == "not judged":
        assert gated.returncode == 0, gated.stderr
        assert "cannot fail" in " ".join(gated.stderr.split())
    else:
        assert gated.returncode == 1, share
        assert "more GC" in gated.stderr


@pytest.mark.e2e
@pytest.mark.slow
def test_the_equinox_case_explained_with_a_site_in_the_users_file(tmp_path):
    """examples/equinox_flatten.py (seed 000): flattening the module twice per step makes
    more full collections than partitioning it once; the explanation names a site in the
    example's own file and says that full collections free almost nothing (the cost is
    scanning), and the report's Why section shows it."""
    folder = tmp_path / "eqx"
    twice = _run("equinox_flatten.py", "--out", str(folder / "twice"), "--variant", "twice", "--steps", "150")
    once = _run("equinox_flatten.py", "--out", str(folder / "once"), "--variant", "once", "--steps", "150")
    def full(text):
        return int(text.split("full collections ")[1].split(",")[0])
    assert full(twice) > full(once)  # counts: exact, one process each is enough to say so
    _run("equinox_flatten.py", "--out", str(folder / "twice"), "--variant", "twice", "--steps", "50", "--explain")
    expl = json.loads((folder / "twice" / "explain.json").read_text())["explanations"][0]
    promoted = expl["python"]["promoted"]
    assert any(k.startswith("equinox ") for k in promoted["by_site"])  # allocated inside equinox ...
    step_line = next(n for n, text in enumerate(open(EXAMPLES / "equinox_flatten.py"), 1) if "= step_filtered(" in text)
    assert next(iter(promoted["by_user_site"])).endswith(f"equinox_flatten.py:{step_line}")  # ... from this line
    kinds = [r["kind"] for r in expl["recommendations"]]
    assert "own-code" in kinds
    assert "scanning" in kinds
    report = run_cli("report", str(folder / "twice"), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report" / "index.md").read_text()
    why = page[page.index("## Why"):]
    assert f"equinox\\_flatten.py:{step_line}" in why
    assert "the cost is scanning long-lived objects" in why


@pytest.mark.parametrize(("value", "on"), [("", False), ("0", False), ("false", False), ("No", False), ("OFF", False),
                                       (" 0", False), ("1", True), ("true", True), ("Yes", True), (" on ", True)])
def test_gcbench_explain_reads_the_usual_switch_words(monkeypatch, value, on):
    monkeypatch.setenv("GCBENCH_EXPLAIN", value)
    assert gcbench.measure("x").explain is on


def test_gcbench_explain_refuses_anything_else_in_one_line(monkeypatch):
    from gcbench.core.errors import UsageError

    monkeypatch.setenv("GCBENCH_EXPLAIN", "maybe")
    with pytest.raises(UsageError, match=r"GCBENCH_EXPLAIN='maybe' is not a switch"):
        gcbench.measure("x")


def test_summary_and_save_work_on_the_probes_arrays(tmp_path):
    """summary() and save() take the probe's numpy arrays as they are: the same record as
    from the written document, and a document that reads back step for step."""
    from gcbench.analysing.summary import record, summarize

    m = gcbench.measure("arrays", capacity=5000)
    keep = []
    with m:
        for i in range(3000):
            with m.step():
                keep.append([[] for _ in range(i % 5)])
    path = m.save_result(tmp_path)
    doc = results.load_dir(tmp_path)[0]
    assert doc.wall_ns == m.result().wall_ns
    assert doc.gc_collections == m.result().gc_collections
    assert record(summarize([doc])) == m.summary()
    assert path.stat().st_size < 80 * 3000  # about 50 bytes a step


def test_steps_from_another_thread_are_named_as_such():
    import threading

    from gcbench.core.errors import UsageError

    errors = []
    m = gcbench.measure("threads")
    with m:
        with m.step():
            def other():
                try:
                    with m.step():
                        pass
                except UsageError as e:
                    errors.append(str(e))
            t = threading.Thread(target=other)
            t.start()
            t.join()
    assert errors
    assert "steps from another thread" in errors[0]


MEMORY_LOOP = '''
import json, sys
import gcbench

kept = []
keep = int(sys.argv[1])
with gcbench.measure("memory") as m:
    for i in range(2000):
        with m.step():
            if keep:
                kept.append(bytearray(keep))
            x = [i] * 10
text = str(m)
print(json.dumps({"growth": m.summary().get("rss_growth_mb_per_1000"), "text": text}))
'''


@pytest.mark.parametrize(("keep", "low", "high"), [(0, -0.5, 0.5), (1024, 0.7, 1.4)])
def test_memory_growth_comes_from_the_loops_own_samples(tmp_path, keep, low, high):
    """Issue 53: a loop whose memory stays flat over 2,000 steps reads no growth (its last
    sample is taken as the loop ends, not when the result is summarised, after gcbench's
    own imports); one that keeps 1 KiB a step reads about 1 MiB per 1,000 steps."""
    import subprocess
    import sys

    script = tmp_path / "memory.py"
    script.write_text(MEMORY_LOOP)
    proc = subprocess.run([sys.executable, str(script), str(keep)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert low <= got["growth"] <= high, got
    assert ("growing" in got["text"]) is (keep > 0 and got["growth"] > 1.0), got["text"]


WORKER_SIDE = '''
import gc, json, multiprocessing, sys
import gcbench


class Node:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it


def batches(n):
    """A data loader worker's own loop (docs/usage.md, "A worker's side"): each item made in
    a step, handed on outside it."""
    m = gcbench.measure("loader-worker", variant=f"worker{multiprocessing.current_process().name[-1]}")
    with m:
        for i in range(n):
            with m.step():
                item = [Node() for _ in range(20)]
            yield len(item)
    m.save(sys.argv[1])
    print(m)


def work():
    sum(batches(300))


if __name__ == "__main__":
    gc.disable()  # the trainer's choice, which a forked worker inherits
    ctx = multiprocessing.get_context("fork")
    p = ctx.Process(target=work, name="worker1")
    p.start()
    p.join()
'''


def test_a_disabled_collector_is_named_and_a_workers_side_is_measured(tmp_path):
    """Issue 55: a trainer that calls gc.disable() forks its data loader's workers, which
    inherit the collector off and keep every cycle they make. The worker's own loop, measured
    as docs/usage.md's recipe says, saves a result that says so: the collector off in every
    step, and what that means for a forked worker."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SIDE)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "workers")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "policy" not in text or True
    assert "the collector was off in 300 of 300 steps" in text, text
    assert "inherit it off" in text, text
    (doc,) = gcbench.load_dir(tmp_path / "workers")
    assert doc.gc_policy == "disable"
    assert doc.gc_state["off_steps"] == 300
    assert doc.variant == "worker1"


def test_a_loop_that_turns_the_collector_off_names_the_line(tmp_path):
    """Issue 55: a loop that calls gc.disable() inside its timed steps was labelled
    `default` and nothing said the collector was off; the line that turned it off is named,
    and the verdict says it."""
    from gcbench.analysing import summary
    from gcbench.publishing import verdict

    def loop():
        with gcbench.measure("trainer") as m:
            for i in range(200):
                with m.step():
                    if i == 0:
                        gc.disable()  # DISABLE-LINE
                    [[] for _ in range(3)]
        gc.enable()
        return m

    m = loop()
    line = next(n for n, text in enumerate(open(__file__), 1) if "# DISABLE-LINE" in text)
    state = m.result().gc_state
    assert state["off_steps"] == 199
    assert state["calls"]["disable"]["first_at"].endswith(f"test_user_loop.py:{line}")
    assert m.policy_name == "disable"
    said = " ".join(verdict.sentences(summary.summarize_all([m.result()])))
    assert f"the collector was off in 199 of 200 steps; called gc.disable() 1 time, first at test_user_loop.py:{line}" \
        in said


@pytest.mark.parametrize("explain", [False, True])
def test_the_timed_steps_take_over_after_a_warm_up_that_collected_fully(explain):
    """The warm-up hands over to the timed probe as its last step ends; a full collection
    in an earlier warm-up step (which the probe lists the oldest generation after) does not
    lose that moment: every step after the warm-up is a timed one, and a step outside the
    block or inside another is still refused."""
    with gcbench.measure("warm", warmup=3, capacity=50, explain=explain) as m:
        for i in range(10):
            with m.step():
                if i == 0:
                    gc.collect()
                [[] for _ in range(10)]
    assert m.steps == 7
    assert m.raised == 0
    with pytest.raises(gcbench.UsageError, match="a step outside"):
        with m.step():
            pass


MEMORY_AFTER_FULL = textwrap.dedent("""
    import gc, json, sys
    if sys.argv[1] == "ctypes":
        import ctypes  # as numpy and jax load it
    import gcbench

    kept = []
    with gcbench.measure("memory") as m:
        for i in range(120):
            with m.step():
                kept.append(bytes(4096))
                if i in (10, 60):
                    gc.collect()
    loaded = "_ctypes" in sys.modules  # before the result, whose numpy loads it
    doc = m.result()
    print(json.dumps({"after": doc.between_steps["old_after_full"], "malloc_start": doc.memory.get("malloc_start"),
                      "ctypes": loaded}))
""")


@pytest.mark.parametrize("loaded", ["ctypes", "pure"])
def test_memory_is_read_where_full_collections_left_nothing_dead(loaded):
    """At the end of the steps that held a listed full collection the probe reads the memory
    in use as well as the oldest generation: the C allocator's bytes where the process has
    loaded ctypes, else (a pure-Python loop, which gcbench does not make load it: 220
    objects) the resident set's. 4 KiB kept a step between the two collections, 50 steps
    apart: the allocator's reading sees them all."""
    out = subprocess.run([sys.executable, "-c", MEMORY_AFTER_FULL, loaded], capture_output=True, text=True,
                         check=True, timeout=120)
    got = json.loads(out.stdout)
    after = got["after"]
    assert after["step"] == [10, 60]
    assert got["ctypes"] == (loaded == "ctypes")
    if loaded == "ctypes":
        assert "rss_bytes" not in after
        assert got["malloc_start"] is not None
        grown = after["malloc_bytes"][1] - after["malloc_bytes"][0]
        assert 50 * 4096 <= grown < 50 * 4096 + 64 * 1024, after
    else:
        assert "malloc_bytes" not in after
        assert got["malloc_start"] is None
        assert all(b > 0 for b in after["rss_bytes"])


TIMED_ENTRY_RSS = r"""
import gc
import gcbench
from gcbench.measuring.probe import rss_bytes as resident
heap = [[i] for i in range(1_000_000)]
m = gcbench.measure("big")
gc.collect()
before = resident()
with m:
    grew = resident() - before
print(grew)
"""


@pytest.mark.skipif(not pathlib.Path("/proc/self/statm").exists(), reason="reads the resident set from /proc")
def test_entering_a_loop_over_a_large_heap_leaves_the_resident_set_as_it_was():
    """The tracked objects and the older generations' are counted from one listing of the
    heap as the timed steps begin: two listings were two lists of 8 MB over 10^6 objects, and
    the C allocator kept the second one's memory through the loop (7.9 MiB more in the
    resident set the loop's readings start from, now 0.4)."""
    import subprocess

    grew = int(subprocess.run([sys.executable, "-c", TIMED_ENTRY_RSS], capture_output=True, text=True, check=True,
                              timeout=300).stdout)
    assert grew < 4 * 2**20, grew
