"""What each document gcbench reads looks like, described once (JSON Schema, checked with
`jsonschema`), so that a malformed document is one line naming the file and the field,
never a traceback deep inside a report.

The per-step arrays of a result (hundreds of thousands of integers) are checked with
numpy in `results.validate`; everything else is described here. Names that reach
reports (backends, workloads, policies, cells) must be plain names: they become
headings, file names and links.
"""

from __future__ import annotations

from typing import Literal, get_args

import jsonschema

from .errors import UsageError

# How a run may be executed: this process, SLURM job arrays, or submitit's local executor.
Executor = Literal["local", "slurm", "submitit-local"]
EXECUTORS: tuple[str, ...] = get_args(Executor)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
POLICY = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
CELL_ID = r"^[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}$"  # a file name with room for its temporaries (255 bytes)

_str, _int, _num, _bool = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_count = {"type": "integer", "minimum": 0}
_share = {"type": "number", "minimum": 0}  # (NaN and infinity never get this far: files.read_json refuses them)
_fraction = {"type": "number", "minimum": 0, "maximum": 1}
_opt = lambda schema: {"anyOf": [schema, {"type": "null"}]}  # noqa: E731
_strings = {"type": "array", "items": _str}
_ints = {"type": "array", "items": _int}
_versions = {"type": "object", "additionalProperties": _opt(_str)}

SUITE = {"type": "object", "properties": {
    "cells": {"type": "array", "items": {"type": "string", "pattern": CELL_ID}},
    "labels": _strings, "command": _strings, "repeats": _count, "started": _str, "state": _str,
    "runs": {"type": "array", "items": {"type": "object", "properties": {
        "command": _strings, "started": _str, "finished": _opt(_str), "mode": _str, "cells": _count, "state": _str}}}}}

_counter = {"type": "object", "additionalProperties": _num}
_census = {"type": "object", "required": ["total", "by_type", "by_package", "by_site"],
           "properties": {"total": _count, "by_type": _counter, "by_package": _counter, "by_site": _counter}}
EXPLANATION = {
    "type": "object",
    "required": ["label", "cell"],
    "properties": {
        "label": _str,
        "cell": {
            "type": "object",
            "required": ["backend", "workload", "policy"],
            "properties": {
                "backend": {"type": "string", "pattern": NAME},
                "workload": {"type": "string", "pattern": NAME},
                "policy": {"type": "string", "pattern": POLICY},
                "bookkeeping": _opt(_str),
            },
        },
        "environment": _opt(_str),
        "packages": _versions,
        "python": {
            "type": "object",
            "required": [
                "steps",
                "promoted",
                "promoted_per_step",
                "scanned",
                "garbage",
                "oldest",
                "full_steps",
                "gen1_collections",
                "thresholds",
            ],
            "properties": {
                "steps": _count,
                "promoted": _census,
                "promoted_per_step": {"type": "array", "items": _num},
                "scanned": {
                    "allOf": [
                        _census,
                        {
                            "required": ["origin", "collections"],
                            "properties": {"origin": _counter, "collections": _count},
                        },
                    ]
                },
                "garbage": _census,
                "oldest": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2}},
                "full_steps": _ints,
                "gen1_collections": _count,
                "thresholds": _ints,
            },
        },
        "julia": {"type": "object"},
        "full_interval": {"type": "object"},
        "recommendations": {
            "type": "array",
            "items": {"type": "object", "required": ["kind", "text"], "properties": {"kind": _str, "text": _str}},
        },
    },
    "anyOf": [{"required": ["python", "full_interval"]}, {"required": ["julia"]}],
}
EXPLAIN = {"type": "object", "required": ["explanations"],
           "properties": {"explanations": {"type": "array", "items": EXPLANATION}}}

_VALIDATORS: dict[int, jsonschema.protocols.Validator] = {}


def _validator(schema: dict):
    v = _VALIDATORS.get(id(schema))
    if v is None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        v = _VALIDATORS[id(schema)] = cls(schema)
    return v


def check(doc, schema: dict, where: str) -> None:
    """A `UsageError` naming `where` and the first malformed field when `doc` does not
    fit `schema`."""
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(doc))
    if error is None:
        return
    field = ".".join(str(p) for p in error.absolute_path) or "(the document)"
    message = error.message
    shown = repr(error.instance)
    if len(shown) > 60 and message.startswith(shown):  # a long value: its kind, not its text
        message = f"a {type(error.instance).__name__} of {len(error.instance)}" \
            if isinstance(error.instance, (list, dict, str)) else f"a {type(error.instance).__name__}"
        message += error.message[len(shown):]
    message = message if len(message) <= 160 else message[:157] + "..."
    raise UsageError(f"{where}: field {field}: {message}")
