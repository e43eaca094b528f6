"""What each document gcbench reads looks like, described once (JSON Schema, checked with
`jsonschema`), so that a malformed document is one line naming the file and the field,
never a traceback deep inside a report.

The per-step arrays of a result (hundreds of thousands of integers) are checked with
numpy in `results.validate`; everything else is described here. Names that reach
reports (backends, workloads, policies, cells) must be plain names: they become
headings, file names and links.
"""

from __future__ import annotations

import jsonschema

from .errors import UsageError

# How a run may be executed: this process, SLURM job arrays, or submitit's local executor.
EXECUTORS = ("local", "slurm", "submitit-local")
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

METADATA = {"type": "object", "properties": {
    "python": _str, "python_implementation": _str, "python_executable": _str, "packages": _versions,
    "platform": _str, "machine": _str, "cpu": _str, "cpu_count": _opt({"type": "integer", "minimum": 1}),
    "hostname": _str, "gc_thresholds": _ints, "env": {"type": "object"}, "date": _str, "seed": _opt(_int),
    "command": _strings, "jax_backend": _opt(_str), "devices": _strings, "device_kinds": _strings,
    "gcbench": {"type": "object", "properties": {"version": _str, "commit": _opt(_str)}}}}

RESULT = {"type": "object", "required": ["cell", "backend", "workload", "gc_policy", "repeat", "status", "reason",
                                         "networks", "params_per_network", "data", "metadata"],
          "properties": {
              "cell": {"type": "string", "pattern": CELL_ID},
              "backend": {"type": "string", "pattern": NAME},
              "workload": {"type": "string", "pattern": NAME},
              "gc_policy": {"type": "string", "pattern": POLICY},
              "repeat": _count, "reason": _str,
              "status": {"enum": ["ok", "failed", "unavailable"]},
              "networks": _opt({"type": "integer", "minimum": 1}), "params_per_network": _count,
              "variant": {"type": "string", "pattern": NAME},
              # collections outside every step, and the loop's span (probe.between_steps)
              "between_steps": {"type": "object", "required": ["gc_ns", "collections"], "properties": {
                  "gc_ns": _count, "gc_cpu_ns": _count, "collections": {"type": "array", "items": _count},
                  "collected": _count,
                  "span_ns": _count, "explicit": {"type": "array", "items": _count},
                  "explicit_sites": {"type": "object", "additionalProperties": _count}}},
              # sampled resident set size and tracked objects at the start and end (probe.memory)
              "memory": {"type": "object", "properties": {
                  "every": _count, "rss_step": _ints, "rss_bytes": {"type": "array", "items": _count},
                  "tracked_start": _opt(_count), "tracked_end": _opt(_count)}},
              "batch_size": {"type": "integer", "minimum": 1},
              "bookkeeping": {"type": "string", "pattern": NAME},
              "data": {"type": "object", "properties": {"kind": {"type": "string", "pattern": NAME},
                                                                            "source": _str, "samples": _count}},
              "metadata": METADATA,
              "machine_state": {"type": "object", "properties": {
                  "load_before": _opt(_share), "load_after": _opt(_share),
                  "cpu_count": _opt({"type": "integer", "minimum": 1}),
                  "cpu_mhz_before": _opt(_num), "cpu_mhz_after": _opt(_num), "run_id": _str,
                  # the machine over the timed steps (core.machineload.between)
                  "others_cores": _share, "steal": _fraction, "cpu_pressure": _fraction, "process_cpu_s": _share,
                  "gcbench_cpu_s": _share, "load_seconds": _share, "load_doubt": _str,
                  # "after": a loop shorter than MIN_SECONDS, read over the half second after it
                  "load_window": {"enum": ["after"]},
                  # the job that ran it, when a scheduler did (`--executor slurm`): cluster.job_facts
                  "scheduler": {"type": "object", "required": ["executor"], "properties": {
                      "executor": {"enum": list(EXECUTORS)}, "job_id": _opt(_str), "array_job_id": _opt(_str),
                      "array_task_id": _opt(_str), "node": _opt(_str), "partition": _opt(_str)}}}},
              "environment": {"type": "object", "required": ["spec", "name"],
                              "properties": {"spec": _str, "name": _str, "python": _opt(_str),
                                             "packages": _versions, "pins": _strings}},
              "loss": {"type": "object", "required": ["step", "value"],
                       "properties": {"step": _ints, "value": {"type": "array", "items": _opt(_num)}}},
              "gc_events": {"type": "object", "required": ["step", "generation", "pause_ns", "collected"],
                            "properties": {"step": _ints, "generation": {"type": "array", "items": _count},
                                           "pause_ns": {"type": "array", "items": _count},
                                           "collected": {"type": "array", "items": _count}, "dropped": _count}},
              "warmup": {"type": "object"}, "cell_spec": {"type": "object"}, "params_counted": _count,
          }}

SUITE = {"type": "object", "properties": {
    "cells": {"type": "array", "items": {"type": "string", "pattern": CELL_ID}},
    "labels": _strings, "command": _strings, "repeats": _count, "started": _str, "state": _str,
    "runs": {"type": "array", "items": {"type": "object", "properties": {
        "command": _strings, "started": _str, "finished": _opt(_str), "mode": _str, "cells": _count, "state": _str}}}}}

# a results folder's .gcbench-jobs/submission.json (cluster.submit)
SUBMISSION = {"type": "object", "required": ["executor", "run_id", "folder", "submitted", "arrays"],
              "properties": {"executor": {"enum": list(EXECUTORS)}, "run_id": _str, "folder": _str, "submitted": _str,
                             "arrays": {"type": "array", "items": {
                                 "type": "object", "required": ["jobs", "cells"],
                                 "properties": {"jobs": _strings,
                                                "cells": {"type": "array", "items": _strings}}}}}}

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
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    raise UsageError(f"{where}: field {field}: {message}")
