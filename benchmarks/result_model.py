"""Load and validate a 10^6-step result document with each candidate for its typed model.

    python benchmarks/result_model.py [--steps 1000000] [--repeats 3]

Issue 58 asks which typed model the result document gets: dataclasses, msgspec or
pydantic. A real document is measured first (`gcbench.measure` around an empty step,
`--steps` steps: every per-step array a user's loop records), then, best of `--repeats`:

- `gcbench` today: `results.load` (json, then JSON Schema over everything but the
  per-step arrays, which numpy checks, then the `ResultDoc` dataclass built from the dict);
- the same checks alone (`results.validate` of the document as read, less the record);
- `msgspec`: `msgspec.json.decode` into a Struct whose arrays are `list[int]` (every
  value typed), and into one whose arrays are left raw (`msgspec.Raw`), then read by
  json and numpy, or by numpy from the text;
- `pydantic`: `TypeAdapter.validate_json` into a TypedDict whose arrays are `list[int]`,
  and with the arrays skipped (`SkipValidation`) for numpy.

msgspec and pydantic are not gcbench dependencies; a candidate that is not installed is
said so. Prints seconds and the peak of traced memory for each.
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import sys
import tempfile
import time
import tracemalloc
from typing import Any

import numpy as np

import gcbench
from gcbench.measuring import results


def measured_document(folder: pathlib.Path, steps: int) -> pathlib.Path:
    with gcbench.measure("big", capacity=steps, rss_every=0) as m:
        for _ in range(steps):
            with m.step():
                pass
    return m.save_result(folder)


def best(fn, repeats: int) -> tuple[float, float]:
    """(seconds, peak MiB traced) of `fn()`: the time the best of `repeats` untraced runs
    (tracemalloc slows allocation-heavy code several times), the memory one traced run."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return min(times), peak


def candidates(path: pathlib.Path) -> dict[str, Any]:
    raw = path.read_bytes()
    keys = json.loads(raw)
    arrays = [k for k in keys if k in results.STEP_ARRAYS + results.OPTIONAL_STEP_ARRAYS]
    rows = [k for k in arrays if k in results.ROWS]
    scalars = [k for k in keys if k not in arrays]
    out: dict[str, Any] = {"gcbench today: json + JSON Schema + numpy, into the ResultDoc dataclass":
                           lambda: results.load(path)}

    def checks_alone():
        doc = json.loads(path.read_bytes())
        results._check(doc, str(path))
        return doc

    out["the same checks alone, no record"] = checks_alone

    try:
        import msgspec
    except ImportError:
        out["msgspec"] = None
    else:
        def struct(array_type, name):
            return msgspec.defstruct(name, [(k, Any) for k in scalars]
                                     + [(k, list[list[int]] if k in rows else array_type) for k in arrays])
        typed, lazy = struct(list[int], "Typed"), msgspec.defstruct(
            "Lazy", [(k, Any) for k in scalars] + [(k, msgspec.Raw) for k in arrays])
        out["msgspec: Struct, arrays list[int]"] = lambda: msgspec.json.decode(raw, type=typed)

        def lazy_then_numpy():
            doc = msgspec.json.decode(raw, type=lazy)
            for k in arrays:
                np.asarray(json.loads(bytes(getattr(doc, k))), dtype=np.int64)
            return doc
        out["msgspec: Struct, arrays raw, then json + numpy"] = lazy_then_numpy

        def lazy_then_numpy_text():
            doc = msgspec.json.decode(raw, type=lazy)
            for k in arrays:
                text = bytes(getattr(doc, k))
                flat = np.array(text.replace(b"[", b"").replace(b"]", b"").split(b","), dtype=np.int64)
                if k in rows:  # [[a,b,c],[d,e,f],...]: one ']' a row, and the outer one
                    flat = flat.reshape(text.count(b"]") - 1, -1)
            return doc
        out["msgspec: Struct, arrays raw, numpy parses the text"] = lazy_then_numpy_text

    try:
        import pydantic
        from typing_extensions import TypedDict
    except ImportError:
        out["pydantic"] = None
    else:
        def adapter(array_type, skip):
            ann = dict.fromkeys(scalars, Any)
            for k in arrays:
                t = list[list[int]] if k in rows else array_type
                ann[k] = pydantic.SkipValidation[t] if skip else t
            return pydantic.TypeAdapter(TypedDict("Doc", ann))  # type: ignore[operator]
        typed_a, skipped = adapter(list[int], False), adapter(list[int], True)
        out["pydantic: TypedDict, arrays list[int]"] = lambda: typed_a.validate_json(raw)
        out["pydantic: TypedDict, arrays skipped (numpy after)"] = lambda: skipped.validate_json(raw)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        path = measured_document(pathlib.Path(tmp), a.steps)
        arrays = [k for k in json.loads(path.read_bytes()) if k in results.STEP_ARRAYS + results.OPTIONAL_STEP_ARRAYS]
        print(f"{a.steps:,} steps measured in {time.perf_counter() - started:.1f} s: {path.name}, "
              f"{path.stat().st_size / 2**20:.1f} MiB, {len(arrays)} per-step arrays")
        print(f"Python {sys.version.split()[0]}; best of {a.repeats}")
        for name, fn in candidates(path).items():
            if fn is None:
                print(f"  {name:55s} not installed")
                continue
            seconds, peak = best(fn, a.repeats)
            print(f"  {name:55s} {seconds:6.2f} s  peak {peak:7.1f} MiB traced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
