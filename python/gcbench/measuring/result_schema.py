"""Generate result.schema.json, the JSON Schema of a result document, from its types
(`results.ResultDoc` and its parts) with msgspec: `python -m gcbench.measuring.result_schema`
rewrites it; tests/test_result_schema.py fails while it is stale.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import sys

from . import results

PATH = pathlib.Path(__file__).with_name("result.schema.json")
SCHEMA_ID = "https://github.com/gcbench/gcbench/blob/HEAD/python/gcbench/measuring/result.schema.json"


def generate() -> dict:
    """The schema of `results.ResultDoc`, less the fields kept in memory only (its
    `NOT_WRITTEN`). A field the record may leave None is one a document leaves out
    (`ResultDoc.to_doc`): it is optional, never null."""
    import msgspec

    results.in_scope()
    schema = msgspec.json.schema(results.ResultDoc)
    record = schema["$defs"]["ResultDoc"]
    for key in results.ResultDoc.NOT_WRITTEN:
        del record["properties"][key]
    for key, field in record["properties"].items():
        if key not in record["required"]:
            field.pop("default", None)
            either = field.get("anyOf", [])
            if {"type": "null"} in either:
                field.clear()
                field.update(next(x for x in either if x != {"type": "null"}))
    for part in schema["$defs"].values():
        description = part.get("description")
        if description is not None:  # as Python 3.13 compiles docstrings, whatever Python generates it
            part.update(description=inspect.cleandoc(description))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "gcbench result document", **schema}


def text() -> str:
    return json.dumps(generate(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    PATH.write_text(text())
    sys.stdout.write(f"wrote {PATH}\n")
