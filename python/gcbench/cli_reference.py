"""The command reference (docs/cli.md), written from the command line's own parser so that it
cannot drift from it: every command, its usage, and each option with what it does and its
default. `python -m gcbench.cli_reference > docs/cli.md` rewrites it; tests/test_docs.py
checks that the committed page is what this writes."""

from __future__ import annotations

import argparse
import re
import sys

from . import cli

WIDTH = 96  # usage lines wrap here, whatever the terminal
_DEFAULT = re.compile(r"\s*\(default:? ([^()]*(?:\([^()]*\)[^()]*)*)\)")

HEADER = """# Command reference

Every command and option of `gcbench`, with its default where it has one. This page is
written from the command line's own parser (`python -m gcbench.cli_reference >
docs/cli.md`; the tests check that it is current), so it says what `gcbench COMMAND --help`
says.
"""


def _cell(text: str) -> str:
    """Text for a table cell: its pipes escaped, and outside `code` its angle brackets
    (`results/<suite>` is not an HTML tag)."""
    parts = re.split(r"(`[^`]*`)", text.replace("\n", " "))
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;")
                   for part in parts).replace("|", "\\|")


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _name(formatter, action: argparse.Action) -> str:
    """An option as it is written (`--steps STEPS`, each of its spellings), or an argument."""
    if not action.option_strings:
        return f"`{formatter._format_args(action, action.dest)}`"
    metavar = "" if action.nargs == 0 else " " + formatter._format_args(action, action.dest.upper())
    return ", ".join(f"`{o}{metavar}`" for o in action.option_strings)


def _rows(parser: argparse.ArgumentParser) -> list[tuple[str, str, str]]:
    """(option, what it does, default) of each argument but --help."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        name = _name(formatter, action)
        text = formatter._expand_help(action) if action.help else ""
        m = _DEFAULT.search(text)
        default = m.group(1) if m else ""
        text = text[:m.start()] + text[m.end():] if m else text
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            text += f" (one of {', '.join(map(str, action.choices))})"
        rows.append((name, text.strip(), default.strip()))
    return rows


def markdown() -> str:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = [HEADER]
    for name, command in sub.choices.items():
        out.append(f"## gcbench {name}\n")
        out.append(f"{cli.HELP[name]}.\n")
        out.append(f"```text\n{_usage(command)}\n```\n")
        rows = _rows(command)
        if rows:
            out.append("| option | what it does | default |\n|---|---|---|")
            out += [f"| {_cell(o)} | {_cell(t)} | {_cell(d)} |" for o, t, d in rows]
            out.append("")
        out.append(f"```text\n{cli.epilog(name)}\n```\n")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
