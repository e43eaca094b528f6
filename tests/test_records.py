"""Typed records from and to JSON (`core.records`): what a stored document reads into."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Annotated, ClassVar

import msgspec
import pytest

from gcbench.analysing import explanation_records as er
from gcbench.core import records
from gcbench.core.errors import UsageError
from gcbench.measuring import diagnose


def test_a_diagnosis_reads_into_its_record_and_writes_back_the_same():
    raw = json.loads(json.dumps(diagnose.diagnose(lambda i: [[] for _ in range(50)], 20)))
    py = records.from_json(raw, er.PythonDiagnosis, "raw")
    assert py.steps == 20
    assert all(isinstance(c, er.Collection) for c in py.collections)
    assert py.promoted.total == raw["promoted"]["total"]
    back = records.to_json(py)
    assert records.from_json(back, er.PythonDiagnosis, "again") == py
    def within(part, whole):  # every field the diagnosis wrote is kept, with its value
        if isinstance(part, dict):
            return all(k in whole and within(v, whole[k]) for k, v in part.items() if v is not None)
        return part == whole
    assert within(raw, back)
    assert back["promoted"]["by_user_site"] == {}  # what it did not write: the record's default


CELL = {"backend": "jax", "workload": "mlp", "policy": "default"}


def test_what_an_older_file_lacks_is_filled_and_a_wrong_type_is_one_line():
    expl = records.from_json({"label": "jax/mlp/default", "cell": CELL}, er.Explanation, "old.json")
    assert (expl.recommendations, expl.python, expl.bookkeeping) == ([], None, "none")
    assert "python" not in records.to_json(expl)  # named in OMIT_NONE: left out where None, as files had it
    assert records.to_json(expl)["environment"] is None
    with pytest.raises(UsageError, match=r"^old\.json: field collected: expected `int`, got `str`$"):
        records.from_json({"label": "x", "cell": CELL, "collected": "many"}, er.Explanation, "old.json")
    with pytest.raises(UsageError, match=r"^old\.json: .*`label`"):
        records.from_json({"cell": CELL}, er.Explanation, "old.json")


@pytest.mark.parametrize(("damage", "said"), [
    ({"cell": {**CELL, "backend": "<script>"}}, r"cell\.backend: '<script>' is not a plain name"),
    ({"cell": {**CELL, "policy": None}}, r"cell\.policy: None is not a plain name"),
    ({"python": {"oldest": [[1, 2, 3]]}}, r"python\.oldest: each sample is a pair"),
    ({}, r"explanation 0 \(x\) holds neither a Python diagnosis .* nor Julia's allocations"),
])
def test_an_explanation_that_could_inject_or_says_nothing_is_one_line(tmp_path, damage, said):
    """explain.json is described by its records alone: a cell name that would become markup in
    a report, a malformed sample and an explanation with nothing in it are one line naming
    the file (as the JSON Schema it replaced refused them)."""
    from gcbench.analysing import gc_causes

    raw = json.loads(json.dumps(diagnose.diagnose(lambda i: [[] for _ in range(5)], 5)))
    entry = {"label": "x", "cell": CELL, **damage}
    if "python" in damage:
        entry.update(python={**raw, **damage["python"]}, full_interval=None)
    (tmp_path / gc_causes.FILE).write_text(json.dumps({"format": gc_causes.FORMAT, "schema_version": 1,
                                                       "explanations": [entry]}))
    with pytest.raises(UsageError, match=rf"^{re.escape(str(tmp_path / gc_causes.FILE))}: .*{said}"):
        gc_causes.load(tmp_path)


def test_to_json_leaves_out_only_the_nones_a_record_names():
    @dataclasses.dataclass
    class Row:
        OMIT_NONE: ClassVar[tuple[str, ...]] = ("note",)
        value: float | None
        note: str | None = None

    assert records.to_json([Row(None), Row(1.5, "x")]) == [{"value": None}, {"value": 1.5, "note": "x"}]


def test_every_stored_document_of_the_committed_reports_reads_into_its_record():
    """Each report kind's file, as an older gcbench wrote it into a published report, reads
    into its record, and the explanations derive anew against their folder's results (what
    a rebuild does): the committed reports are the older files there are."""
    from committed import reports
    from gcbench.analysing import gc_causes, gitbisect, seed_cases, version_bisect
    from gcbench.measuring import program_memory, results
    from gcbench.publishing import archive

    read = set()
    for folder in reports():
        with archive.opened(folder / "results.tar.gz") as unpacked:
            if (explained := gc_causes.load(unpacked)) is not None:
                docs = results.load_dir(unpacked, allow_empty=True)
                derived = [gc_causes.derive(e, docs, tests=False) for e in explained]
                assert all(e.recommendations for e in derived if e.python is not None)
                read.add("explain.json")
            if (repro := seed_cases.load(unpacked)) is not None:
                assert all(case.rows for case in repro.cases)
                read.add("reproduce.json")
            if (unpacked / "bisect.json").is_file():
                assert version_bisect.load_table(unpacked / "bisect.json").rows
                read.add("bisect.json")
            if gitbisect.load(unpacked / gitbisect.FILE) is not None:
                read.add(gitbisect.FILE)
            if program_memory.load(unpacked) is not None:
                read.add("memory.json")
    assert {"explain.json", "reproduce.json", "bisect.json", gitbisect.FILE} <= read


@pytest.mark.parametrize("kind", ["result", "memory", "explain", "reproduce", "gitbisect"])
def test_every_document_gcbench_reads_checks_its_header_alike(tmp_path, kind):
    """One header check (`files.check_header`): another document's format, and a schema
    this gcbench is too old for, are one line naming the file, whichever kind it is."""
    from gcbench.analysing import gc_causes, gitbisect, seed_cases
    from gcbench.measuring import program_memory, results

    kinds = {"result": ("r.json", results.FORMAT, lambda p: results.load(p)),
             "memory": ("memory.json", program_memory.FORMAT, lambda p: program_memory.load(p.parent)),
             "explain": (gc_causes.FILE, gc_causes.FORMAT, lambda p: gc_causes.load(p.parent)),
             "reproduce": (seed_cases.FILE, seed_cases.FORMAT, lambda p: seed_cases.load(p.parent)),
             "gitbisect": (gitbisect.FILE, gitbisect.FORMAT, lambda p: gitbisect.load(p))}
    name, fmt, load = kinds[kind]
    path = tmp_path / name
    path.write_text(json.dumps({"format": "gcbench-something-else", "schema_version": 1}))
    where = re.escape(str(path))
    with pytest.raises(UsageError, match=rf"^{where}: not a gcbench [a-z ]+ \(no \"format\": \"{fmt}\"\)$"):
        load(path)
    path.write_text(json.dumps({"format": fmt, "schema_version": 99}))
    with pytest.raises(UsageError, match=rf"^{where}: [a-z ]+ schema_version 99 is newer than this "
                                         r"gcbench reads \(\d+\); upgrade gcbench to read it$"):
        load(path)


def test_a_submission_record_reads_older_shapes_and_refuses_a_wrong_one_in_one_line(tmp_path):
    """A folder's submission.json (cluster.Submission): a record written before rounds
    were kept still reads, one it wrote reads back equal, and a job id that is not a
    string or an executor gcbench has not are one line naming the file and the field."""
    from gcbench.running import cluster

    jobs = tmp_path / cluster.JOBS_DIR
    jobs.mkdir()
    path = jobs / cluster.JOBS_FILE
    old = {"executor": "slurm", "run_id": "r", "folder": "D1/.gcbench-jobs", "submitted": "2026-11-25T10:00:00+00:00",
           "arrays": [{"jobs": ["12_0", "12_1"], "cells": [["a"], ["b", "c"]]}]}
    path.write_text(json.dumps(old))
    sub = cluster.read_submission(tmp_path)
    assert (sub.job_ids(), sub.arrays[0].round, sub.cells) == (["12_0", "12_1"], None, [])
    path.write_text(json.dumps(records.to_json(sub)))
    assert cluster.read_submission(tmp_path) == sub
    where = re.escape(str(path))
    for damage, field in (({"arrays": [{"jobs": [12], "cells": [[]]}]}, r"arrays\[0\]\.jobs\[0\]: expected `str`"),
                          ({"executor": "pbs"}, r"executor: invalid enum value 'pbs'")):
        path.write_text(json.dumps({**old, **damage}))
        with pytest.raises(UsageError, match=rf"^{where}: field {field}"):
            cluster.read_submission(tmp_path)


@dataclasses.dataclass
class Counted:
    collected: Annotated[int, msgspec.Meta(ge=0)]
    sites: dict[str, int] = dataclasses.field(default_factory=dict)


@pytest.mark.parametrize(("doc", "said"), [
    ({}, "d.json: object missing required field `collected`"),  # the document itself: no field to name
    ({"collected": "x" * 100}, "d.json: field collected: expected `int`, got `str`"),
    ({"collected": -3}, "d.json: field collected: expected `int` >= 0, got -3"),
    ({"collected": 1, "sites": {"a.py:3": "many"}}, "d.json: field sites[...]: expected `int`, got `str`"),
])
def test_a_document_that_does_not_fit_its_record_is_one_line_naming_the_field(doc, said):
    """One message shape for every stored document: the field as msgspec's path gives it
    (less its `$.`), what was expected, and the value where msgspec names only its type."""
    with pytest.raises(UsageError) as e:
        records.from_json(doc, Counted, "d.json")
    assert str(e.value) == said
