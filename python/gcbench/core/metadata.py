"""Facts about the machine and the software a result was measured with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: nothing more in a worker's heap
    from collections.abc import Mapping

import datetime
import functools
import importlib.metadata
import os
import pathlib
import platform
import socket
import subprocess
import sys

PACKAGES = ("numpy", "jax", "jaxlib", "optax", "equinox", "flax", "juliacall")
ENV_FLAGS = ("XLA_FLAGS", "JAX_PLATFORMS", "JAX_ENABLE_X64", "JAX_COMPILATION_CACHE_DIR", "PYTHONGC",
             "OMP_NUM_THREADS", "PYTHON_JULIACALL_THREADS", "PYTHON_JULIACALL_HANDLE_SIGNALS",
             "PYTHON_JULIACALL_OPTIMIZE", "PYTHON_JULIAPKG_OFFLINE", "PYTHON_JULIAPKG_EXE")


def timestamp() -> str:
    """Now, in UTC to the second, as every document gcbench writes dates it."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


@functools.lru_cache(maxsize=1)
def gcbench_identity() -> dict:
    """This gcbench: its version and, when it runs from a git checkout of its own source, the
    commit (`+` at the end when the checkout has changes not committed); commit None otherwise."""
    from .version import __version__

    here = pathlib.Path(__file__).resolve().parents[1]  # the package
    commit = None
    try:
        top = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             timeout=10)
        if top.returncode == 0 and pathlib.Path(top.stdout.strip()).resolve() / "python" / "gcbench" == here:
            out = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty=+", "--abbrev=12"],
                                 capture_output=True, text=True, timeout=10)
            commit = out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"version": __version__, "commit": commit}


def describe_gcbench(identity: Mapping[str, Any] | None) -> str:
    """`gcbench 0.2.0 (commit 1a2b3c4d5e6f)`, from an identity recorded anywhere."""
    if not isinstance(identity, dict) or not identity.get("version"):
        return "a gcbench that did not record its version (results written before 2026-11-24)"
    commit = identity.get("commit")
    return f"gcbench {identity['version']}" + (f" (commit {commit})" if commit else "")


def collect() -> dict:
    """Metadata of this process: interpreter, packages, machine, relevant flags."""
    import gc

    return {
        "gcbench": gcbench_identity(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "packages": package_versions(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "hostname": socket.gethostname(),
        "gc_thresholds": list(gc.get_threshold()),
        "env": {k: os.environ[k] for k in ENV_FLAGS if k in os.environ},
        "date": timestamp(),
    }


def jax_devices() -> dict:
    """The JAX default backend and devices; call only where jax is already imported."""
    import jax

    devices = jax.devices()
    return {"jax_backend": jax.default_backend(), "devices": [str(d) for d in devices],
            "device_kinds": list(dict.fromkeys(d.device_kind for d in devices))}  # "NVIDIA H100 80GB HBM3"


def load_average() -> float | None:
    """The 1-minute load average, where the OS reports one."""
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


def cpu_mhz() -> float | None:
    """The mean current frequency of the CPUs in MHz, where the OS reports it."""
    freqs = []
    for path in sorted(pathlib.Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            with open(path) as f:
                freqs.append(int(f.read().strip()) / 1000)
        except (OSError, ValueError):
            pass
    if not freqs:
        try:
            with open("/proc/cpuinfo") as f:
                freqs = [float(line.split(":", 1)[1]) for line in f if line.startswith("cpu MHz")]
        except (OSError, ValueError):
            return None
    return round(sum(freqs) / len(freqs), 1) if freqs else None


def gpu_model(meta: Mapping[str, Any]) -> str | None:
    """The accelerator a result ran on ("NVIDIA H100 80GB HBM3"), None on a CPU; results
    written before gcbench recorded device kinds say only "gpu"."""
    backend = meta.get("jax_backend")
    if backend in (None, "cpu"):
        return None
    return ", ".join(meta.get("device_kinds") or []) or backend


def machine_identity(meta: Mapping[str, Any]) -> dict:
    """What must match for two results to come from comparable machines: the CPU model,
    its core count, the JAX devices and the GPU model (not the host name, which containers
    and clusters change)."""
    return {"cpu": meta.get("cpu"), "cpu_count": meta.get("cpu_count"), "machine": meta.get("machine"),
            "devices": meta.get("devices"), "gpu": gpu_model(meta)}


def node_type(meta: Mapping[str, Any]) -> str | None:
    """A machine identity as a reader names it: `AMD EPYC x2` or `Intel Xeon x16, NVIDIA H100
    80GB HBM3`; None where the result records no machine (a cell that did not run)."""
    if not meta.get("cpu"):
        return None
    gpu = gpu_model(meta)
    devices = meta.get("devices") or []
    gpus = f", {len(devices)} x {gpu}" if gpu and len(devices) > 1 else f", {gpu}" if gpu else ""
    return f"{meta['cpu']} x{meta.get('cpu_count') or '?'}{gpus}"
