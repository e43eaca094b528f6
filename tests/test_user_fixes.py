"""The fixes users make (issue 64), end to end: five loops of the shape public threads
reported, each as its bug and its fix, under `gcbench.measure` in fresh processes, through
the documented gate both ways (benchmarks/user_fixes.py): every fix passes it against its
bug, every bug fails it against its fix, and a fix that buys memory with collections is
said as a trade."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.e2e
def test_every_fix_passes_the_gate_its_bug_fails(tmp_path):
    out = tmp_path / "fixes.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "user_fixes.py"), "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    rows = {r["pattern"]: r for r in json.loads(out.read_text())}
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert set(rows) == {"loader", "server", "collects", "islands", "workers"}
    for name, row in rows.items():
        assert row["fix"]["fired"] == [], (name, row)
        assert row["bug"]["fired"], (name, row)
    # the freeze fixes: the same collections, a fraction of the objects examined
    assert rows["loader"]["bug"]["fired"] == ["more GC work"]
    assert "less GC work" in rows["loader"]["fix"]["summary"]
    assert "more GC work" in rows["server"]["bug"]["fired"]
    # the fixes that collect more to keep less: a trade, and the bug keeps what the fix frees
    for name in ("islands", "workers"):
        assert "a trade, more full GCs for less" in rows[name]["fix"]["summary"], rows[name]
        assert "more retained" in rows[name]["bug"]["fired"], rows[name]
    assert {"more collections", "more GC work"} <= set(rows["collects"]["bug"]["fired"])
