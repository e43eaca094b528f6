"""The memory a process may still take follows its own control group, as libuv's
`uv_get_constrained_memory` does: cgroup v2 from the process's group up to the root, v1
through the memory controller's path. (julia/measure.jl's `available_memory` is the same
algorithm in Julia; test_julia_static.py checks that it reads /proc/self/cgroup.)"""

from __future__ import annotations

from gcbench.running import footprint


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_v2_takes_the_smallest_room_from_the_process_group_up(tmp_path):
    root = tmp_path / "cgroup"
    _write(root / "cgroup.controllers", "cpu memory\n")
    _write(root / "memory.current", "900000000\n")  # the root: no limit files
    job = root / "system.slice" / "slurm" / "job_7"
    _write(job / "memory.max", str(4 * 2**30))  # the job's limit: 4 GiB, 3 GiB used
    _write(job / "memory.current", str(3 * 2**30))
    _write(job / "memory.high", "max\n")
    step = job / "step_0"
    _write(step / "memory.max", "max\n")
    _write(step / "memory.current", str(2**30))
    proc = tmp_path / "cgroup-of-self"
    _write(proc, "0::/system.slice/slurm/job_7/step_0\n")
    assert footprint.cgroup_room(str(root), str(proc)) == 2**30  # the job's room, not the step's or the root's
    _write(step / "memory.high", str(int(1.5 * 2**30)))  # a lower soft limit on the step itself
    assert footprint.cgroup_room(str(root), str(proc)) == int(0.5 * 2**30)


def test_v1_reads_the_memory_controllers_group_or_its_root(tmp_path):
    root = tmp_path / "cgroup"
    group = root / "memory" / "process_api" / "abc"
    _write(group / "memory.limit_in_bytes", str(8 * 2**30))
    _write(group / "memory.usage_in_bytes", str(2 * 2**30))
    proc = tmp_path / "self"
    _write(proc, "5:devices:/\n4:memory:/process_api/abc\n0::/\n")
    assert footprint.cgroup_room(str(root), str(proc)) == 6 * 2**30
    # in a container the group's folder is not visible: the controller's root is the group
    _write(proc, "4:memory:/elsewhere/xyz\n")
    _write(root / "memory" / "memory.limit_in_bytes", str(3 * 2**30))
    _write(root / "memory" / "memory.usage_in_bytes", str(2**30))
    assert footprint.cgroup_room(str(root), str(proc)) == 2 * 2**30
    # no limit (v1 writes a huge number)
    _write(root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n")
    assert footprint.cgroup_room(str(root), str(proc)) is None


def test_no_cgroup_no_limit(tmp_path):
    assert footprint.cgroup_room(str(tmp_path / "none"), str(tmp_path / "missing")) is None
    assert footprint.available_bytes() is None or footprint.available_bytes() > 0


def _v2(tmp_path, max_text: bytes, group: str = "job"):
    root = tmp_path / "cgroup"
    _write(root / "cgroup.controllers", "memory\n")
    (root / "job").mkdir(parents=True, exist_ok=True)
    (root / "job" / "memory.max").write_bytes(max_text)
    _write(root / "job" / "memory.current", "100\n")
    proc = tmp_path / "self"
    proc.write_bytes(b"0::/" + group.encode("utf-8", "surrogateescape") + b"\n")
    return str(root), str(proc)


import pytest  # noqa: E402


@pytest.mark.parametrize("text", ["\u0661\u0662\u0663".encode(), b"9" * 5000, b"\xff\xfe max", b"12\x0034"])
def test_a_limit_file_that_is_not_a_plain_number_is_no_limit(tmp_path, text):
    """A non-ASCII digit, 5,000 digits or bytes that are not UTF-8: no limit read, no error."""
    root, proc = _v2(tmp_path, text)
    assert footprint.cgroup_room(root, proc) is None


def test_the_group_path_is_read_within_bounds(tmp_path):
    """A NUL or non-UTF-8 bytes in /proc/self/cgroup, a FIFO as a limit file, or a group
    20,000 levels deep: an answer (None where nothing can be read), at once."""
    import os

    root, proc = _v2(tmp_path, b"1000\n")
    pathlib_proc = tmp_path / "self"
    pathlib_proc.write_bytes(b"0::/jo\x00b\n")
    assert footprint.cgroup_room(root, proc) is None
    pathlib_proc.write_bytes(b"0::/job\xff\n")
    assert footprint.cgroup_room(root, proc) is None
    pathlib_proc.write_bytes(b"0::/job\n")
    assert footprint.cgroup_room(root, proc) == 900
    (tmp_path / "cgroup" / "job" / "memory.max").unlink()
    os.mkfifo(tmp_path / "cgroup" / "job" / "memory.max")  # read, it would block for ever
    assert footprint.cgroup_room(root, proc) is None
    pathlib_proc.write_bytes(b"0::/" + b"a/" * 20_000 + b"\n")
    assert footprint.cgroup_room(root, proc) is None  # not followed (it took 6.7 s, quadratic)
