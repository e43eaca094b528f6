"""The `gcbench` command line: a thin dispatcher. Each command lives in its own module
under `gcbench.commands` (`register(sub)` adds its parser, `main(args)` runs it)."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import UsageError

COMMANDS = ("list", "run", "report", "compare", "export", "explain", "reproduce", "memory", "bisect", "envs",
            "julia_setup", "data")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, as for every other usage error
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gcbench", description="How much of a training step goes to the garbage collector.")
    p.add_argument("--version", action="version", version=f"gcbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser().parse_args(argv)
        args.argv = argv
        return args.main(args)
    except UsageError as e:
        print(f"gcbench: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
