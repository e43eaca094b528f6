"""How much memory can a pure-Python loop keep before its resident set shows it?

A process that has not loaded `_ctypes` (no numpy, no jax) has its bytes kept read from
its resident set (`gcbench.analysing.rates.bytes_kept`), and the resident set grows only
once the C allocator has used up the free memory it already holds: what compiling and
importing modules left behind. This reads, in fresh processes of the gate catalogue's
flat loop (1,400 objects of cyclic garbage a step, 17,000 long-lived ones) under
`gcbench.measure` with a warm-up of 40 steps, at its first timed step:

- the allocator's free memory (glibc's `mallinfo2`: free chunks, and the top of the heap
  apart), with gcbench's modules read from bytecode (as a wheel installs them) and
  compiled from source (an editable install under PYTHONDONTWRITEBYTECODE, as some CI
  machines run);
- then, keeping 1 KiB of bytes a step for `--steps` steps, how far the allocator's bytes in
  use and the resident set each moved beyond the same loop keeping nothing (its probe's
  columns and the allocator's own growth move the resident set too).

Each child loads ctypes first, to read the allocator: its own objects are in every mode alike.

    python benchmarks/allocator_free.py [--runs 3] [--steps 300] [--save FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve()
PACKAGE = HERE.parent.parent / "python" / "gcbench"

CHILD = r"""
import ctypes, json, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
held = [[] for _ in range(17000)]
import gcbench
steps, keep = int(sys.argv[1]), int(sys.argv[2])
kept, at = [], {}
with gcbench.measure("loop", warmup=40) as m:
    from gcbench.measuring.probe import malloc_in_use, rss_bytes  # what gcbench reads, loaded by measure
    for i in range(40 + steps):
        if i == 40:
            info = libc.mallinfo2()
            at = {"free": info.fordblks, "top": info.keepcost, "used": malloc_in_use(), "rss": rss_bytes()}
        with m.step():
            for _ in range(700):
                x = []
                x.append([x])
            if i >= 40 and keep:
                kept.append(bytes(keep))
print(json.dumps({**at, "used_end": malloc_in_use(), "rss_end": rss_bytes()}))
"""


def child(path: pathlib.Path, from_source: bool, steps: int, keep: int) -> dict:
    """One fresh process with gcbench imported from `path`."""
    env = {**os.environ, "PYTHONPATH": str(path)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if from_source:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(steps), str(keep)], capture_output=True, text=True,
                          env=env, check=True)
    return json.loads(proc.stdout)


def copies(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """gcbench twice: compiled to bytecode, and with no bytecode at all."""
    out = {}
    for mode in ("bytecode", "source"):
        shutil.copytree(PACKAGE, root / mode / "gcbench", ignore=shutil.ignore_patterns("__pycache__"))
        out[mode] = root / mode
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(out["bytecode"])], check=True)
    return out


def measure(runs: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        paths = copies(pathlib.Path(tmp))
        got = {f"{mode}{suffix}": [child(path, mode == "source", steps, keep) for _ in range(runs)]
               for mode, path in paths.items() for suffix, keep in (("", 1024), ("_none_kept", 0))}
    return {"steps": steps, "kept_per_step": 1024, **got}


CTYPES_OBJECTS = "import gc; n = len(gc.get_objects()); import _ctypes; print(len(gc.get_objects()) - n)"


def ctypes_objects() -> int:
    """Tracked objects `import _ctypes` adds to a fresh interpreter's heap (the list that
    counts them is not among them): what reading the allocator would cost a pure-Python loop."""
    proc = subprocess.run([sys.executable, "-c", CTYPES_OBJECTS], capture_output=True, text=True, check=True)
    return int(proc.stdout)


def condensed(got: dict) -> dict:
    """Per mode, the medians over runs: free memory, the top of the heap, and what keeping
    1 KiB a step moved the allocator's bytes and the resident set by beyond the same loop
    keeping nothing."""
    def moved(runs: list, key: str) -> float:
        return statistics.median(r[f"{key}_end"] - r[key] for r in runs) / 1024

    out = {}
    for mode in ("bytecode", "source"):
        runs, none = got[mode], got[f"{mode}_none_kept"]
        out[mode] = {"free_kib": statistics.median(r["free"] for r in runs + none) / 1024,
                     "top_kib": statistics.median(r["top"] for r in runs + none) / 1024,
                     "used_kib": moved(runs, "used") - moved(none, "used"),
                     "rss_kib": moved(runs, "rss") - moved(none, "rss")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes a mode")
    ap.add_argument("--steps", type=int, default=300, help="timed steps, each keeping 1 KiB")
    ap.add_argument("--save", metavar="FILE", help="also write the runs to FILE")
    a = ap.parse_args()
    if a.runs < 1 or a.steps < 1:
        ap.error("--runs and --steps must be at least 1")
    got = measure(a.runs, a.steps)
    got["medians"] = condensed(got)
    got["ctypes_objects"] = ctypes_objects()
    if a.save:
        pathlib.Path(a.save).write_text(json.dumps(got, indent=1) + "\n")
    processes = f"{a.runs} fresh process{'es' if a.runs > 1 else ''} a mode"
    print(f"a pure-Python loop under gcbench.measure, {processes}; at its first timed step, and "
          f"what keeping 1 KiB a step for {a.steps} steps moved beyond keeping nothing (medians):")
    print(f"{'gcbench':<10} {'allocator free':>15} {'(top of heap)':>14} {'in use moved':>13} {'resident moved':>15}")
    for mode, m in got["medians"].items():
        print(f"{mode:<10} {m['free_kib']:>11,.0f} KiB {m['top_kib']:>10,.0f} KiB {m['used_kib']:>9,.0f} KiB "
              f"{m['rss_kib']:>11,.0f} KiB")
    print(f"reading the allocator instead (`import _ctypes`) adds {got['ctypes_objects']} objects to the heap")
    return 0


if __name__ == "__main__":
    sys.exit(main())
