"""`gcbench memory`: what compiled programs need, analysed before they run.

How it works, and why: docs/internals.md, `gcbench.measuring.program_memory`.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
import sys
import time
from typing import ClassVar

import numpy as np

from ..core import files, metadata, records
from ..core.errors import UsageError, did_you_mean

FORMAT = "gcbench-memory"
SCHEMA_VERSION = 1
# small: tests and exact checks; medium: big enough that a real run's peak memory stands
# out of the process's baseline; seed: the seed report's sizes (analysed, never run here).
SIZES = {"small": (16, 4096), "medium": (64, 2**22), "seed": (128, 2048**3)}
MEASURE_LIMIT = 2 * 2**30  # run a case for real only when its compiled total is at most this
ACCELERATOR_BUDGET_S = 60.0  # seconds for all the gather cases on an accelerator's compiler together
INDEX_DTYPES = ("int8", "int16", "int32", "int64")
GIB = 2**30


@dataclasses.dataclass
class ProgramBytes:
    """XLA's memory analysis of one compiled program."""

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    total_bytes: int  # arguments, output and temporaries, less what is aliased


@dataclasses.dataclass
class AcceleratorFigures:
    """The same gather programs compiled by an accelerator's compiler, or why not."""

    platform: str
    forward: ProgramBytes | None = None
    gradient: ProgramBytes | None = None
    error: str | None = None

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("forward", "gradient", "error")


@dataclasses.dataclass
class GatherRun:
    """A real run of a small gather gradient: the peak resident memory it added, or why not."""

    peak_rss_increase_bytes: int | None = None
    error: str | None = None

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("peak_rss_increase_bytes", "error")


@dataclasses.dataclass
class GatherCase:
    """One gather formulation at one size and index dtype: its forward and gradient programs."""

    size: str
    n: int
    m: int
    index_dtype: str
    formulation: str
    forward: ProgramBytes
    gradient: ProgramBytes
    floor_bytes: int  # the gradient's arguments and its output
    gradient_over_forward: float
    gradient_over_floor: float
    compiler: str | None = None  # None: an older document, compiled for the default device it names
    accelerator: AcceleratorFigures | None = None
    measured: GatherRun | None = None
    kind: str = "gather"

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("compiler", "accelerator", "measured")


@dataclasses.dataclass
class StepCase:
    """One training step's program (or forward, or value-and-grad) of a backend on a workload."""

    workload: str
    params_per_network: int
    backend: str
    program: str
    networks: int | None = None
    unavailable: str | None = None  # why the backend's program was not compiled
    argument_bytes: int | None = None
    output_bytes: int | None = None
    temp_bytes: int | None = None
    alias_bytes: int | None = None
    total_bytes: int | None = None
    kind: str = "step"

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("networks", "unavailable", "argument_bytes", "output_bytes",
                                            "temp_bytes", "alias_bytes", "total_bytes")


@dataclasses.dataclass
class MemoryDoc:
    """memory.json: every case `gcbench memory` compiled, and where."""

    cases: list[GatherCase | StepCase]
    command: list[str] = dataclasses.field(default_factory=list)
    jax: str | None = None  # None: an older document that did not say
    device: str | None = None
    gather_compilers: list[str] = dataclasses.field(default_factory=list)
    date: str = ""
    format: str = FORMAT
    schema_version: int = SCHEMA_VERSION

    def gathers(self) -> list[GatherCase]:
        return [c for c in self.cases if isinstance(c, GatherCase)]

    def steps(self) -> list[StepCase]:
        return [c for c in self.cases if isinstance(c, StepCase)]


def _a_count(text: str) -> bool:
    """A positive integer of at most 12 ASCII digits."""
    digits = text.strip()
    return digits.isascii() and digits.isdigit() and len(digits) <= 12 and int(digits) > 0


def parse_size(text: str) -> tuple[str, int, int]:
    """`small`, `seed`, or `N,M` (x is N^3 float32, idx has M rows) -> (label, N, M)."""
    if text in SIZES:
        return (text, *SIZES[text])
    parts = text.split(",")
    if len(parts) == 2 and all(_a_count(p) for p in parts):
        n, m = (int(p) for p in parts)
        if n**3 > 2**31 - 1:
            raise UsageError(f"bad size {text!r}: x would hold N^3 = {n**3:,} elements, more than JAX's 32-bit "
                             f"indices reach (N at most {int((2**31 - 1) ** (1 / 3))})")
        return f"{n},{m}", n, m
    raise UsageError(f"bad size {text!r}{did_you_mean(text, SIZES)}: use {', '.join(SIZES)}, or N,M with positive "
                     "integers (x is N^3, idx has M rows)")


