import json

import pytest

from gcbench.core.errors import UsageError
from gcbench.measuring import results
from gcbench.measuring.cell import Cell

CELL = Cell("jax", "mlp", "default", 0, 2, 4992, 3, 1, 0, 1)
# A result as gcbench 0.1 wrote it (schema 1): no batch size, no cell_spec, alloc_blocks always there.
V1 = {"format": "gcbench-result", "schema_version": 1, "cell": "jax__mlp__default__r0", "backend": "jax",
      "workload": "mlp", "gc_policy": "default", "repeat": 0, "status": "ok", "reason": "", "networks": 2,
      "params_per_network": 4992, "data": {"kind": "synthetic"}, "metadata": {"python": "3.11.7"},
      "warmup": {"wall_ns": [9]}, "wall_ns": [3, 4, 5], "gc_ns": [0, 1, 0],
      "gc_collections": [[0, 0, 0], [1, 0, 0], [0, 0, 0]], "gc_collected": [0, 0, 0], "alloc_blocks": [1, -2, 0],
      "loss": {"step": [0], "value": [2.3]}}


def ok_doc(**over):
    """An ok result, `over` what it holds (fields it does not know go to its `unknown`)."""
    doc = results.new(CELL, "ok", wall_ns=[3, 4, 5], gc_ns=[0, 1, 0], gc_collections=[[0, 0, 0]] * 3,
                      loss={"step": [0], "value": [2.3]}, data={"kind": "synthetic"})
    return results.ResultDoc.from_doc({**doc.to_doc(), **over})


def test_roundtrip_atomic_write_and_mode(tmp_path):
    path = results.write(ok_doc(), tmp_path / "a.json")
    assert results.load(path).wall_ns == [3, 4, 5]
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left behind
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_new_result_says_everything_about_its_cell():
    doc = ok_doc()
    assert doc.schema_version == 2
    assert doc.batch_size == 128
    assert doc.bookkeeping == "none"
    assert doc.cell_spec == CELL.to_json()


def test_version_1_documents_still_load(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(V1))
    doc = results.load(path)
    assert results.batch_size(doc) == 128
    assert doc.alloc_blocks == [1, -2, 0]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = results.write(ok_doc(), tmp_path / "a.json")
    with pytest.raises(TypeError):
        results.write(ok_doc(extra=object()), path)
    assert results.load(path).status == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_newer_schema_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "new.json"
    path.write_text(json.dumps(ok_doc(schema_version=results.SCHEMA_VERSION + 1).to_doc()))
    with pytest.raises(UsageError, match=r"newer than this gcbench reads.*upgrade"):
        results.load(path)


@pytest.mark.parametrize(("content", "match"), [
    (b"{not json", "invalid JSON"),
    (b'{"hello": 1}', "not a gcbench result"),
    (b"[1, 2]", "not a gcbench result"),
    (b'{"a": "\xff\xfe"}', "not a UTF-8"),
])
def test_non_results_are_refused(tmp_path, content, match):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=match):
        results.load(path)


@pytest.mark.parametrize(("over", "match"), [
    ({"gc_ns": [0, 1]}, "gc_ns.*2 steps, expected 3"),
    ({"status": "great"}, "status"),
    ({"wall_ns": ["a", "b", "c"]}, "wall_ns.*integers"),
    ({"wall_ns": [1.5, 2, 3]}, "wall_ns.*integers"),
    ({"wall_ns": [3, -4, 5]}, "negative"),
    ({"gc_collections": [[0, 0], [0], [0, 0]]}, "ragged|rows of integers"),
    ({"gc_collections": [0, 0, 0]}, "rows of integers"),
    ({"repeat": True}, "repeat"),
    ({"batch_size": 0}, "batch_size"),
    ({"gc_pressure": [1, 2]}, "gc_pressure.*2 steps"),
])
def test_corrupt_content_is_refused(over, match):
    with pytest.raises(UsageError, match=match):
        results.validate(ok_doc(**over))


def test_net_changes_may_be_negative():
    results.validate(ok_doc(gc_pressure=[-3, 0, 5], alloc_blocks=[-1, 0, 1]))


def test_unavailable_needs_no_arrays(tmp_path):
    doc = results.new(CELL, "unavailable", "julia not installed")
    assert results.load(results.write(doc, tmp_path / "u.json")).reason == "julia not installed"


def test_a_copied_result_is_refused_not_counted_twice(tmp_path):
    results.write(ok_doc(), tmp_path / "a.json")
    results.write(ok_doc(), tmp_path / "copy of a.json")
    with pytest.raises(UsageError, match="hold the same result"):
        results.load_dir(tmp_path)


def test_partial_and_hidden_files_are_not_results(tmp_path):
    results.write(ok_doc(), tmp_path / "a.json")
    (tmp_path / ".a.partial.json").write_text("{half")
    assert len(results.load_dir(tmp_path)) == 1


def test_per_step_arrays_are_read_in_one_place_as_lists_or_numpy():
    """`step_array`: a per-step array as numpy, rows as (steps, generations), None where the
    result has none; the same from a document's lists and a measurement's numpy arrays."""
    import numpy as np

    arrays = {"wall_ns": [5, 6, 7], "gc_ns": [0, 2, 0], "gc_collections": [[1, 0, 0], [2, 1, 1], [0, 0, 0]]}
    listed = ok_doc(**arrays)
    held = ok_doc(**{k: np.asarray(v) for k, v in arrays.items()})
    for doc in (listed, held):
        assert results.step_count(doc) == 3
        assert results.step_array(doc, "gc_collections").shape == (3, 3)
        assert results.step_array(doc, "gc_collections")[:, -1].tolist() == [0, 1, 0]
        assert results.step_total(doc, "gc_ns") == 2.0
        assert results.step_array(doc, "gap_collections") is None
        assert results.step_total(doc, "host_ns") == 0.0
    assert results.step_array(ok_doc(wall_ns=[], gc_ns=[]), "gc_ns") is None
    assert results.step_count(results.new(CELL, "failed")) == 0
