"""Reading julia/ without Julia: parse with tree-sitter-julia, list function definitions."""

from __future__ import annotations

import dataclasses
import pathlib

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