def check_index_dtype(name: str, n: int) -> str:
    if name not in INDEX_DTYPES:
        raise UsageError(f"bad index dtype {name!r}; valid: {', '.join(INDEX_DTYPES)}")
    if np.iinfo(name).max < n:  # the programs compare and clip indices against N itself
        raise UsageError(f"index dtype {name} cannot hold N = {n} (the programs compare indices with it); "
                         f"use a wider one")
    return name


def check_cases(sizes: list[str], index_dtypes: list[str]) -> None:
    """Every size and dtype checked before anything is compiled (or any folder made)."""
    for size in sizes:
        _, n, _ = parse_size(size)
        for dtype in index_dtypes:
            check_index_dtype(dtype, n)


# -- the gather formulations ----------------------------------------------------------------

def _formulations():
    import jax
    import jax.numpy as jnp

    def seed(x, idx):  # the seed report's function
        return jnp.sum(x[tuple(jnp.split(idx, 3, axis=-1))][..., 0] * 2.5)

    def columns(x, idx):  # one index array per axis
        return jnp.sum(x[idx[:, 0], idx[:, 1], idx[:, 2]] * 2.5)

    def flat(x, idx):  # one gather along a single flattened axis
        i = idx.astype(jnp.int32)
        return jnp.sum(x.reshape(-1)[(i[:, 0] * x.shape[1] + i[:, 1]) * x.shape[2] + i[:, 2]] * 2.5)

    def chunks_of(idx):
        count = next(c for c in (64, 32, 16, 8, 4, 2, 1) if idx.shape[0] % c == 0)
        return idx.reshape(count, -1, 3)

    def chunked(x, idx):  # lax.scan over chunks of the index array
        def body(acc, c):
            return acc + jnp.sum(x[c[:, 0], c[:, 1], c[:, 2]] * 2.5), None
        return jax.lax.scan(body, jnp.zeros((), x.dtype), chunks_of(idx))[0]

    def manual_chunked_grad(x, idx):  # the gradient written by hand: chunked scatter-adds
        def body(g, c):
            return g.at[c[:, 0], c[:, 1], c[:, 2]].add(jnp.asarray(2.5, x.dtype)), None
        return jax.lax.scan(body, jnp.zeros_like(x), chunks_of(idx))[0]

    def grad(f):
        return jax.grad(f, argnums=0)
    # name -> (forward, gradient program)
    return {
        "seed": (seed, grad(seed)),
        "columns": (columns, grad(columns)),
        "flat": (flat, grad(flat)),
        "chunked": (chunked, grad(chunked)),
        "manual-chunked": (chunked, manual_chunked_grad),
    }


def _analysis(fn, *args) -> ProgramBytes:
    """Memory of `fn` compiled for the device its abstract arguments are placed on."""
    import jax

    ma = jax.jit(fn, keep_unused=True).lower(*args).compile().memory_analysis()
    return _stats(ma)


def _device(platform: str):
    import jax

    return jax.devices(platform)[0]


def _abstract(shape, dtype, device):
    """An abstract array placed on `device`: what is compiled for it is that device's program."""
    import jax

    return jax.ShapeDtypeStruct(shape, dtype, sharding=jax.sharding.SingleDeviceSharding(device))


def compiler_of(doc: MemoryDoc, row: GatherCase) -> str:
    """Which XLA compiler a gather row's figures come from: recorded in the row; a document
    that does not record it compiled for the default device it names."""
    return row.compiler or ("cpu" if "cpu" in (doc.device or "cpu").lower() else "gpu")


def accelerator() -> str | None:
    """JAX's default platform when it is not the CPU ('gpu', 'tpu'), else None."""
    import jax

    platform = jax.default_backend()
    return None if platform == "cpu" else platform


def _stats(ma) -> ProgramBytes:
    args, out, temp, alias = (int(ma.argument_size_in_bytes), int(ma.output_size_in_bytes),
                              int(ma.temp_size_in_bytes), int(ma.alias_size_in_bytes))
    return ProgramBytes(args, out, temp, alias, args + out + temp - alias)


def _gather_programs(n: int, m: int, dtype: str, platform: str) -> dict[str, dict[str, ProgramBytes]]:
    """Forward and gradient memory of every formulation, compiled for `platform`."""
    import jax.numpy as jnp

    device = _device(platform)
    x = _abstract((n, n, n), jnp.float32, device)
    idx = _abstract((m, 3), jnp.dtype(dtype), device)
    return {name: {"forward": _analysis(forward, x, idx), "gradient": _analysis(gradient, x, idx)}
            for name, (forward, gradient) in _formulations().items()}


