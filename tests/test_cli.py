"""What a user sees at the command line: clear one-line errors with exit code 2."""

import pytest

from gcbench import data as datamod
from conftest import run_cli, write_mnist


def assert_usage_error(proc, *fragments):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gcbench: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("args,fragments", [
    (["--backends", "pytorch"], ["unknown backend 'pytorch'", "valid backends: jax"]),
    (["--workloads", "resnet"], ["unknown workload 'resnet'", "mlp, lenet5, vit"]),
    (["--gc", "sometimes"], ["unknown GC policy 'sometimes'", "manual:K"]),
    (["--gc", "manual:0"], ["manual:K needs a positive integer"]),
    (["--steps", "0"], ["steps must be a positive integer, got 0"]),
    (["--steps", "-5"], ["steps must be a positive integer, got -5"]),
    (["--steps", "many"], ["invalid int value: 'many'"]),
    (["--networks", "0"], ["networks for mlp must be a positive integer"]),
    (["--suite", "nosuch"], ["no suite 'nosuch'", "default, quick"]),
])
def test_bad_run_arguments(args, fragments):
    assert_usage_error(run_cli("run", *args), *fragments)


def test_output_folder_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    assert_usage_error(run_cli("run", "--steps", "5", "--out", str(target)), "exists and is not a folder")


def test_truncated_idx_names_the_file(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.IMAGES
    path.write_bytes(path.read_bytes()[:1000])
    assert_usage_error(run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "out")),
                       str(path), "truncated")


def test_wrong_magic_idx_names_the_file(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.LABELS
    path.write_bytes(b"PK\x03\x04" + path.read_bytes()[4:])
    assert_usage_error(run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "o")),
                       str(path), "not an IDX file", "expected")


def test_unknown_command_and_no_command():
    assert_usage_error(run_cli("frobnicate"), "invalid choice")
    assert_usage_error(run_cli(), "required")


def test_suite_file_with_unknown_key(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('backends = ["jax"]\nstepz = 4\n')
    assert_usage_error(run_cli("run", "--suite", str(path)), "unknown keys stepz")


def test_list_shows_backends_workloads_and_policies():
    proc = run_cli("list")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "jax" in out and "available" in out
    assert "44,426 params/network" in out and "4,992 params/network" in out
    for policy in ("default", "freeze", "disable", "manual:K"):
        assert policy in out
