"""`gcbench explain` on loops whose answer is known: a loop that keeps records, a loop that
makes reference cycles, and a clean loop."""

import collections
import dataclasses
import gc
import json
import pathlib
import re
import sys

import numpy as np
import pytest

import simulate
from conftest import run_cli
from gcbench.analysing import explanation_records, gc_causes
from gcbench.measuring import diagnose, site_names
from gcbench.publishing import explanation_text


def _explain(step, steps=100, oldest=10):
    """The diagnosis of a control loop, with the young generations collected 3.5 and 10 times
    as often as by default, so that a short loop shows several promotions (`oldest`: the
    oldest generation's threshold)."""
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(200, 3, oldest)
    try:
        raw = {"label": "control", "cell": {"backend": "user", "workload": "control", "policy": "default",
                                            "bookkeeping": "none"},
               "metadata": {"python": "3"}, "python": diagnose.diagnose(step, steps)}
    finally:
        gc.set_threshold(*thresholds)
    return gc_causes.summarize(raw)


def test_a_loop_that_keeps_records_is_named_with_its_line():
    history = []

    def step(i):
        for k in range(20):
            history.append({"step": i, "metrics": {"loss": 0.1 * k}})  # RECORD-LINE: tracked, kept, promoted

    # no automatic full collection: whether one runs in 100 steps depends on the heap this test
    # process holds (the oldest generation's 25 % rule), and the survivors a full collection
    # moves into the oldest are not counted as promoted (explain counts the new tail a
    # collection of generation 1 appends; a full one also frees old objects, which shifts it):
    # in CI's worker one ran, and the line read 844 of 2,000
    expl = _explain(step, oldest=1_000_000)
    promoted = expl.python.promoted
    line = next(n for n, text in enumerate(open(__file__), 1) if "# RECORD-LINE" in text)
    site, from_line = next(iter(promoted.by_site.items()))
    # a path the reader can open; "user" where a user's loop of this folder has run in this process
    assert site.split(" ", 1)[0] in ("other", "user")
    assert site.endswith(f"{site_names.site_path(__file__)}:{line}")
    assert site_names.site_path(__file__).endswith("tests/test_explain.py")
    assert next(iter(promoted.by_type)) == "dict"
    # 20 records a step come from that line, 2,000 in all: every one of them is promoted but
    # those still in the young generations when the loop ends, which hold at most
    # (threshold0 + 1) x (threshold1 + 1) = 804 tracked objects at the thresholds _explain
    # sets (a young collection runs once a count exceeds its threshold; how many are left
    # depends on where the loop ends between two collections of generation 1); whatever
    # else the test process does adds to the total, and rarely a little to the line (CI's
    # worker read 2,002 once): an object CPython takes from a free list keeps the allocation
    # trace of the memory block it reuses, not the line that took it; at most the dict free
    # list's 80 blocks
    assert 2000 - (200 + 1) * (3 + 1) <= from_line <= 2000 + 80
    assert expl.full_interval.promoted_per_step >= from_line / 100


@pytest.mark.e2e
def test_a_loop_that_makes_cycles_shows_cyclic_garbage_and_its_types():
    class Node:
        def __init__(self):
            self.me = self

    def step(i):
        for _ in range(50):
            Node()

    expl = _explain(step)
    garbage = expl.python.garbage
    assert garbage.total >= 50 * 80
    assert expl.collected >= 50 * 80
    assert any(k.endswith("Node") for k in garbage.by_type)
    assert any(r.kind == "cycles" for r in expl.recommendations)
    assert "cyclic garbage by type" in explanation_text.format_text(expl)
    kept = explanation_records.from_json(json.loads(json.dumps(explanation_records.to_json(expl))),
                                         explanation_records.Explanation, "explain.json")  # as explain.json keeps it
    assert explanation_text.format_text(kept) == explanation_text.format_text(expl)


def test_a_clean_loop_promotes_nothing_to_speak_of():
    gc.collect()  # what an earlier test of this worker left (a metaclass test's cyclic classes) goes first

    def step(i):
        tmp = [[] for _ in range(100)]
        del tmp

    expl = _explain(step)
    assert expl.full_interval.promoted_per_step < 0.5
    assert expl.python.garbage.total == 0
    assert [r.kind for r in expl.recommendations] == ["none"]