def gather_cases(size: str, index_dtypes: list[str], accelerator_platform: str | None = None,
                 deadline: float | None = None) -> list[GatherCase]:
    """One row per index dtype and formulation, compiled for the CPU; with
    `accelerator_platform`, each row also holds that compiler's figures, or why not (the
    compiles stop at `deadline`, a `time.monotonic()` value: by default one budget from now)."""
    if deadline is None:
        deadline = time.monotonic() + ACCELERATOR_BUDGET_S
    import jax.numpy as jnp

    label, n, m = parse_size(size)
    rows = []
    for dtype in index_dtypes:
        check_index_dtype(dtype, n)
        arg_bytes = n**3 * 4 + m * 3 * jnp.dtype(dtype).itemsize
        floor = arg_bytes + n**3 * 4  # the gradient's arguments and its output
        on_accelerator = compile_in_child(n, m, dtype, accelerator_platform, deadline) if accelerator_platform else None
        for name, programs in _gather_programs(n, m, dtype, "cpu").items():
            fwd, grd = programs["forward"], programs["gradient"]
            rows.append(GatherCase(label, n, m, dtype, name, fwd, grd, floor, grd.total_bytes / fwd.total_bytes,
                                   grd.total_bytes / floor, "cpu", _accelerator(on_accelerator, name,
                                                                               accelerator_platform)))
    return rows


def _accelerator(compiled: dict | None, name: str, platform: str | None) -> AcceleratorFigures | None:
    """Formulation `name`'s figures from the accelerator's compiler (`compile_in_child`)."""
    if compiled is None or platform is None:
        return None
    if "error" in compiled:
        return AcceleratorFigures(platform, error=str(compiled.get("error")))
    return records.from_json({"platform": platform, **compiled.get(name, {})}, AcceleratorFigures, platform)


