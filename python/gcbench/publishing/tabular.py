"""Results as flat tables: one row per step or per cell, for CSV files and DataFrames.

`records(folder, per="step")` needs nothing but the standard library and NumPy;
`to_dataframe(folder)` needs pandas, which gcbench does not require.
"""

from __future__ import annotations

import csv
import io
import pathlib
from typing import Any

import numpy as np

from ..analysing import summary
from ..core.errors import UsageError
from ..measuring import results
from ..measuring.results import ResultDoc
from . import archive

PER = ("step", "cell")


def _load(source) -> list[ResultDoc]:
    with archive.opened(pathlib.Path(source)) as folder:
        return results.load_dir(folder)


def _step_columns(d: ResultDoc) -> dict[str, Any]:
    """A repeat's optional per-step arrays, by column name, and the collections in the gap
    before each step by generation (`gap_gc0`, ...)."""
    extra: dict[str, Any] = {k: v for k in ("gc_collected", "gc_pressure", "gc_examined", "gc_promoted",
                                            "alloc_bytes", "alloc_blocks", "host_ns", "cpu_ns", "gc_cpu_ns",
                                            "gap_ns", "gap_gc_ns")
                             if (v := getattr(d, k)) is not None}
    gaps = results.step_array(d, "gap_collections")
    if gaps is not None:
        extra.update({f"gap_gc{g}": gaps[:, g].tolist() for g in range(gaps.shape[1])})
    return extra


def step_records(docs: list[ResultDoc]) -> list[dict]:
    """One row per timed step of every ok repeat: who it was, and what the step measured.
    Python cells have collections of generations 0, 1 and 2; Julia cells incremental and
    full collections (columns `gc_incremental`, `gc_full`) and bytes allocated."""
    rows = []
    for d in docs:
        if d.status != "ok":
            continue
        base = {"cell": summary.cell_label(summary.cell_key(d)), "backend": d.backend, "workload": d.workload,
                "gc_policy": d.gc_policy, "environment": results.env_name(d) or "",
                "node_type": summary.node_type(d), "repeat": d.repeat,
                "batch_size": results.batch_size(d), "networks": d.networks}
        colls = summary.collections(d)
        julia = d.gc_full is not None
        names = ["gc_incremental", "gc_full"] if julia else [f"gc_gen{g}" for g in range(colls.shape[1])]
        extra = _step_columns(d)
        for i, (wall, gc_ns) in enumerate(zip(d.wall_ns, d.gc_ns, strict=True)):
            row = dict(base, step=i, wall_ns=wall, gc_ns=gc_ns)
            row.update({n: int(c) for n, c in zip(names, colls[i], strict=True)})
            row.update({k: v[i] for k, v in extra.items()})
            rows.append(row)
    return rows


def cell_records(docs: list[ResultDoc]) -> list[dict]:
    """One row per cell, its repeats combined (`summary.record`), not-run cells included."""
    return [summary.record(cs) for cs in summary.summarize_all(docs)]


def records(source, per: str = "step") -> list[dict]:
    """Rows of the results in `source` (a results folder, results.tar.gz or report folder)."""
    if per not in PER:
        raise UsageError(f"per must be one of {', '.join(PER)}, got {per!r}")
    docs = _load(source)
    return step_records(docs) if per == "step" else cell_records(docs)


def to_dataframe(source, per: str = "step"):
    """The results in `source` as a pandas DataFrame, one row per step (or per cell)."""
    try:
        import pandas as pd
    except ImportError:
        raise UsageError("to_dataframe needs pandas (pip install pandas); gcbench.export.records gives "
                         "the same rows as dicts") from None
    return pd.DataFrame.from_records(records(source, per))


def _csv_value(v):
    """A value in a CSV field: empty for None, lists joined by spaces (`6 6 7`)."""
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return " ".join(map(str, v)) if all(isinstance(x, (int, float)) for x in v) else "; ".join(map(str, v))
    return float(v) if isinstance(v, np.floating) else v


def to_csv(rows: list[dict]) -> str:
    """Rows as CSV text, with the union of their columns in first-seen order."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(v) for k, v in row.items()})
    return out.getvalue()
