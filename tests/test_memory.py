"""`gcbench memory`: exact sizes on small cases, the gather finding, equal gradients."""

from __future__ import annotations

import time

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from conftest import run_cli  # noqa: E402
from gcbench.core.errors import UsageError  # noqa: E402
from gcbench.measuring import program_memory  # noqa: E402


@pytest.fixture(scope="module")
def small():
    return {(r.index_dtype, r.formulation): r for r in program_memory.gather_cases("small", ["int32", "int16"])}


@pytest.mark.parametrize(("dtype", "itemsize"), [("int32", 4), ("int16", 2)])
def test_argument_sizes_are_exact(small, dtype, itemsize):
    n, m = program_memory.SIZES["small"]
    for name in ("seed", "columns", "flat", "chunked", "manual-chunked"):
        r = small[(dtype, name)]
        expected = n**3 * 4 + m * 3 * itemsize
        assert r.forward.argument_bytes == expected
        assert r.gradient.argument_bytes == expected
        assert r.gradient.output_bytes == n**3 * 4  # d/dx has x's shape
        assert r.floor_bytes == expected + n**3 * 4


def test_gather_gradient_needs_more_temporaries_than_its_forward(small):
    for dtype in ("int32", "int16"):
        r = small[(dtype, "seed")]
        assert r.gradient.temp_bytes > r.forward.temp_bytes
        assert r.gradient_over_floor > 1.5


def test_the_manual_gradient_is_near_the_floor(small):
    for dtype in ("int32", "int16"):
        assert small[(dtype, "manual-chunked")].gradient_over_floor < 1.1
        assert (
            small[(dtype, "manual-chunked")].gradient.total_bytes
            < small[(dtype, "seed")].gradient.total_bytes
        )


@pytest.mark.parametrize("dtype", ["int32", "int16"])
def test_every_formulation_computes_the_reference_gradient(dtype):
    rng = np.random.default_rng(0)
    n, m = 8, 512
    x = jnp.asarray(rng.random((n, n, n), dtype=np.float32))
    idx = jnp.asarray(rng.integers(0, n, (m, 3)).astype(dtype))
    forms = program_memory._formulations()
    reference = np.asarray(jax.grad(forms["seed"][0])(x, idx))
    assert reference.sum() == pytest.approx(2.5 * m)  # every gathered element counts 2.5
    for name, (forward, gradient) in forms.items():
        np.testing.assert_allclose(np.asarray(gradient(x, idx)), reference, rtol=1e-6, err_msg=name)
        assert float(forward(x, idx)) == pytest.approx(float(forms["seed"][0](x, idx)), rel=1e-5)


def test_seed_sizes_compile_without_memory():
    # 2048^3 x 3 int32 indices are 96 GiB: analysed, never allocated.
    r = next(r for r in program_memory.gather_cases("seed", ["int32"]) if r.formulation == "seed")
    assert r.forward.argument_bytes == 128**3 * 4 + 2048**3 * 3 * 4
    assert r.gradient.total_bytes > r.forward.total_bytes


def test_sizes_and_dtypes_are_checked():
    assert program_memory.parse_size("32,100") == ("32,100", 32, 100)
    for bad in ("huge", "0,5", "3", "a,b", "-1,4"):
        with pytest.raises(UsageError, match="bad size"):
            program_memory.parse_size(bad)
    with pytest.raises(UsageError, match="bad index dtype"):
        program_memory.check_index_dtype("float32", 16)
    with pytest.raises(UsageError, match="int8 cannot hold N = 256"):
        program_memory.check_index_dtype("int8", 256)


