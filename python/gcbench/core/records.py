"""Typed records (dataclasses) from and to JSON: `from_json` reads a stored document into
its record with msgspec, which checks each field's type and fills the defaults of what
older files lack; `to_json` writes a record back in the same shape."""

from __future__ import annotations

import dataclasses
from typing import Any

from .errors import UsageError


def from_json(doc: Any, cls: type, where: str) -> Any:
    """`doc` (JSON read from `where`) as a `cls` record; a one-line error where a field has
    the wrong type."""
    import msgspec

    try:
        return msgspec.convert(doc, cls)
    except msgspec.ValidationError as e:
        raise UsageError(f"{where}: {e}") from None


def to_json(record: Any) -> Any:
    """A record as JSON values, in the shape `from_json` reads. A record's fields named in
    its `OMIT_NONE` are left out where None, as its files have always had them, and those
    in its `NOT_WRITTEN` (its workings) always."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        omitted, unwritten = getattr(record, "OMIT_NONE", ()), getattr(record, "NOT_WRITTEN", ())
        return {f.name: to_json(value) for f in dataclasses.fields(record) if f.name not in unwritten
                and not ((value := getattr(record, f.name)) is None and f.name in omitted)}
    if isinstance(record, (list, tuple)):
        return [to_json(x) for x in record]
    if isinstance(record, dict):
        return {k: to_json(v) for k, v in record.items()}
    return record
