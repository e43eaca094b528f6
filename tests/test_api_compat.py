"""The public API changes politely (issue 68, item 3): a script written against the
previous release's documented API (0.2: results were dictionaries) still runs, warned;
every name 0.2 exported and every field its result documents had is still there."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

import gcbench
from gcbench.measuring import results

# What 0.2 exported (`gcbench.__all__`) and the fields of its result documents (its
# `results.ResultDoc`, a TypedDict then; `_failed_this_run` was in memory only, now
# `superseded`): the API scripts were written against
EXPORTS_0_2 = ("SCHEMA_VERSION", "WORKLOADS", "Cell", "GCBudgetWarning", "Measurement", "StepProbe", "Suite",
               "UsageError", "__version__", "get_workload", "init_params", "load", "load_dir", "load_suite", "measure",
               "records", "summarize", "summarize_all", "to_dataframe")
FIELDS_0_2 = ("format", "schema_version", "cell", "backend", "workload", "gc_policy", "repeat", "status", "reason",
              "networks", "params_per_network", "data", "metadata", "batch_size", "bookkeeping", "cell_spec", "variant",
              "environment", "machine_state", "params_counted", "gc_state", "probe", "traces", "loss", "warmup",
              "between_steps", "memory", "gc_events", "wall_ns", "gc_ns", "gc_collections", "gc_collected",
              "alloc_blocks", "alloc_bytes", "gc_full", "gc_pressure", "host_ns", "cpu_ns", "gc_cpu_ns", "gap_ns",
              "gap_gc_ns", "gap_cpu_ns", "gap_gc_cpu_ns", "gap_collections", "gc_explicit", "gc_enabled")

# 0.2's documented loop (README, docs/usage.md) and its reading of results as dictionaries
SCRIPT_0_2 = '''
import gcbench

with gcbench.measure("my-loop", warmup=3) as m:
    for batch in range(40):
        with m.step():
            kept = [[batch] * 4 for _ in range(50)]
r = m.result()
print("steps", len(r["wall_ns"]), "collections", sum(sum(row) for row in r["gc_collections"]), r["status"])
s = m.summary()
print(s["mean_ms"] > 0, s["full_per_1000"] >= 0)
m.save("results/my-loop")
for doc in gcbench.load_dir("results/my-loop"):
    print(doc["cell"], doc.get("variant"), "memory" in doc, doc["metadata"]["python"] is not None)
'''


def test_every_name_and_field_of_0_2_is_still_there():
    missing = [name for name in EXPORTS_0_2 if not hasattr(gcbench, name)]
    assert not missing, missing
    fields = {f for f in results.ResultDoc.__dataclass_fields__ if f not in results.ResultDoc.NOT_WRITTEN}
    assert set(FIELDS_0_2) <= fields, set(FIELDS_0_2) - fields


def test_a_script_written_against_0_2_runs_and_is_told_the_new_form(tmp_path):
    """It subscripted the result: a TypeError since results became records, a
    DeprecationWarning naming the attribute now (with -W error::DeprecationWarning, as a
    strict test suite runs, it fails on the warning, not on a TypeError)."""
    (tmp_path / "old.py").write_text(SCRIPT_0_2)
    proc = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "old.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "steps 37 collections " + lines[0].split()[3] + " ok"
    assert lines[1] == "True True"
    assert lines[2] == "user__my-loop__default__r0 None True True"
    assert "DeprecationWarning: result['wall_ns']" in proc.stderr
    assert "read result.wall_ns" in proc.stderr
    assert "result.get('variant')" in proc.stderr
    assert "'memory' in result" in proc.stderr
    assert "old.py:" in proc.stderr  # the warning points at the user's line, not gcbench's
    strict = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "old.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert strict.returncode == 1
    assert "DeprecationWarning" in strict.stderr
    assert "TypeError" not in strict.stderr


def test_dictionary_access_gives_what_the_attributes_hold():
    m = gcbench.measure("compat")
    with m:
        for _ in range(5):
            with m.step():
                pass
    r = m.result()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert r["wall_ns"] is r.wall_ns
        assert r["status"] == "ok"
        assert r.get("traces", "absent") == "absent"  # a field the document leaves out: as a dict missing the key
        with pytest.raises(KeyError):
            r["traces"]
        assert "wall_ns" in r
        assert "traces" not in r
        assert set(r.keys()) == set(r.to_doc())
    with pytest.warns(DeprecationWarning, match=r"read result\.gc_ns"):
        r["gc_ns"]