def compile_in_child(n: int, m: int, dtype: str, platform: str, deadline: float) -> dict:
    """The gather programs compiled for `platform` in a child process that is killed at
    `deadline` (`time.monotonic()`): {formulation: {forward, gradient}}, or {"error": why}."""
    left = deadline - time.monotonic()
    if left <= 0:
        return {"error": f"not compiled: the {ACCELERATOR_BUDGET_S:g} s for the {platform} compiler were spent"}
    spec = json.dumps({"mode": "compile", "n": n, "m": m, "dtype": dtype, "platform": platform})
    try:
        proc = subprocess.run([sys.executable, "-m", "gcbench.measuring.program_memory", spec], capture_output=True,
                              text=True, timeout=left)
    except subprocess.TimeoutExpired:
        return {"error": f"{platform} compiler took longer than the {ACCELERATOR_BUDGET_S:g} s it had"}
    if proc.returncode != 0:
        return {
            "error": f"{platform} compiler failed: " + (proc.stderr.strip().splitlines() or ["no message"])[-1][:300]
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- training steps of the workloads --------------------------------------------------------

def step_cases(backends: list[str], workloads: list[str]) -> list[StepCase]:
    """Forward, value-and-grad and each backend's optimizer step, one network's program
    (jax-vmap: all N networks in one program)."""
    import jax

    from . import mnist
    from .backends import _jaxnn, get_backend
    from .workloads import BATCH_SIZE, get_workload, init_params

    dataset = mnist.synthetic(2 * BATCH_SIZE)
    x = jax.ShapeDtypeStruct((BATCH_SIZE, 28, 28, 1), np.float32)
    y = jax.ShapeDtypeStruct((BATCH_SIZE,), np.int32)
    rows = []
    for wname in workloads:
        workload = get_workload(wname)
        p = {k: jax.ShapeDtypeStruct(v, np.float32) for k, v in workload.param_shapes().items()}
        def loss(p, x, y, w=workload):
            return _jaxnn.cross_entropy(_jaxnn.forward(w, p, x), y)
        base = StepCase(wname, workload.params_per_network, "(functional)", "forward")
        rows.append(dataclasses.replace(
            base, **dataclasses.asdict(_analysis(lambda p, x, w=workload: _jaxnn.forward(w, p, x), p, x))))
        rows.append(dataclasses.replace(base, program="value_and_grad",
                                        **dataclasses.asdict(_analysis(jax.value_and_grad(loss), p, x, y))))
        for bname in backends:
            info = get_backend(bname)
            if info.language != "python" or not info.supports(wname):
                continue
            networks = workload.default_networks if bname == "jax-vmap" else 1
            row = dataclasses.replace(base, backend=bname, program="step", networks=networks)
            ok, why = info.availability()
            if not ok:
                rows.append(dataclasses.replace(row, unavailable=why))
                continue
            trainer = info.build(workload, init_params(workload, 0, networks), dataset)
            lowered = getattr(trainer, "lower_step", None)
            if lowered is None:
                rows.append(dataclasses.replace(row, unavailable=f"{bname}'s jitted step exposes no lower()"))
                continue
            compiled = lowered().compile()
            compiled = getattr(compiled, "compiled", compiled)  # Equinox wraps jax's Compiled
            rows.append(dataclasses.replace(row, **dataclasses.asdict(_stats(compiled.memory_analysis()))))
    return rows


# -- measured runs ---------------------------------------------------------------------------

def measure_gather(n: int, m: int, dtype: str, formulation: str) -> GatherRun:
    """Run one small gather gradient for real in a fresh process; peak memory increase."""
    spec = json.dumps({"n": n, "m": m, "dtype": dtype, "formulation": formulation})
    proc = subprocess.run(
        [sys.executable, "-m", "gcbench.measuring.program_memory", spec], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        return GatherRun(error=(proc.stderr.strip().splitlines() or ["failed"])[-1])
    return records.from_json(json.loads(proc.stdout.strip().splitlines()[-1]), GatherRun, "a gather's run")


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def _measure_in_this_process(n: int, m: int, dtype: str, formulation: str) -> dict:
    """Peak resident memory added by one run of the compiled gradient (Linux).

    Compiling leaves freed heap behind that a run would reuse unseen, so the freed heap
    is returned to the system first (`malloc_trim`) and the peak counter reset
    (`/proc/self/clear_refs`); the increase is then peak minus resident before the run.
    """
    import ctypes

    import jax

    rng = np.random.default_rng(0)
    cpu = _device("cpu")  # the figures beside it are the CPU compiler's
    x = jax.device_put(rng.random((n, n, n), dtype=np.float32), cpu)
    idx = jax.device_put(rng.integers(0, n, (m, 3)).astype(dtype), cpu)
    compiled = jax.jit(_formulations()[formulation][1]).lower(x, idx).compile()
    jax.block_until_ready((x, idx))
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        before = _status_bytes("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError as e:
        return {"error": f"peak memory needs Linux /proc and glibc ({e.strerror or e})"}
    jax.block_until_ready(compiled(x, idx))
    return {"peak_rss_increase_bytes": _status_bytes("VmHWM") - before}


# -- the command ------------------------------------------------------------------------------

def run(sizes: list[str], index_dtypes: list[str], backends: list[str], workloads: list[str],
        measure: bool, out_dir: pathlib.Path, command: list[str]) -> MemoryDoc:
    check_cases(sizes, index_dtypes)
    import jax

    other = accelerator()
    deadline = time.monotonic() + ACCELERATOR_BUDGET_S  # one budget for every case on the accelerator
    gathers = [c for size in sizes for c in gather_cases(size, index_dtypes, other, deadline)]
    if measure:
        for row in gathers:
            if row.gradient.total_bytes <= MEASURE_LIMIT:
                row.measured = measure_gather(row.n, row.m, row.index_dtype, row.formulation)
    rows: list[GatherCase | StepCase] = [*gathers, *step_cases(backends, workloads)]
    doc = MemoryDoc(rows, command, jax.__version__, str(jax.devices()[0]), ["cpu"] + ([other] if other else []),
                    metadata.timestamp())
    files.write_json(out_dir / "memory.json", records.to_json(doc))
    return doc


def load(path: pathlib.Path) -> MemoryDoc | None:
    """The memory document in a results folder, or None; refuses a newer schema."""
    path = pathlib.Path(path) / "memory.json" if pathlib.Path(path).is_dir() else pathlib.Path(path)
    if not path.is_file():
        return None
    doc = files.check_header(files.read_json(path, "gcbench memory document"), str(path), FORMAT,
                             "memory document", SCHEMA_VERSION)
    return read(doc, str(path))


def read(doc: dict, where: str) -> MemoryDoc:
    """A memory document's JSON (read from `where`) as its record; a one-line error where a
    case is malformed."""
    cases = doc.get("cases")
    if not isinstance(cases, list) or not all(isinstance(c, dict) and c.get("kind") in ("gather", "step")
                                              for c in cases):
        raise UsageError(f"{where}: memory document whose 'cases' are not a list of gather and step cases")
    try:
        typed = [records.from_json(c, GatherCase if c.get("kind") == "gather" else StepCase, f"case {i}")
                 for i, c in enumerate(cases)]
        # the cases of two kinds are typed above: msgspec reads one dataclass per type, not a union of them
        return MemoryDoc(typed, **{f.name: doc[f.name] for f in dataclasses.fields(MemoryDoc)
                                   if f.name != "cases" and f.name in doc})
    except UsageError as e:
        raise UsageError(f"{where}: a memory document with a malformed case ({e})") from None


def fmt_bytes(b: float) -> str:
    """Bytes with a binary unit: 224.02 GiB, 48.00 MiB, 16.0 KiB."""
    for unit, size in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= size:
            return f"{b / size:,.2f} {unit}"
    return f"{b:.0f} B"


def format_tables(doc: MemoryDoc) -> str:
    """The gather table (the forward and gradient programs' bytes) and the training steps'
    programs, as `gcbench memory` prints them."""
    return "\n".join(_gather_lines(doc.gathers()) + _step_lines(doc.steps()))


def _gather_lines(gathers: list[GatherCase]) -> list[str]:
    if not gathers:
        return []
    other = next((r.accelerator.platform for r in gathers if r.accelerator), None)
    head = (f"{'size':<8} {'idx':<6} {'formulation':<15} {'forward':>11} {'grad args':>11} {'grad out':>11} "
            f"{'grad temp':>11} {'gradient':>11} {'grad/fwd':>8} {'/floor':>7}"
            + (f" {other + ' fwd':>11} {other + ' grad':>11}" if other else "") + "  measured (gradient run)")
    lines = ["gather: total bytes of the forward and the gradient programs, XLA's CPU compiler"
             + (f" (and the {other} compiler's)" if other else ""), head, "-" * len(head)]
    lines += [_gather_line(r, other is not None) for r in gathers]
    lines.append("floor: the gradient's arguments plus its output; /floor is the gradient's total over it")
    errors = sorted({r.accelerator.error for r in gathers if r.accelerator and r.accelerator.error})
    return lines + [f"{other}: {e}" for e in errors]


def _gather_line(r: GatherCase, accelerator: bool) -> str:
    """One gather case: its programs' bytes, the gradient over the forward and over its
    floor, the accelerator's (where one compiled it) and the measured run's peak."""
    g = r.gradient
    return (f"{r.size:<8} {r.index_dtype:<6} {r.formulation:<15} "
            f"{fmt_bytes(r.forward.total_bytes):>11} "
            f"{fmt_bytes(g.argument_bytes):>11} {fmt_bytes(g.output_bytes):>11} "
            f"{fmt_bytes(g.temp_bytes):>11} {fmt_bytes(g.total_bytes):>11} "
            f"{r.gradient_over_forward:>8.2f} {r.gradient_over_floor:>7.2f}"
            f"{_accelerator_cells(r) if accelerator else ''}  {_measured(r.measured)}")


def _step_lines(steps: list[StepCase]) -> list[str]:
    lines: list[str] = []
    if steps:
        head = f"{'workload':<8} {'backend':<18} {'program':<15} {'args':>12} {'out':>12} {'temp':>12} {'total':>12}"
        lines += ["", "training step programs (one network; jax-vmap: all networks)", head, "-" * len(head)]
        for c in steps:
            if c.unavailable is not None or c.total_bytes is None:
                lines.append(f"{c.workload:<8} {c.backend:<18} {c.program:<15} {c.unavailable}")
                continue
            lines.append(
                f"{c.workload:<8} {c.backend:<18} {c.program:<15} {fmt_bytes(c.argument_bytes or 0):>12} "
                f"{fmt_bytes(c.output_bytes or 0):>12} {fmt_bytes(c.temp_bytes or 0):>12} "
                f"{fmt_bytes(c.total_bytes):>12}"
            )
    return lines


def _measured(run: GatherRun | None) -> str:
    """A real run's peak memory, or why there is none."""
    if run is not None and run.peak_rss_increase_bytes is not None:
        return "+" + fmt_bytes(run.peak_rss_increase_bytes) + " peak RSS"
    return (run.error if run is not None else None) or "-"


def _accelerator_cells(r: GatherCase) -> str:
    a = r.accelerator
    if a is not None and a.forward is not None and a.gradient is not None:
        return f" {fmt_bytes(a.forward.total_bytes):>11} {fmt_bytes(a.gradient.total_bytes):>11}"
    return f" {((a.error if a else None) or '-')[:23]:>23}"


if __name__ == "__main__":  # the child processes of `measure_gather` and `compile_in_child`
    spec = json.loads(sys.argv[1])
    if spec.get("mode") == "compile":
        print(json.dumps(records.to_json(_gather_programs(spec["n"], spec["m"], spec["dtype"], spec["platform"]))))
    else:
        print(json.dumps(_measure_in_this_process(spec["n"], spec["m"], spec["dtype"], spec["formulation"])))