def test_a_loop_that_promotes_and_later_frees_is_counted_whole():
    """The window pattern (a step's objects held for a while: promoted, then freed): each
    step promotes what it holds. The objects held as the diagnosis started die in its first
    steps, and the allocator gives their addresses to the new ones: counted as made before
    the steps by id, the promotions read 6 a step of the 10 they were here (7 of 86 in the
    gate catalogue's periodic loop)."""
    gc.collect()
    window = collections.deque([] for _ in range(20 * 15))  # held as the diagnosis starts: freed in its steps

    def step(i):
        for _ in range(50):  # cyclic garbage: what drives the collections
            x: list = []
            x.append(x)
        for _ in range(20):
            window.append([])
        while len(window) > 20 * 15:
            window.popleft()

    survived = []  # what each collection of generation 1 left alive, which moves to the oldest

    def hook(phase, info):
        if info["generation"] == 1 and phase == "start":
            survived.append(len(gc.get_objects(0)) + len(gc.get_objects(1)))
        elif info["generation"] == 1:
            survived[-1] -= info["collected"]

    gc.callbacks.append(hook)
    try:
        expl = _explain(step, steps=200)
    finally:
        gc.callbacks.remove(hook)
    promoted = sum(expl.python.promoted_per_step)
    # every survivor of the later collections was made in the steps (the first's may not be)
    assert len(survived) >= 4
    assert sum(survived[1:]) <= promoted <= sum(survived), (promoted, survived)


def test_a_class_made_each_step_is_not_kept_alive_by_its_diagnosis():
    """A loop that makes a class a step and drops it (a factory, a namedtuple or dataclass
    made inside a function): the diagnosis numbers each type it sees, and held it, so every
    class lived as long as the diagnosis with everything it referenced (a class a step
    explained: 20 young collections and 2 of generation 1 where the loop made 15 and 1).
    Held weakly, they die with the loop, and are still named by what they were."""
    import weakref

    made = []
    alive = []  # at the last step, while the diagnosis runs: the earlier steps' classes still alive

    def step(i):
        class Made:  # a type of its own each step, in a cycle with its own dict and mro
            pass
        obj = Made()
        obj.me = obj
        made.append(weakref.ref(Made))
        if i == 299:
            del Made, obj
            gc.collect()
            alive.append(sum(r() is not None for r in made))

    gc.collect()
    raw = diagnose.diagnose(step, 300)
    assert len(made) == 300
    assert alive == [0]
    garbage = raw["garbage"]["by_type"]
    assert any(name.endswith("Made") for name in garbage), garbage


def test_the_diagnosis_leaves_the_collector_as_it_found_it():
    import gc
    import tracemalloc

    before = (list(gc.callbacks), gc.get_debug(), tracemalloc.is_tracing(), len(gc.garbage))
    diagnose.diagnose(lambda i: None, 5)
    assert (list(gc.callbacks), gc.get_debug(), tracemalloc.is_tracing(), len(gc.garbage)) == before


EXPLAINED_RSS = r"""
import gcbench
from gcbench.measuring.probe import rss_bytes as resident
gcbench.measure("first", explain=True)  # the diagnosis imported: what follows is a measurement's own
before = resident()
m = gcbench.measure("second", explain=True, capacity=2_000_000)
print(resident() - before)
"""


@pytest.mark.skipif(not pathlib.Path("/proc/self/statm").exists(), reason="reads the resident set from /proc")
def test_an_explained_measurement_touches_no_memory_for_steps_it_has_not_taken():
    """The diagnosis's promotions per step sit in untouched pages until a step writes them,
    as the probe's columns do: a list of 2,000,000 zeros was 16 MB in the resident set
    before the loop (peak memory the loop it explains never had)."""
    import subprocess

    grew = int(subprocess.run([sys.executable, "-c", EXPLAINED_RSS], capture_output=True, text=True, check=True,
                              timeout=120).stdout)
    assert grew < 4 * 2**20, grew


