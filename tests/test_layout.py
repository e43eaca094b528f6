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


ENTRY = re.compile(r"^( *)([A-Za-z_][A-Za-z0-9_]*(?:/|\.py))(?= |$)")


def _contexts(tree: str) -> dict[str, set[str]]:
    """The drawing's words by the folder they are drawn in ("" for the package's top): an
    entry line (`  measuring/`, `  cli.py`) and the lines continuing it belong to the
    folder the entry is (a folder) or is in (a module), by its indentation."""
    out: dict[str, set[str]] = {}
    folders: list[tuple[int, str]] = []  # (indentation, path) of the folders open above
    context = ""
    for line in tree.splitlines():
        m = ENTRY.match(line)
        if m and m.group(2) != "gcbench/":
            indent, name = len(m.group(1)), m.group(2)
            while folders and folders[-1][0] >= indent:
                folders.pop()
            parent = folders[-1][1] if folders else ""
            if name.endswith("/"):
                context = parent + name
                folders.append((indent, context))
                out.setdefault(parent, set()).add(name)  # a folder is drawn in its parent too
            else:
                context = parent
        out.setdefault(context, set()).update(w.removesuffix(".py") for w in _words(line))
    return out


def _misplaced(package: pathlib.Path) -> list[str]:
    """Modules and folders the drawing names only under another folder than their own."""
    contexts = _contexts(_tree())
    wrong = []
    for path in package.rglob("*"):
        if "__pycache__" in path.parts or path.name.startswith(".") or path.name == "__init__.py":
            continue
        if path.is_dir() or path.suffix == ".py":
            rel = path.relative_to(package)
            parent = "".join(f"{p}/" for p in rel.parts[:-1])
            name = path.name + "/" if path.is_dir() else path.stem
            if name not in contexts.get(parent, set()):
                wrong.append(str(rel))
    return sorted(wrong)


def _shared_names(package: pathlib.Path) -> list[str]:
    stems: dict[str, list[str]] = {}
    for path in package.rglob("*.py"):
        if "__pycache__" not in path.parts and path.stem not in ("__init__", "__main__"):
            stems.setdefault(path.stem, []).append(str(path.relative_to(package)))
    return sorted(" and ".join(paths) for paths in stems.values() if len(paths) > 1)


def test_no_two_modules_share_a_name():
    """Issue 68, item 4: a module is named after what it holds, once (a second `share.py`
    passed while the drawing's check went by words)."""
    shared = _shared_names(PACKAGE)
    assert not shared, shared


def test_every_module_is_drawn_under_its_own_folder():
    wrong = _misplaced(PACKAGE)
    assert not wrong, f"docs/layout.md does not name these under their own folder: {wrong}"


def test_the_checks_see_a_second_name_and_a_module_drawn_elsewhere(tmp_path):
    """A module named like another fails the name check, though the drawing names the word;
    a module whose name the drawing gives only under another folder fails the placement check."""
    import shutil

    copy = tmp_path / "gcbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _shared_names(copy) == []
    assert _misplaced(copy) == []
    (copy / "running" / "probe.py").write_text('"""x"""\n')  # `probe` is drawn, under measuring/
    assert _shared_names(copy) == ["measuring/probe.py and running/probe.py"]
    assert _misplaced(copy) == ["running/probe.py"]
