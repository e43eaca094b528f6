import json

import pytest

from gcbench import results
from gcbench.config import Cell
from gcbench.errors import UsageError

CELL = Cell("jax", "mlp", "default", 0, 2, 4992, 3, 1, 0, 1)


def ok_doc(**over):
    doc = results.new(CELL, "ok", wall_ns=[3, 4, 5], gc_ns=[0, 1, 0], gc_collections=[[0, 0, 0]] * 3,
                      loss={"step": [0], "value": [2.3]}, data={"kind": "synthetic"})
    doc.update(over)
    return doc


def test_roundtrip_and_atomic_write(tmp_path):
    path = results.write(ok_doc(), tmp_path / "a.json")
    assert results.load(path)["wall_ns"] == [3, 4, 5]
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left behind


def test_failed_write_keeps_the_old_file(tmp_path):
    path = results.write(ok_doc(), tmp_path / "a.json")
    with pytest.raises(TypeError):
        results.write(ok_doc(extra=object()), path)
    assert results.load(path)["status"] == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_newer_schema_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "new.json"
    path.write_text(json.dumps(ok_doc(schema_version=results.SCHEMA_VERSION + 1)))
    with pytest.raises(UsageError, match="newer than this gcbench reads.*upgrade"):
        results.load(path)


@pytest.mark.parametrize("text,match", [
    ("{not json", "invalid JSON"),
    ('{"hello": 1}', "not a gcbench result"),
    ("[1, 2]", "not a gcbench result"),
])
def test_non_results_are_refused(tmp_path, text, match):
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=match):
        results.load(path)


def test_inconsistent_arrays_are_refused():
    with pytest.raises(UsageError, match="gc_ns.*2 steps, expected 3"):
        results.validate(ok_doc(gc_ns=[0, 1]))
    with pytest.raises(UsageError, match="status"):
        results.validate(ok_doc(status="great"))


def test_unavailable_needs_no_arrays(tmp_path):
    doc = results.new(CELL, "unavailable", "julia not installed")
    assert results.load(results.write(doc, tmp_path / "u.json"))["reason"] == "julia not installed"