@pytest.mark.parametrize(("numpy_loaded", "run"), [(True, None), (False, None), (False, 64)])
def test_the_objects_a_diagnosis_started_with_are_told_from_those_made_after(monkeypatch, numpy_loaded, run):
    """The baseline (`diagnose._Baseline`) answers alike as numpy's sorted array (numpy
    loaded) and bisected in a memory map (a pure-Python program, where importing numpy
    would add 10,000 objects to the heap explained)."""
    if not numpy_loaded:
        monkeypatch.setitem(sys.modules, "numpy", None)  # what `sys.modules.get` finds where numpy never loaded
    if run is not None:  # ids sorted in runs of 64 and merged
        monkeypatch.setattr(diagnose, "ID_RUN", run)
    old = [[i] for i in range(500)]
    base = diagnose._Baseline()
    base.fill(old)
    assert (base._sorted is not None) == numpy_loaded
    assert len(base._view) == (0 if numpy_loaded else len(old))
    assert numpy_loaded or list(base._view) == sorted(map(id, old))
    new = [[i] for i in range(300)]
    mixed = old[::7] + new[::3]
    assert base.found(mixed) == [True] * len(old[::7]) + [False] * len(new[::3])
    assert base.count_found(mixed) == len(old[::7])
    assert base.count_found(new) == 0
    assert base.found([]) == []
    base.fill([])
    assert base.count_found(old) == 0


@pytest.mark.parametrize("made_before", [0.0, 0.3, 0.9, 1.0])
def test_what_a_full_collection_scanned_from_before_is_its_share_from_an_even_sample(made_before):
    """A full collection's scan, by origin (`Diagnosis._earlier`): ORIGIN_SAMPLE objects
    evenly spaced looked up (each lookup traced where sites are), scaled to the whole; the
    share within a point of the exact count's, in whole percent as the report gives it, and
    exact where nothing or everything came from before; all of a short list looked up."""
    n = 40_000
    old, new = [[i] for i in range(round(n * made_before))], [[i] for i in range(n - round(n * made_before))]
    d = diagnose.Diagnosis(1, sites=False)
    d._baseline.fill(old)
    scanned = old + new  # the oldest generation's list runs from the oldest promoted to the newest
    got, exact = d._earlier(scanned), d._baseline.count_found(scanned)
    assert exact == len(old)
    assert abs(got - exact) <= 0.01 * n, (got, exact)
    assert round(100 * got / n) in (round(100 * exact / n) - 1, round(100 * exact / n), round(100 * exact / n) + 1)
    if made_before in (0.0, 1.0):
        assert got == exact
    short = scanned[:diagnose.ORIGIN_SAMPLE]
    assert d._earlier(short) == d._baseline.count_found(short)
    assert d._earlier([]) == 0


def test_a_tally_of_a_long_list_is_counters_own_count():
    """`_tally` counts a chunk at a time (whole, its counts past 256 were a new int at
    every item, each traced where sites are): the same counts as Counter's, across chunk
    edges, past 256 a key, from a list or an iterator, and empty."""
    items = [int, str, int, list] * 25_000 + [dict] * 3 + [int] * (diagnose.TALLY_CHUNK + 1)
    assert diagnose._tally(items) == collections.Counter(items)
    assert diagnose._tally(map(type, [0, "", 1] * 1000)) == collections.Counter({int: 2000, str: 1000})
    assert diagnose._tally(items[:diagnose.TALLY_CHUNK]) == collections.Counter(items[:diagnose.TALLY_CHUNK])
    assert diagnose._tally([]) == collections.Counter()


OWN_OBJECTS = r"""
import json, sys
from gcbench.measuring import diagnose
sys.modules["numpy"] = None  # what `sys.modules.get` finds where numpy never loaded
d = diagnose.Diagnosis(1, sites=False)
d.start()
kept = [[] for _ in range(3)]
survivors = d.survivors()
d.stop(1)
print(json.dumps({"by_type": survivors["by_type"], "own": d.own_tracked(), "kept": len(kept)}))
"""


def test_the_diagnosis_counts_none_of_its_own_objects_among_those_a_loop_kept():
    """Where numpy is not loaded, the ids it started with are in a memory map made as it
    starts (its view, buffer and map: tracked objects, made after the heap was listed):
    neither a loop's survivors nor its tracked growth. In a process of its own: an xdist
    worker's other thread makes memoryviews of its messages while the test runs (they
    were counted as kept in one order of this file's tests, every time)."""
    import subprocess

    got = json.loads(subprocess.run([sys.executable, "-c", OWN_OBJECTS], capture_output=True, text=True,
                                    check=True, timeout=120).stdout)
    assert got["by_type"] == {"list": 4}, got  # `kept` and its three
    assert got["own"] >= 3
    assert got["kept"] == 3


