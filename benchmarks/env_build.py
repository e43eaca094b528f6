"""Build time and disk use of one gcbench environment, with pip and with uv.

Each installer builds the same environment twice: cold (empty caches: everything is
downloaded) and warm (its cache filled by the first build, the environment itself
rebuilt). Disk: the environment folder as `du` counts it, and the blocks it adds beside
the installer's cache (uv links files from its cache instead of copying them).

    python benchmarks/env_build.py ["python=3.11 jax==0.8.0 equinox==0.13.8"] [--backends equinox-filter]

`--backends ""` builds the harness alone (the e2e tier's smoke size).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from gcbench.measuring import envspec
from gcbench.measuring.backends import BACKENDS
from gcbench.running import venvs


def du(*paths: pathlib.Path) -> int:
    """Bytes on disk of `paths` together, each hard-linked file counted once (du -s -c)."""
    out = subprocess.run(["du", "-s", "-c", "-B1", *map(str, paths)], capture_output=True, text=True).stdout
    return int(out.strip().splitlines()[-1].split()[0])


def build(spec: str, needed: list[str], installer: str, root: pathlib.Path) -> list[tuple[str, float, int, int]]:
    os.environ.update(XDG_CACHE_HOME=str(root / "cache"), PIP_CACHE_DIR=str(root / "cache" / "pip"),
                      GCBENCH_INSTALLER=installer)
    rows = []
    for kind in ("cold", "warm"):
        t0 = time.monotonic()
        env = venvs.ensure(envspec.parse(spec), needed, rebuild=True)
        took = time.monotonic() - t0
        caches = [p for p in (root / "cache" / "pip", root / "cache" / "gcbench" / "uv") if p.exists()]
        alone = du(env.path)
        beside = du(env.path, *caches) - (du(*caches) if caches else 0)
        rows.append((kind, took, alone, beside))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default="python=3.11 jax==0.8.0 equinox==0.13.8")
    ap.add_argument("--backends", default="equinox-filter")
    args = ap.parse_args()
    needed = sorted({m for b in args.backends.split(",") if b for m in BACKENDS[b].requires})
    print(f"environment: {args.spec}; packages of {args.backends or 'no backend (the harness only)'}: "
          f"{', '.join(needed) or '-'}")
    print(f"{'installer':<10} {'build':<6} {'seconds':>8} {'env folder MB':>14} {'added beside cache MB':>22}")
    for installer in ("pip", "uv"):
        with tempfile.TemporaryDirectory(prefix=f"gcbench-envbench-{installer}-") as d:
            for kind, took, alone, beside in build(args.spec, needed, installer, pathlib.Path(d)):
                print(f"{installer:<10} {kind:<6} {took:>8.1f} {alone / 1e6:>14.0f} {beside / 1e6:>22.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
