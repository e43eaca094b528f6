"""The constraints every stored document shares, and the check of a JSON Schema: the
patterns of names that reach reports (backends, workloads, policies, cells must be plain
names: they become headings, file names and links), the executors, and `check`, which makes
a document that does not fit its schema one line naming the file and the field. Each
document is described once, by its records (result.schema.json is generated from them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

from .errors import UsageError

if TYPE_CHECKING:
    import jsonschema

# How a run may be executed: this process, SLURM job arrays, or submitit's local executor.
Executor = Literal["local", "slurm", "submitit-local"]
EXECUTORS: tuple[str, ...] = get_args(Executor)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
POLICY = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
CELL_ID = r"^[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}$"  # a file name with room for its temporaries (255 bytes)

_VALIDATORS: dict[int, jsonschema.protocols.Validator] = {}


def _validator(schema: dict) -> Any:
    import jsonschema  # when a document is first checked: a result in memory is not (35 ms of imports)

    v = _VALIDATORS.get(id(schema))
    if v is None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        v = _VALIDATORS[id(schema)] = cls(schema)
    return v


def check(doc, schema: dict, where: str) -> None:
    """A `UsageError` naming `where` and the first malformed field when `doc` does not
    fit `schema`."""
    validator = _validator(schema)
    import jsonschema.exceptions

    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
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
