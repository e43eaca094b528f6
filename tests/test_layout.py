"""docs/layout.md is the one drawing of the package: it names every module and folder of
python/gcbench, and every name it gives as a module or folder is there."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "gcbench"


def _tree() -> str:
    """The package's part of the drawing: from `python/gcbench/` to the next top-level entry."""
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```\n", 2)[1]
    start = block.index("python/gcbench/")
    end = re.search(r"^julia/", block[start:], re.M)
    assert end is not None
    return block[start:start + end.start()]


def _words(tree: str) -> set[str]:
    # a folder is written `name/` with nothing after the slash (`docs/cli.md` is a path)
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.py|/(?![A-Za-z0-9_]))?", tree))


def _modules(package: pathlib.Path = PACKAGE) -> dict[str, pathlib.Path]:
    """Every module (by file stem) and folder (`name/`) of the package, caches left out."""
    out = {}
    for path in package.rglob("*"):
        if "__pycache__" in path.parts or path.name.startswith("."):
            continue
        if path.is_dir():
            out[path.name + "/"] = path
        elif path.suffix == ".py" and path.stem != "__init__":  # a folder's __init__ is the folder
            out[path.stem] = path
    return out


def _undrawn(package: pathlib.Path) -> list[str]:
    words = {w.removesuffix(".py") for w in _words(_tree())}
    return sorted(str(p.relative_to(package)) for name, p in _modules(package).items() if name not in words)


def test_every_module_and_folder_is_drawn():
    missing = _undrawn(PACKAGE)
    assert not missing, f"docs/layout.md does not name: {', '.join(missing)}"


def test_nothing_drawn_is_missing():
    """A name written as a file (`x.py`) or a folder (`x/`) in the drawing exists."""
    have = set(_modules()) | {"__init__"}
    drawn = [w for w in _words(_tree()) if w.endswith((".py", "/"))]
    gone = [w for w in drawn if w.removesuffix(".py") not in have and w != "gcbench/"]
    assert not gone, f"docs/layout.md names what is not in the package: {', '.join(sorted(gone))}"


def test_the_check_sees_a_module_it_was_not_told_of(tmp_path):
    """The first check fails for a module the drawing omits (so it can fail at all)."""
    import shutil

    copy = tmp_path / "gcbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _undrawn(copy) == []
    (copy / "measuring" / "new_probe.py").write_text('"""x"""\n')
    (copy / "plugins").mkdir()
    assert _undrawn(copy) == ["measuring/new_probe.py", "plugins"]
