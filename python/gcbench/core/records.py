"""Typed records (dataclasses, TypedDicts) from and to JSON, and the one check of every
stored document: `from_json` reads a document into its record with msgspec, which checks
each field's type and constraints (its `Meta` annotations) and fills the defaults of what
older files lack; a document that does not fit is one line naming the file and the field.
`to_json` writes a record back in the same shape."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .errors import UsageError

_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def from_json(doc: Any, cls: Any, where: str) -> Any:
    """`doc` (JSON read from `where`) as a `cls` record; a one-line error naming the field
    where it does not fit."""
    import msgspec

    try:
        return msgspec.convert(doc, cls)
    except msgspec.ValidationError as e:
        raise UsageError(f"{where}: {_said(str(e), doc)}") from None


def _said(error: str, doc: Any) -> str:
    """msgspec's "Expected `int` >= 0 - at `$.repeat`" as "field repeat: expected `int` >= 0,
    got -1": the field first, the value where msgspec names only its type or nothing."""
    match = _AT.match(error)
    assert match is not None  # the pattern matches every text
    message, path = match["message"], match["path"]
    message = message[:1].lower() + message[1:]
    if path is None:
        return message
    if ", got `" not in message and (value := _value_at(doc, path)) is not _MISSING:
        message += f", got {_shown(value)}"
    message = message if len(message) <= 160 else message[:157] + "..."
    return f"field {path.lstrip('.')}: {message}"


_MISSING = object()


def _shown(value: Any) -> str:
    """A value as an error shows it: its text, or where that is long its kind and size."""
    shown = repr(value)
    if len(shown) <= 60:
        return shown
    return f"a {type(value).__name__}" + (f" of {len(value)}" if isinstance(value, (str, list, dict)) else "")


def _value_at(doc: Any, path: str) -> Any:
    """The value at msgspec's `path` (".a.b[0]") of `doc`; _MISSING where it cannot be
    followed (a mapping's value, "[...]", is not named)."""
    if "[...]" in path:
        return _MISSING
    for name, index in _STEP.findall(path):
        try:
            doc = doc[name] if name else doc[int(index)]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return doc


def _record_json(record: Any) -> dict[str, Any]:
    """A dataclass's fields as JSON values, less its `NOT_WRITTEN` and its `OMIT_NONE` left None."""
    omitted, unwritten = getattr(record, "OMIT_NONE", ()), getattr(record, "NOT_WRITTEN", ())
    return {f.name: to_json(value) for f in dataclasses.fields(record) if f.name not in unwritten
            and not ((value := getattr(record, f.name)) is None and f.name in omitted)}


def to_json(record: Any) -> Any:
    """A record as JSON values, in the shape `from_json` reads. A record's fields named in
    its `OMIT_NONE` are left out where None, as its files have always had them, and those
    in its `NOT_WRITTEN` (its workings) always."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return _record_json(record)
    if isinstance(record, (list, tuple)):
        return [to_json(x) for x in record]
    if isinstance(record, dict):
        return {k: to_json(v) for k, v in record.items()}
    return record
