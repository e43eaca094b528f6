"""The result schema: one JSON document per cell, written atomically, validated on load.

Schema version history:
- 1: first version. Later additions, all optional (older documents lack them):
  `environment` (the environment matrix: spec, name, Python and packages of the virtual
  environment the cell ran in; absent when it ran under gcbench's own interpreter).

A loader refuses a document whose `schema_version` is newer than `SCHEMA_VERSION`.
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile

from .errors import UsageError

SCHEMA_VERSION = 1
FORMAT = "gcbench-result"
STATUSES = ("ok", "failed", "unavailable")

# Fields every document has, whatever its status, and their JSON types.
REQUIRED = {
    "format": str,
    "schema_version": int,
    "cell": str,
    "backend": str,
    "workload": str,
    "gc_policy": str,
    "repeat": int,
    "status": str,
    "reason": str,
    "networks": int,
    "params_per_network": int,
    "data": dict,
    "metadata": dict,
}
# Per-step arrays of an `ok` document; `gc_collections` is a list of per-generation lists.
STEP_ARRAYS = ("wall_ns", "gc_ns", "gc_collections")
OPTIONAL_STEP_ARRAYS = ("gc_collected", "alloc_blocks", "alloc_bytes", "gc_full")


def new(cell, status: str, reason: str = "", **fields) -> dict:
    """A result document for `cell` (a `config.Cell`) with the common fields filled in."""
    doc = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "cell": cell.id,
        "backend": cell.backend,
        "workload": cell.workload,
        "gc_policy": cell.policy,
        "repeat": cell.repeat,
        "status": status,
        "reason": reason,
        "networks": cell.networks,
        "params_per_network": cell.params_per_network,
        "data": {},
        "metadata": {},
    }
    if cell.env is not None:
        spec = cell.env_spec
        doc["environment"] = {"spec": spec.text, "name": spec.name}
    doc.update(fields)
    return doc


def label(doc: dict) -> str:
    """The cell's name for people, e.g. `jax/mlp/default`."""
    from .config import cell_label

    return cell_label(doc["backend"], doc["workload"], doc["gc_policy"], doc["repeat"], env_name(doc))


def env_name(doc: dict) -> str | None:
    """The name of the environment the cell ran in; None for gcbench's own interpreter."""
    env = doc.get("environment")
    return env.get("name") if env else None


def write(doc: dict, path: str | os.PathLike) -> pathlib.Path:
    """Write `doc` to `path` atomically: a reader sees the old file or the whole new one."""
    validate(doc, str(path))
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def validate(doc, where: str = "result") -> dict:
    """Check that `doc` is a gcbench result this version understands; return it."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f"{where}: not a gcbench result (no \"format\": \"{FORMAT}\")")
    version = doc.get("schema_version")
    if not isinstance(version, int):
        raise UsageError(f"{where}: gcbench result without an integer schema_version")
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"{where}: result schema_version {version} is newer than this gcbench reads "
            f"({SCHEMA_VERSION}); upgrade gcbench to read it"
        )
    for key, typ in REQUIRED.items():
        if not isinstance(doc.get(key), typ):
            raise UsageError(f"{where}: field {key!r} missing or not a {typ.__name__}")
    env = doc.get("environment")
    if env is not None and not (isinstance(env, dict) and isinstance(env.get("spec"), str)
                                and isinstance(env.get("name"), str)):
        raise UsageError(f"{where}: field 'environment' must be an object with 'spec' and 'name'")
    if doc["status"] not in STATUSES:
        raise UsageError(f"{where}: status {doc['status']!r} is not one of {', '.join(STATUSES)}")
    if doc["status"] == "ok":
        n = None
        for key in STEP_ARRAYS + tuple(k for k in OPTIONAL_STEP_ARRAYS if k in doc):
            arr = doc.get(key)
            if not isinstance(arr, list):
                raise UsageError(f"{where}: ok result without per-step array {key!r}")
            if n is None:
                n = len(arr)
            elif len(arr) != n:
                raise UsageError(f"{where}: per-step array {key!r} has {len(arr)} steps, expected {n}")
        if not n:
            raise UsageError(f"{where}: ok result with no timed steps")
        if not isinstance(doc.get("loss"), dict):
            raise UsageError(f"{where}: ok result without sampled 'loss'")
    return doc


def load(path: str | os.PathLike) -> dict:
    """Read and validate one result file."""
    path = pathlib.Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: not a gcbench result (invalid JSON: {e.msg} at line {e.lineno})") from None
    return validate(doc, str(path))


NOT_CELLS = ("suite.json", "memory.json", "bisect.json")  # the plan, `gcbench memory`'s and `bisect`'s documents


def load_dir(folder: str | os.PathLike, allow_empty: bool = False) -> list[dict]:
    """Every result in `folder` (not recursive), sorted by cell; non-result JSON is an error."""
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such results folder")
    docs = [load(p) for p in sorted(folder.glob("*.json")) if p.name not in NOT_CELLS]
    if not docs and not allow_empty:
        raise UsageError(f"{folder}: no gcbench results there")
    return docs
