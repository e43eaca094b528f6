"""The result document is described once, by its types (`results.ResultDoc` and its parts):
every load checks a document against them (msgspec), result.schema.json is generated from
them for other tools, and the documents of every published report (schema versions 1 and 2) fit it."""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
import tarfile

import jsonschema
import pytest

import committed
from gcbench.core.errors import UsageError
from gcbench.measuring import result_schema, results


def _published_docs() -> list[dict]:
    docs = []
    for folder in committed.reports("results.tar.gz"):
        with tarfile.open(folder / "results.tar.gz") as tar:
            for member in tar.getmembers():
                name = member.name.rsplit("/", 1)[-1]
                if member.isfile() and name.endswith(".json") and name not in results.NOT_CELLS:
                    f = tar.extractfile(member)
                    assert f is not None
                    docs.append(json.loads(f.read()))
    return docs


@pytest.mark.skipif(sys.version_info < (3, 11), reason="generated with Python 3.11 or later: 3.10's typing leaves "
                    "the string aliases of the types unevaluated (the committed schema is checked on 3.10 too)")
def test_the_committed_schema_is_generated_from_the_types():
    pytest.importorskip("msgspec")
    assert result_schema.PATH.read_text() == result_schema.text(), \
        "result.schema.json is stale: python -m gcbench.measuring.result_schema"


def test_the_schema_describes_every_field_of_the_types_and_nothing_else():
    public = json.loads(result_schema.PATH.read_text())
    fields = set(public["$defs"]["ResultDoc"]["properties"])
    typed = {f.name for f in dataclasses.fields(results.ResultDoc)} - set(results.ResultDoc.NOT_WRITTEN)
    assert fields == typed
    assert set(public["$defs"]["ResultDoc"]["required"]) == set(results.REQUIRED)


def test_every_published_result_fits_the_public_schema_and_loads():
    """Every document the published reports hold (schema version 2; version 1's are read in
    tests/test_results.py) fits the schema gcbench publishes, step arrays included."""
    docs = _published_docs()
    assert len(docs) > 100
    assert {d["schema_version"] for d in docs} == {2}
    validator = jsonschema.Draft202012Validator(json.loads(result_schema.PATH.read_text()))
    for d in docs:
        errors = list(validator.iter_errors(d))
        assert not errors, (d["cell"], errors[0].message)
        results.validate(d, d["cell"])


@pytest.mark.parametrize(("path", "value", "said"), [
    (("machine_state", "steal"), 2.0, "field machine_state.steal: expected `float` <= 1.0, got 2.0"),
    (("environment",), {"name": "x"}, "field environment: object missing required field `spec`"),
    (("loss", "value"), ["a"], "field loss.value[0]: expected `float | null`, got `str`"),
    (("status",), "done", "field status: invalid enum value 'done'"),
    (("networks",), 0, "field networks: expected `int` >= 1, got 0"),
    (("metadata", "gcbench", "commit"), 5, "field metadata.gcbench.commit: expected `str | null`, got `int`"),
    (("cell",), "a/b", "field cell: expected `str` matching regex"),
    (("repeat",), True, "field repeat: expected `int`, got `bool`"),
])
def test_a_malformed_part_is_one_line_naming_the_field(path, value, said):
    """msgspec checks a document against its types and says which field does not fit (and
    with what, where it shows only the type); the published schema, which users' tools
    check with, rejects the same document."""
    doc = copy.deepcopy(next(d for d in _published_docs() if d["status"] == "ok" and "machine_state" in d
                             and "metadata" in d and "gcbench" in d["metadata"]))
    doc.setdefault("environment", {"spec": "python=3.11", "name": "py3.11"})
    where = doc
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    with pytest.raises(UsageError) as e:
        results.validate(doc, "r.json")
    assert str(e.value).startswith(f"r.json: {said}"), str(e.value)
    assert "\n" not in str(e.value)
    assert list(jsonschema.Draft202012Validator(json.loads(result_schema.PATH.read_text())).iter_errors(doc))


def test_the_loaders_step_arrays_are_those_the_types_name():
    """The per-step arrays the loader checks with numpy (which its types leave as `Any`) are
    exactly the fields the types annotate as per-step arrays, rows where rows."""
    # the module defers its annotations: each is kept as its text
    named = {f.name: f.type for f in dataclasses.fields(results.ResultDoc)}
    assert {k for k, t in named.items() if t in ("Steps", "StepRows")} == \
        set(results.STEP_ARRAYS + results.OPTIONAL_STEP_ARRAYS)
    assert {k for k, t in named.items() if t == "StepRows"} == set(results.ROWS)
