"""The package's shape: every module sits above what it uses (no import cycle, counting
imports inside functions too), so that each can be read and tested from the bottom up."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "python" / "gcbench"


def import_graph() -> dict[str, set[str]]:
    """gcbench's modules and the gcbench modules each imports (anywhere in the file);
    a package's own `__init__` counts only where it is imported by name."""
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    t = f"{target}.{alias.name}" if f"{target}.{alias.name}" in mods else target
                    if t in mods and t != m:
                        edges[m].add(t)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, done = [], set()

    def visit(u, path):
        for v in sorted(edges[u]):
            if v in path:
                found.append(path[path.index(v):] + [v])
            elif v not in done:
                done.add(v)
                visit(v, path + [v])

    for m in sorted(edges):
        visit(m, [m])
    return found


def test_no_module_imports_a_module_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert len(import_graph()) > 30 and "gcbench.child" in import_graph()
