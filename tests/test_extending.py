"""The successor's page is complete (issue 68, item 4): a toy backend added to a copy of
the repository by docs/extending.md's steps alone (its module and its registry entry are
the page's own code blocks) is checked by the suite with no test edited; with its buffer
donation dropped, a test fails."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "extending.md").read_text()
SECTION = PAGE.split("## A backend\n", 1)[1].split("\n## ", 1)[0]


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", SECTION, re.S | re.M)


def _follow_the_page(copy: pathlib.Path, module_text: str) -> str:
    """The page's four steps in `copy`; the new backend's name."""
    module, entry = _blocks()
    name, module_name = re.search(r'BackendInfo\("([a-z0-9-]+)", "python", "[^"]*", "([a-z0-9_]+)"', entry).groups()
    backends = copy / "python" / "gcbench" / "measuring" / "backends"
    # 1. its module
    (backends / f"{module_name}.py").write_text(module_text if module_text else module)
    # 2. its entry, in the list in BACKENDS
    registry = backends / "__init__.py"
    text = registry.read_text()
    call = entry[entry.index("BackendInfo("):].strip()
    anchor = "    for b in [\n"
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + "        " + call.replace("\n", "\n    ") + ",\n", 1))
    # 3. its pages: a row in the backends' table, its module named under backends/ in the drawing
    page = copy / "docs" / "backends.md"
    rows = page.read_text()
    first_row = re.search(r"^\| `jax` \|.*\n", rows, re.M)
    page.write_text(rows[:first_row.end()] + f"| `{name}` | {name}, as docs/extending.md adds it |\n"
                    + rows[first_row.end():])
    layout = copy / "docs" / "layout.md"
    drawing = layout.read_text()
    assert "nnx_jit, nnx_split" in drawing
    layout.write_text(drawing.replace("nnx_jit, nnx_split", f"nnx_jit, nnx_split, {module_name}", 1))
    return name


def _copy(tmp_path: pathlib.Path) -> pathlib.Path:
    copy = tmp_path / "repo"
    for part in ("python", "tests", "docs"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for file in ("pyproject.toml", "README.md", "mkdocs.yml"):
        shutil.copy(ROOT / file, copy / file)
    return copy


def _pytest(copy: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy / "python")}  # the copy's gcbench before the installed one
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", "-p", "no:randomly",
                           *args], cwd=copy, env=env, capture_output=True, text=True, timeout=900)


def test_the_page_gives_the_module_and_the_entry_and_says_what_a_backend_must_do():
    module, entry = _blocks()
    assert "def build(workload, params, data)" in module
    assert "BackendInfo(" in entry
    for must in ("reproduce `jax`'s losses", "donate its state's buffers", "compile once", "vit_promotions"):
        assert must in SECTION, must


@pytest.mark.e2e
def test_a_backend_added_by_the_page_alone_is_checked_and_a_dropped_donation_fails(tmp_path):
    copy = _copy(tmp_path)
    name = _follow_the_page(copy, "")
    selected = ["tests/test_backends.py", "tests/test_layout.py", "-k", f"{name} or registered or row or layout or "
                "drawn or share"]
    proc = _pytest(copy, *selected, "-rA")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    ran = re.findall(rf"PASSED tests/test_backends.py::test_(\w+)\[{re.escape(name)}\b", proc.stdout)
    assert {"backend_is_equivalent_to_jax", "state_buffers_are_donated"} <= set(ran), proc.stdout[-3000:]
    # the same backend, its update jitted again without donating the state
    module = _blocks()[0].replace("self.update = _jaxnn.jitted_update(loss_fn, tx, self.traces)",
                                  "self.update = jax.jit(_jaxnn.jitted_update(loss_fn, tx, self.traces).__wrapped__)")
    assert "__wrapped__" in module
    broken = _copy(tmp_path / "broken")
    _follow_the_page(broken, module)
    proc = _pytest(broken, "tests/test_backends.py", "-k", f"donated and {name}")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert re.search(rf"FAILED .*test_state_buffers_are_donated\[{re.escape(name)}\]", proc.stdout), proc.stdout[-3000:]
