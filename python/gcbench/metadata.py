"""Facts about the machine and the software a result was measured with."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import socket
import sys

PACKAGES = ("numpy", "jax", "jaxlib", "optax", "equinox", "flax", "juliacall")
ENV_FLAGS = ("XLA_FLAGS", "JAX_PLATFORMS", "JAX_ENABLE_X64", "PYTHONGC", "OMP_NUM_THREADS",
             "PYTHON_JULIACALL_THREADS", "PYTHON_JULIACALL_HANDLE_SIGNALS")


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
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def collect() -> dict:
    """Metadata of this process: interpreter, packages, machine, relevant flags."""
    import gc

    return {
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
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def jax_devices() -> dict:
    """The JAX default backend and devices; call only where jax is already imported."""
    import jax

    return {"jax_backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()]}