BIG_HEAP_RSS = r"""
import gc, sys
if sys.argv[1] == "1":
    import numpy
import gcbench
from gcbench.measuring.probe import rss_bytes as resident
heap = [[i] for i in range(200_000)]
gcbench.measure("first", explain=True)  # the diagnosis imported: what follows is a measurement's own
gc.collect()
m = gcbench.measure("second", explain=True)
before = resident()
with m:
    grew = resident() - before
print(grew)
"""


@pytest.mark.skipif(not pathlib.Path("/proc/self/statm").exists(), reason="reads the resident set from /proc")
@pytest.mark.parametrize("numpy_loaded", ["1", "0"])
def test_explaining_a_large_heap_keeps_its_ids_in_eight_bytes_an_object(numpy_loaded):
    """Entering an explained loop over 200,000 objects, numpy loaded (a JAX program's heap)
    or not: the ids of the objects there are sorted, 8 bytes each (numpy's array, or a memory
    map), not a set of ints (16.4 MiB more in the resident set; 71 MiB over 10^6 objects, all
    of it peak memory the loop never had)."""
    import subprocess

    grew = int(subprocess.run([sys.executable, "-c", BIG_HEAP_RSS, numpy_loaded], capture_output=True, text=True,
                              check=True, timeout=300).stdout)
    assert grew < 8 * 2**20, grew


def test_the_collector_model_is_detected():
    model = site_names.collector_model()
    assert model["model"] == "generational"
    assert model["generations"] == 3


