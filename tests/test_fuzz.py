"""Malformed documents, generated: every one of them is either read (and then summarized,
compared and exported without an error) or refused with a `UsageError` (one line, exit 2
from the command line), never a traceback, and memory stays bounded."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import resource

import numpy as np
import pytest

from conftest import copy_of, run_cli
from gcbench import cli
from gcbench.analysing import comparison, summary
from gcbench.core.errors import UsageError
from gcbench.measuring import results
from gcbench.publishing import comparison_text, tabular
from simulate import docs

BAD_VALUES = [None, "", "x", -1, 0, 1.5, 1e308, True, [], {}, [[]], [None], {"a": 1}, "a b", "../x", "\n# injected",
              "9" * 5000, [1, "2"], float("nan")]
NESTED = ["metadata", "machine_state", "data", "gc_events", "loss", "environment", "warmup", "probe"]


def mutate(doc: dict, rng: np.random.Generator) -> dict:
    """One to three random damages to a valid result document."""
    doc = copy.deepcopy(doc)
    for _ in range(int(rng.integers(1, 4))):
        kind = int(rng.integers(0, 6))
        if kind == 0:  # a top-level field deleted or replaced
            key = str(rng.choice(sorted(doc)))
            if rng.random() < 0.3:
                del doc[key]
            else:
                doc[key] = copy.deepcopy(BAD_VALUES[int(rng.integers(len(BAD_VALUES)))])
        elif kind == 1:  # a field inside a nested object
            outer = str(rng.choice(NESTED))
            inner = doc.get(outer)
            if isinstance(inner, dict) and inner:
                key = str(rng.choice(sorted(inner)))
                inner[key] = copy.deepcopy(BAD_VALUES[int(rng.integers(len(BAD_VALUES)))])
            else:
                doc[outer] = copy.deepcopy(BAD_VALUES[int(rng.integers(len(BAD_VALUES)))])
        elif kind == 2:  # a per-step array damaged
            key = str(rng.choice(["wall_ns", "gc_ns", "gc_collections", "gc_collected", "gc_pressure"]))
            arr = doc.get(key)
            if isinstance(arr, list) and arr:
                i = int(rng.integers(len(arr)))
                choice = int(rng.integers(5))
                if choice == 0:
                    arr[i] = copy.deepcopy(BAD_VALUES[int(rng.integers(len(BAD_VALUES)))])
                elif choice == 1:
                    del arr[i:]
                elif choice == 2:
                    doc[key] = [[] for _ in arr] if key == "gc_collections" else [0] * len(arr)
                elif choice == 3:
                    doc[key] = [[1, 2]] * len(arr) if key == "gc_collections" else [2**70] * len(arr)
                else:
                    arr[i] = -arr[i] if not isinstance(arr[i], list) else [-1, 0, 0]
        elif kind == 3:  # a name that would reach a report
            doc[str(rng.choice(["backend", "workload", "gc_policy", "cell"]))] = str(rng.choice(
                ["lenet5\n# Injected", "a/b", "..", "x" * 500, "", "<img src=x>", "[l](http:evil)"]))
        elif kind == 4:  # the gc event log
            ev = doc.get("gc_events")
            if isinstance(ev, dict) and ev.get("step"):
                ev[str(rng.choice(["step", "generation", "pause_ns", "collected"]))] = \
                    copy.deepcopy(BAD_VALUES[int(rng.integers(len(BAD_VALUES)))])
            else:
                doc["gc_events"] = {"step": [1], "generation": [7], "pause_ns": [-5], "collected": ["x"]}
        else:  # deep nesting somewhere
            nested: list = []
            for _ in range(int(rng.integers(10, 300))):
                nested = [nested]
            doc[str(rng.choice(["metadata", "loss", "data", "extra"]))] = nested
    return doc


def _read_and_use(doc: dict) -> str:
    """'refused' or 'read' (and then everything downstream worked)."""
    try:
        read = results.validate(doc, "fuzz")
    except UsageError as e:
        assert "\n" not in str(e)  # noqa: PT017 - one of many outcomes of a fuzzed document
        return "refused"
    cells = summary.summarize_all([read])
    assert cells
    assert cells[0].ok
    comparison_text.format_comparison(comparison.compare_docs([read], [read]))
    tabular.to_csv(tabular.cell_records([read]))
    tabular.to_csv(tabular.step_records([read]))
    return "read"


@pytest.mark.parametrize("seed", range(4))
def test_generated_malformed_documents_are_refused_or_read(seed):
    rng = np.random.default_rng(seed)
    base = [d.to_doc() for d in docs(rng, 3, 10.0, steps=40, full_every=7, pause_ms=3)]  # as files hold them
    base[0]["gc_events"] = {"step": [6, 13], "generation": [2, 2], "pause_ns": [3_000_000, 3_000_000],
                            "collected": [0, 0], "dropped": 0}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcomes = {"refused": 0, "read": 0}
    for i in range(750):
        doc = mutate(base[i % 3], rng)
        try:
            json.dumps(doc, allow_nan=False)
        except (ValueError, RecursionError):
            continue  # not a JSON document at all: tested through the files below
        outcomes[_read_and_use(doc)] += 1
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert outcomes["refused"] > 300, outcomes
    assert outcomes["read"] > 20, outcomes
    assert grew_mib < 500


def _cli(*args: str) -> tuple[int, str]:
    """`gcbench ARGS` through the command line's own entry point, in this process: its exit
    code and standard error (an exception escaping it is what a user would see as a
    traceback, and fails the test with it)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, err.getvalue()


def test_malformed_documents_through_the_command_line_are_one_line(tmp_path):
    """A sample of the generated documents, as files, through export and compare; one read
    and one refused folder again as a user runs them, in a process of their own, with the
    same outcome."""
    rng = np.random.default_rng(99)
    base = [d.to_doc() for d in docs(rng, 2, 10.0, steps=30)]
    tried, outcome = 0, {}
    for i in range(40):
        doc = mutate(base[i % 2], rng) if i else base[0]  # the first as written: one that reads
        folder = tmp_path / f"f{i}"
        folder.mkdir()
        try:
            text = json.dumps(doc)
        except (ValueError, RecursionError):
            continue
        (folder / "jax__mlp__default__r0.json").write_text(text)
        for args in (["export", str(folder), "--csv"], ["compare", str(folder), str(copy_of(folder))]):
            code, err = _cli(*args)
            assert code in (0, 2), err
            if code == 2:
                assert len(err.strip().splitlines()) == 1, err
                assert err.startswith("gcbench: error: "), err
            outcome.setdefault(code, (args, err))
            tried += 1
    assert tried > 50, outcome
    assert set(outcome) == {0, 2}, outcome
    for args, _err in outcome.values():
        proc = run_cli(*args)
        assert (proc.returncode, proc.stderr) == _cli(*args)
        assert "Traceback" not in proc.stderr
