"""Rebuild every published report from its own raw results and compare it with the
committed page, byte for byte.

    python benchmarks/rebuild_reports.py [NAME ...]

Each report folder is copied to a temporary folder and rebuilt there by `gcbench report
FOLDER` (which reads the folder's results.tar.gz); index.md and index.html must equal the
committed ones. Prints one line per report and exits 1 when any differs.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import committed  # noqa: E402

PAGES = ("index.md", "index.html")


def rebuild(folder: pathlib.Path, scratch: pathlib.Path) -> tuple[list[str], float]:
    copy = scratch / folder.name
    shutil.copytree(folder, copy)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gcbench", "report", str(copy)], cwd=scratch,
                          capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        return [f"report failed: {proc.stderr.strip().splitlines()[-1:]}"], took
    return [page for page in PAGES if (copy / page).read_bytes() != (folder / page).read_bytes()], took


def main() -> int:
    names = sys.argv[1:]
    folders = [f for f in committed.reports("results.tar.gz") if not names or f.name in names]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            differ, took = rebuild(folder, pathlib.Path(tmp))
            bad += bool(differ)
            print(f"{folder.name:34s} {'DIFFERS: ' + ', '.join(differ) if differ else 'byte for byte'} ({took:.1f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