@pytest.mark.e2e
@pytest.mark.slow
def test_memory_cli_table_json_and_report(tmp_path):
    out = tmp_path / "mem"
    proc = run_cli("memory", "--size", "small", "--index-dtype", "int32", "--backends", "jax,nnx",
                   "--workloads", "mlp", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "manual-chunked" in proc.stdout
    doc = program_memory.load(out)
    steps = {(c.backend, c.program): c for c in doc.steps()}
    assert steps[("jax", "step")].argument_bytes > steps[("(functional)", "forward")].argument_bytes
    # The same network and Adam state; nnx.Optimizer adds its own int32 step counter.
    assert steps[("nnx", "step")].argument_bytes == steps[("jax", "step")].argument_bytes + 4
    assert all(c.measured is not None for c in doc.gathers())
    rep = run_cli("report", str(out), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "index.md").read_text()
    assert "## Memory of compiled programs" in md
    assert "| small | int32 | manual-chunked |" in md


@pytest.mark.parametrize(("args", "fragment"), [
    (["--size", "enormous"], "bad size 'enormous'"),
    (["--index-dtype", "float32"], "bad index dtype 'float32'"),
    (["--size", "300,10", "--index-dtype", "int8"], "int8 cannot hold N = 300"),
    (["--workloads", "resnet"], "unknown workload 'resnet'"),
])
def test_memory_bad_input_is_one_line(tmp_path, args, fragment):
    proc = run_cli("memory", *args, "--no-measure", "--out", str(tmp_path / "m"))
    assert proc.returncode == 2
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_accelerators_compiler_gets_a_column_of_its_own_within_a_time_limit():
    """On a GPU machine the gather programs are compiled twice: for the CPU (the seed's
    figures, the same on every machine) and, in a child process with a time limit, for
    the GPU. Here the CPU stands in for the accelerator: the child's figures must equal
    the ones compiled in this process, and a limit too short gives the reason instead."""
    rows = program_memory.gather_cases("small", ["int32"], "cpu")
    assert rows
    assert all(r.compiler == "cpu" for r in rows)
    for r in rows:
        acc = r.accelerator
        assert acc.platform == "cpu"
        assert acc.gradient == r.gradient
        assert acc.forward == r.forward
    text = program_memory.format_tables(program_memory.MemoryDoc(rows))
    assert "cpu grad" in text
    assert "(and the cpu compiler's)" in text
    slow = program_memory.gather_cases("small", ["int32", "int16"], "cpu", deadline=time.monotonic() + 0.05)
    first, second = slow[0].accelerator, slow[-1].accelerator  # the budget runs out in the first case
    assert first == program_memory.AcceleratorFigures("cpu", error="cpu compiler took longer than the 60 s it had")
    assert second == program_memory.AcceleratorFigures("cpu", error="not compiled: the 60 s for the cpu compiler "
                                                                    "were spent")
    tables = program_memory.format_tables(program_memory.MemoryDoc(slow))
    assert "cpu: not compiled: the 60 s for the cpu compiler were spent" in tables


def test_the_reproduction_rows_say_which_compiler_each_figure_comes_from():
    from gcbench.analysing import seed_cases

    gib = program_memory.GIB

    def program(total_gib):
        return {"argument_bytes": 0, "output_bytes": 0, "temp_bytes": 0, "alias_bytes": 0,
                "total_bytes": int(total_gib * gib)}

    def case(compiler_fields, fwd, grad):
        return {"kind": "gather", "size": "seed", "formulation": "seed", "index_dtype": "int32", "m": 2048**3, "n": 128,
                "forward": program(fwd), "gradient": program(grad), "floor_bytes": 0, "gradient_over_forward": 0.0,
                "gradient_over_floor": 0.0, **compiler_fields}

    def memdoc(device, cases):
        return program_memory.read({"device": device, "cases": cases}, "test")

    here = seed_cases.gather_rows(memdoc("TFRT_CPU_0", [case({"compiler": "cpu"}, 128.01, 224.02)]))
    assert [r.verdict for r in here] == ["reproduced", "reproduced", "not run"]
    assert "CPU compiler" in here[0].claim
    assert here[2].reason == "no GPU where `gcbench memory` ran"
    on_gpu = {"compiler": "cpu", "accelerator": {"platform": "gpu", "forward": program(96.01),
                                                 "gradient": program(96.02)}}
    gpu = seed_cases.gather_rows(memdoc("cuda:0", [case(on_gpu, 128.01, 224.02)]))[2]
    assert (
        gpu.verdict == "not"
    )
    assert (
        "96.02 GiB against its forward's 96.01 GiB: 1.00 x (no copy of the index)" in gpu.measured
    )
    # a document of an older gcbench, compiled for the GPU it ran on (../shared/gpu-h100/memory-seed-int32.json)
    old = seed_cases.gather_rows(memdoc("cuda:0", [case({}, 96.01, 96.02)]))
    assert len(old) == 1
    assert old[0].verdict == "not"
    assert "GPU compiler" in old[0].claim