@pytest.mark.e2e
@pytest.mark.slow
def test_explain_cli_names_the_bookkeeping_of_a_jax_loop(tmp_path):
    proc = run_cli("explain", "jax/mlp/default", "--bookkeeping", "metrics", "--networks", "50", "--steps", "100",
                   "--site-steps", "100",
                   "--warmup", "2", "--out", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    expl = json.loads(proc.stdout)
    sites = expl["python"]["promoted"]["by_site"]
    if expl["python"]["promoted"]["total"]:  # Python 3.13's young threshold is 2,000 (700 before):
        # 100 steps make no collection of generation 1 there, so nothing is promoted to name
        assert any(k.startswith("loop gcbench/measuring/worker.py:") for k in sites)
    else:
        assert sys.version_info >= (3, 13)
        assert gc.get_threshold()[0] >= 2000
    assert "timings are disturbed" in proc.stderr
    saved = json.loads((tmp_path / "explain.json").read_text())
    assert [e["label"] for e in saved["explanations"]] == ["jax/mlp/default"]
    record = explanation_records.from_json(expl, explanation_records.Explanation, "stdout")
    assert explanation_text.format_text(record).startswith("jax/mlp/default with bookkeeping metrics: ")
    # the same cell explained without the loop's records is kept beside it, not in its place
    gc_causes.save(tmp_path, dataclasses.replace(record, cell=dict(record.cell, bookkeeping="none"), note="plain"))
    kept = gc_causes.load(tmp_path)
    assert [e.bookkeeping for e in kept] == ["metrics", "none"]
    assert explanation_text.qualifiers(kept[1]) == ""


def test_explain_json_keeps_one_explanation_per_cell_and_environment(tmp_path):
    """Saving again replaces; a file written by an older gcbench (the environment in the label too)
    is read with one explanation per cell and environment, the last one saved."""
    env = "py3.11 equinox==0.13.2"
    cell = {"cell": {"backend": "equinox-filter", "workload": "vit", "policy": "default"}, "julia": {}}
    old = {"label": f"equinox-filter/vit/default [{env}]", "environment": env, "note": "old", **cell}
    new = {"label": "equinox-filter/vit/default", "environment": env, "note": "new", **cell}
    other = {"label": "equinox-filter/vit/default", "environment": None, "note": "no env", **cell}
    for expl in (old, other, new):
        gc_causes.save(tmp_path, explanation_records.from_json(expl, explanation_records.Explanation, "test"))
    kept = gc_causes.load(tmp_path)
    assert [(e.note, e.environment) for e in kept] == [("no env", None), ("new", env)]
    raw = json.loads((tmp_path / gc_causes.FILE).read_text())
    raw["explanations"].append(dict(old, note="appended by hand"))
    (tmp_path / gc_causes.FILE).write_text(json.dumps(raw))
    assert [e.note for e in gc_causes.load(tmp_path)] == ["no env", "appended by hand"]


def test_a_recommendations_effect_is_measured_in_its_own_environment_with_intervals():
    # 20 ms steps with a full collection every 20: a 54.5 ms pause is 12 % of the time, 16.7 ms is 4 %
    rng = np.random.default_rng(0)
    quiet = {"sd": 0.01, "shift_sd": 0.01, "base_ms": 20.0, "full_every": 20, "backend": "equinox-filter",
             "workload": "vit"}
    spec, env = "python=3.12", "py3.12"  # the environment's spec, and its name as results carry it
    docs = (simulate.docs(rng, env=spec, pause_ms=54.5, **quiet)
            + simulate.docs(rng, env=spec, policy="freeze", pause_ms=16.7, **quiet)
            + simulate.docs(rng, pause_ms=54.5, **quiet) + simulate.docs(rng, policy="freeze", pause_ms=54.5, **quiet))
    mine = gc_causes._effect(docs, ("equinox-filter", "vit", "default"), ("equinox-filter", "vit", "freeze"), env)
    assert re.search(r"GC share 1[12]\.\d\d % → [34]\.\d\d %, difference -[78]\.\d\d points \(9\d\.?\d* % -\d", mine)
    assert "(less GC, p = " in mine
    assert ("full collections (repeats of 300 steps): 15 in every repeat, same steps → 15 in every repeat, same steps "
            "(same, exact: fixed schedules)") in mine
    assert re.search(r"the typical step \(median\) 1\.0\d x \(9\d\.?\d* % \d\.\d\d-\d\.\d\d\), same, p = ", mine)
    assert "the time a run takes (mean step)" in mine
    other = gc_causes._effect(docs, ("equinox-filter", "vit", "default"), ("equinox-filter", "vit", "freeze"))
    assert re.search(r"GC share 1[12]\.\d\d % → 1[12]\.\d\d %", other)  # the main interpreter's cells
    assert gc_causes._effect(docs, ("equinox-filter", "vit", "default"), ("nnx-split", "vit", "default"), env) is None


def test_an_explanation_without_traced_sites_says_why():
    py = json.loads(json.dumps(diagnose.diagnose(lambda i: None, 10)))
    def diagnosis(**parts):
        return explanation_records.from_json({**py, **parts}, explanation_records.PythonDiagnosis, "test")
    untraced = diagnosis(promoted={"by_site": {site_names.UNTRACED: 40}}, sites_from_step=150)
    assert "from step 150" in gc_causes.why_no_sites(untraced)
    assert "--site-steps" in gc_causes.why_no_sites(untraced)
    assert gc_causes.why_no_sites(dataclasses.replace(untraced, sites_from_step=None)) == "not traced (--no-sites)"
    assert gc_causes.why_no_sites(diagnosis(promoted={"by_site": {"other x.py:3": 2}}, sites_from_step=0)) is None


SELF_REFERENCING = '''
import collections, gc, sys
import gcbench

# gcbench's first measure() imports what it needs, and those imports leave the collector's
# counts in one of two states from run to run, explained or not (7 of 10 runs one way, then
# 3 of 10, in each mode: the phase of the schedule, not explain's doing); settled here so
# that the two processes differ only in explaining
gcbench.measure("imports")
gc.collect()
gc.set_threshold(100, 3, 3)


class Blob:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it
        self.payload = bytearray(64 * 1024)


class Node:
    __slots__ = ("step",)

    def __init__(self, step):
        self.step = step


kept = collections.deque(maxlen=100)  # 20 nodes a step, each kept 100 steps: promoted, then freed
with gcbench.measure("selfref", explain=sys.argv[1] == "1") as m:
    for i in range(2000):
        with m.step():
            Blob()
            kept.append(tuple(Node(i) for _ in range(20)))
import json
from gcbench.analysing import summary
doc = m.result(lists=False)
print(json.dumps({"generations": summary.collections_by_generation(doc),
                  "full": int(summary.full_collections(doc).sum())}))
'''


def test_explaining_leaves_the_collections_of_every_generation_where_they_were(tmp_path):
    """Issue 52: a loop of one self-referencing 64 KiB object a step (thresholds 100/3/3,
    2,000 steps), which also keeps objects long enough to be promoted (so that it collects
    fully whatever heap gcbench's own imports give it), makes the same full collections
    explained and not, and of the younger generations at most one more or fewer: the
    diagnosis's hooks leave the young count as they found it (`diagnose.Diagnosis._settle`),
    and only its module and objects, made before the loop when explaining (issue 66: a loop
    that is only timed carries none of them), move where the schedule starts."""
    import subprocess
    import sys

    script = tmp_path / "selfref.py"
    script.write_text(SELF_REFERENCING)
    got = []
    for explaining in ("0", "1"):
        proc = subprocess.run([sys.executable, str(script), explaining], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        got.append(json.loads(proc.stdout.splitlines()[-1]))
    assert got[0]["full"] == got[1]["full"] >= 1
    assert got[0]["generations"][2] == got[1]["generations"][2]
    assert all(abs(a - b) <= 1 for a, b in zip(got[0]["generations"], got[1]["generations"], strict=True)), got
    assert got[0]["generations"][0] > 10


def test_garbage_never_exceeds_what_the_collector_freed():
    """Issue 54: objects freed during a collection by a finalizer (a payload list cleared in
    __del__), by weakref.finalize callbacks, are not the collector's garbage: the garbage
    explain reports is at most the collector's own count, collection by collection."""
    import weakref

    class Payload:
        def __init__(self):
            self.me = self  # cyclic: only the collector frees it
            self.items = [[] for _ in range(50)]  # freed by reference count when it goes

        def __del__(self):
            self.items.clear()

    class Plain:
        pass

    def step(i):
        Payload()
        for _ in range(10):
            obj = Plain()
            obj.me = obj
            weakref.finalize(obj, list, [[], []])

    raw = diagnose.diagnose(step, 200)
    collected = sum(c["collected"] for c in raw["collections"])
    assert 0 < raw["garbage"]["total"] <= collected, (raw["garbage"]["total"], collected)


@pytest.mark.parametrize("sites", [False, True, "sampled"])
def test_the_garbage_by_type_is_the_loops_own_and_no_object_of_the_hooks(sites):
    """Three cyclic objects a step, freed by a gc.collect() in the step, and a loop whose
    young collections free them on their own: the garbage by type is the loop's objects,
    exactly, whatever sites are traced. (The hook's frame once made two cells at every
    collection before its snapshot, each gone at its stop and counted as garbage: 40 cells,
    and 40 of the loop's 120 objects scaled away, in 40 steps of this loop.)"""
    class Node:
        def __init__(self):
            self.me = self

    def asked(i):
        for _ in range(3):
            Node()
        gc.collect()

    gc.collect()  # the session's own garbage first: what the first collection frees is the loop's
    raw = diagnose.diagnose(asked, 10, sites=sites)  # each a full collection of the session's heap
    assert raw["garbage"]["by_type"] == {site_names.type_name(Node): 30}

    def young(i):
        for _ in range(300):
            Node()

    gc.collect()
    raw = diagnose.diagnose(young, 60, sites=sites)
    assert list(raw["garbage"]["by_type"]) == [site_names.type_name(Node)]
    assert raw["garbage"]["total"] == sum(c["collected"] for c in raw["collections"])


def test_a_metaclass_that_makes_classes_unhashable_is_explained(classic_thresholds):
    """Issue 54: classes whose metaclass defines __eq__ without __hash__ cannot be hashed:
    explain numbers types by identity, counts them, and leaves nothing installed."""
    import gc

    class Meta(type):
        def __eq__(cls, other):
            return cls is other

    before = list(gc.callbacks)

    def step(i):
        c = Meta(f"C{i}", (), {})
        c.me = c  # a cycle through its own class
        for _ in range(20):
            c()

    raw = diagnose.diagnose(step, 300)
    assert gc.callbacks == before
    assert raw["garbage"]["total"] > 0
    assert any(k.endswith(".Meta") for k in raw["garbage"]["by_type"])


def test_explain_bounds_its_own_time_and_says_where_it_stopped(monkeypatch):
    """Issue 54: past its own time budget (diagnose.OWN_TIME_S), collections are logged, not
    analysed, and the explanation says from which step."""
    import gc

    monkeypatch.setattr(diagnose, "OWN_TIME_S", 0.01)
    heap = [[i] for i in range(20_000)]  # a heap whose every full collection takes a while to list

    def step(i):
        gc.collect()

    raw = diagnose.diagnose(step, 40)
    assert raw["analysed_until_step"] is not None
    assert raw["analysed_until_step"] < 39
    assert len([c for c in raw["collections"] if c["step"] >= 0]) >= 40  # every collection still counted
    expl = gc_causes.summarize({"label": "big", "cell": {"backend": "user", "workload": "big", "policy": "default",
                                                       "bookkeeping": "none"}, "metadata": {"python": "3"},
                              "python": raw})
    said = f"explain's own time ran past 0.01 s of CPU at step {raw['analysed_until_step']}"
    assert said in explanation_text.format_text(expl)
    del heap


@pytest.mark.parametrize(("traced", "total", "named"), [(2, 44, False), (99, 120, False), (500, 10_000, False),
                                                   (32_311, 70_187, True), (120, 120, True)])
def test_lines_are_named_from_a_sample_that_can_name_them(traced, total, named):
    """A line is named from at least gc_causes.SITES_MIN_TRACED traced objects and that share
    of the promoted ones (the Equinox seed's step traces 32,311 of 70,187: free lists'
    objects carry no site, though the same lines make them), and the named line says of how
    many; 2 of 44, or a sample under a tenth, names none."""
    py = json.loads(json.dumps(diagnose.diagnose(lambda i: None, 10)))
    py["promoted"] = {"total": total, "traced": traced, "by_type": {"dict": total}, "by_package": {"builtins": total},
                      "by_site": {"untraced": total - traced, "user ~/loop.py:12": traced}, "by_site_type": {},
                      "by_user_site": {"~/loop.py:12": traced}, "made_before_the_steps": 0}
    py["promoted_per_step"] = [total / 10] * 10
    expl = gc_causes.summarize({"label": "user/loop/default", "cell": {"backend": "user", "workload": "loop",
                                                                     "policy": "default", "bookkeeping": "none"},
                              "metadata": {"python": "3"}, "python": py})
    kinds = {r.kind: r.text for r in expl.recommendations}
    assert ("own-code" in kinds) is named, kinds
    assert ("few-sites" in kinds) is not named, kinds
    if named:
        assert "~/loop.py:12" in kinds["own-code"]
        assert (f"(of the {traced:,} of {total:,} promoted objects that carry a site)" in kinds["own-code"]) \
            is (traced < total)


def test_sites_are_named_only_where_traced_and_never_gcbench_s_own(tmp_path):
    """Issue 55: with 2 of 44 promoted objects traced, explain said "by site: loop
    gcbench/user_loop.py:169 100 %" and "those are the lines of your loop to change". The
    traced share is printed beside the sites, the untraced are a row of their own, gcbench's
    own frames are never a site, and too few traced objects name no line."""

    py = json.loads(json.dumps(diagnose.diagnose(lambda i: None, 10)))
    py["promoted"] = {"total": 44, "traced": 2, "by_type": {"dict": 44}, "by_package": {"builtins": 44},
                      "by_site": {"untraced": 42, "user ~/loop.py:12": 2}, "by_site_type": {}, "by_user_site":
                      {"~/loop.py:12": 2}, "made_before_the_steps": 0}
    py["promoted_per_step"] = [4.4] * 10
    expl = gc_causes.summarize({"label": "user/loop/default", "cell": {"backend": "user", "workload": "loop",
                                                                     "policy": "default", "bookkeeping": "none"},
                              "metadata": {"python": "3"}, "python": py})
    text = explanation_text.format_text(expl)
    assert "by allocation site (2 of 44 promoted objects traced" in text
    assert re.search(r"not traced \(a free list's object, or made before tracing began\) 95 %", text)
    assert "lines of your loop to change" not in text
    assert "Only 2 of the 44 objects promoted" in text
    # gcbench's own frames are never a site; a user's own module beside the loop is their code
    own = site_names._GCBENCH_DIR + "/user_loop.py"
    stdlib = str(pathlib.Path(site_names._STDLIB, "contextlib.py"))
    assert site_names.sites_of(((own, 169), (stdlib, 10)))[0] == ("gcbench", site_names.OWN)
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    module = str((project / "models" / "net.py").resolve())
    user = (frozenset(), frozenset({str(project.resolve())}))
    site_names._real.cache_clear()
    assert site_names.file_package(module, user) == "user"
    assert site_names.file_package(module) is None  # nobody's folder
    assert site_names.file_package(str(project / ".venv" / "lib" / "site-packages" / "torch" / "x.py"), user) is None
    assert project.is_dir()
