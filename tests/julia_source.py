"""Reading julia/ without Julia: parse with tree-sitter-julia, list function definitions."""

from __future__ import annotations

import dataclasses
import pathlib
import re

import tree_sitter as ts
import tree_sitter_julia as tsj

JULIA_DIR = pathlib.Path(__file__).resolve().parent.parent / "julia"
_PARSER = ts.Parser(ts.Language(tsj.language()))
_PUNCT = {"(", ")", ","}


@dataclasses.dataclass(frozen=True)
class Definition:
    name: str
    required: int  # positional arguments without defaults
    optional: int  # positional arguments with defaults
    file: str

    def accepts(self, n: int) -> bool:
        return self.required <= n <= self.required + self.optional


def parse(path: pathlib.Path):
    return _PARSER.parse(path.read_bytes())


def _signature_call(node):
    """The call_expression `name(args...)` of a definition's signature, or None."""
    while node is not None and node.type in ("signature", "where_expression", "typed_expression"):
        node = node.children[0] if node.children else None
    return node if node is not None and node.type == "call_expression" else None


def _definition(call, file: str) -> Definition | None:
    name_node, args = call.children[0], call.children[-1]
    if name_node.type != "identifier" or args.type != "argument_list":
        return None
    required = optional = 0
    for child in args.children:
        if child.type == ";":
            break  # keyword arguments follow
        if child.type in _PUNCT:
            continue
        if child.type == "named_argument":
            optional += 1
        else:
            required += 1
    return Definition(name_node.text.decode(), required, optional, file)


def definitions(directory: pathlib.Path = JULIA_DIR) -> list[Definition]:
    """Every function defined in the .jl files of `directory` (long and short form)."""
    out = []
    for path in sorted(directory.glob("*.jl")):
        stack = [parse(path).root_node]
        while stack:
            node = stack.pop()
            call = None
            if node.type == "function_definition":
                call = _signature_call(next((c for c in node.children if c.type == "signature"), None))
            elif node.type == "assignment" and node.children and node.children[0].type == "call_expression":
                call = node.children[0]
            if call is not None and (d := _definition(call, path.name)):
                out.append(d)
            stack.extend(node.children)
    return out


def returned_keys(name: str, directory: pathlib.Path = JULIA_DIR) -> list[set[str]]:
    """The string keys (`"k" => v`) of each `return` statement in the functions `name`
    defines in directory's .jl files, one set per return."""
    out = []
    for path in sorted(directory.glob("*.jl")):
        stack = [parse(path).root_node]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            if node.type != "function_definition":
                continue
            call = _signature_call(next((c for c in node.children if c.type == "signature"), None))
            if call is None or _callee(call) != name:
                continue
            inner = list(node.children)
            while inner:
                n = inner.pop()
                if n.type == "return_statement":
                    out.append(set(re.findall(r'"(\w+)"\s*=>', n.text.decode())))
                else:
                    inner.extend(n.children)
    return out


def _callee(call) -> str | None:
    """The name a call_expression calls: `f(...)` and `Mod.f(...)` give "f"."""
    head = call.children[0] if call.children else None
    while head is not None and head.type == "field_expression":
        head = head.children[-1]
    return head.text.decode() if head is not None and head.type == "identifier" else None


def calls_in(node) -> list[str]:
    """Names of every function called inside `node` (calls through `Base.invokelatest(f, ...)`
    are listed as "invokelatest", not as f)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression" and (name := _callee(n)):
            out.append(name)
        stack.extend(n.children)
    return out


def world_age_problems(source: bytes, loader: str = "load_framework") -> list[str]:
    """Places where code calls what `loader` defines in the same world as the `include`
    that defines it (Julia manual, "Redefining Methods"): `loader` called inside a
    function, or in a top-level statement that also calls something else."""
    root = _PARSER.parse(source).root_node
    problems = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("function_definition", "short_function_definition") or (
                n.type == "assignment" and n.children and n.children[0].type == "call_expression"):
            if loader in calls_in(n):
                problems.append(f"line {n.start_point[0] + 1}: a function calls {loader}")
                continue
        stack.extend(n.children)
    for statement in root.children:
        if statement.type in ("function_definition", "short_function_definition"):
            continue  # judged above
        names = calls_in(statement)
        if loader in names and set(names) - {loader}:
            problems.append(f"line {statement.start_point[0] + 1}: {loader} and {sorted(set(names) - {loader})} "
                            "in one top-level statement")
    return problems
