"""The `gcbench` command line: a thin dispatcher. Each command lives in its own module
under `gcbench.commands` (`register(sub)` adds its parser, `main(args)` parses and
validates its arguments and calls a flow of `gcbench.flows`)."""

from __future__ import annotations

import argparse
import errno
import importlib
import signal
import sys
import threading

from .core import files, metadata
from .core.errors import UsageError, did_you_mean, printable

COMMANDS = ("list", "run", "status", "report", "compare", "export", "explain", "reproduce", "memory", "bisect", "envs",
            "julia_setup", "data")
# Each command's one line in `gcbench --help`, so that the top-level help and --version load
# no command module (they import numpy and scipy: 0.65 s quiet, 6.6 s under load).
# tests/test_cli.py checks that each is the command's own help.
HELP = {
    "list": "backends (and whether they are available), workloads, GC policies",
    "run": "run a suite: one worker process per repeat of each cell",
    "status": "what a results folder holds against its plan (and its SLURM jobs)",
    "report": "statistics, plots and a publishable report of a results folder",
    "compare": "per cell: is B faster, slower, the same as A, or is it inconclusive",
    "export": "results as CSV or JSON: one row per step (or per cell, --per cell)",
    "explain": "where the collector's work comes from: promotions, scans, cycles",
    "reproduce": "the seed reports' cases (equinox-spikes, flux-many-small, gather-memory) next to their published "
                 "figures",
    "memory": "memory of compiled programs: gather gradients and training steps",
    "bisect": "one cell across versions of a package, each in its own environment",
    "envs": "the virtual environments gcbench built for --env (list, or clear them)",
    "julia-setup": "let juliacall install Julia and the Julia packages (online, once)",
    "data": "where MNIST is found; download it",
}

# Each command's `--help` ends with two examples and its exit statuses (one place for both;
# tests/test_cli.py holds every command to them).
EXAMPLES = {
    "list": ("gcbench list", "gcbench list --json"),
    "run": ("gcbench run --quick --report", "gcbench run --backends jax,nnx --workloads vit --gc default,disable"),
    "status": ("gcbench status results/demo", "gcbench status results/demo --json"),
    "report": ("gcbench report results/demo", "gcbench report results/demo --out reports/demo --title 'My run'"),
    "compare": ("gcbench compare results/base results/head",
                "gcbench compare results/base results/head --fail-on slower-run,more-full-gc"),
    "export": ("gcbench export results/demo --out steps.csv", "gcbench export results/demo --per cell --json"),
    "explain": ("gcbench explain equinox-filter/vit/default --batch-size 8",
                "gcbench explain nnx/vit/default --no-sites --json"),
    "reproduce": ("gcbench reproduce", "gcbench reproduce --only equinox-spikes --repeats 5"),
    "memory": ("gcbench memory", "gcbench memory --size seed"),
    "bisect": ("gcbench bisect --package equinox --versions 0.13.2,0.13.8 --cell equinox-filter/vit/default",
               "gcbench bisect --git ~/src/equinox --good v0.13.2 --bad v0.13.3 --cell equinox-filter/vit/default"),
    "envs": ("gcbench envs list", "gcbench envs clear"),
    "julia-setup": ("gcbench julia-setup", "PYTHON_JULIAPKG_EXE=$(which julia) gcbench julia-setup"),
    "data": ("gcbench data info", "gcbench data download"),
}
# the statuses a command has besides these: 0 done; 2 a usage error (one line, no traceback);
# 130 interrupted (Ctrl-C), 143 terminated (what ran is kept)
EXIT_ONE = {
    "run": "a run failed, or nothing was measured",
    "compare": "a verdict --fail-on names",
    "reproduce": "a run failed",
    "explain": "the diagnostic run failed",
    "bisect": "a run failed",
    "julia-setup": "Julia or its packages could not be installed",
}


def epilog(command: str) -> str:
    """The examples and exit statuses `command --help` ends with."""
    lines = ["examples:", *(f"  {example}" for example in EXAMPLES[command]), "", "exit status:", "  0    done"]
    if command in EXIT_ONE:
        lines.append(f"  1    {EXIT_ONE[command]}")
    lines += ["  2    a usage error: one line, no traceback", "  130  interrupted (Ctrl-C); 143 terminated: what ran "
              "is kept"]
    return "\n".join(lines)


class _Help(argparse.HelpFormatter):
    """Help that gives each option's default, where it has one and its line does not say it;
    the epilog (examples, exit statuses) as written."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line for line in text.splitlines(keepends=True))

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or not action.option_strings or action.default in (None, False, argparse.SUPPRESS, ()):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message):  # one line and exit code 2, as for every other usage error
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        hint = did_you_mean(m.group(1), re.findall(r"'([^']*)'", m.group(2))) if m else ""
        raise UsageError(f"{message}{hint} (see {self.prog} --help)")


class _Version(argparse.Action):
    """`--version`: this gcbench's version and, from a git checkout, its commit (asked of git
    only when the option is given)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print gcbench's version (and commit, from a git checkout) and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(metadata.describe_gcbench(metadata.gcbench_identity()))
        parser.exit()


def build_parser(only: str | None = None, lazy: bool = False) -> argparse.ArgumentParser:
    """The command line's parser: every command's (`lazy=False`), or with `lazy=True` only
    the command `only` loaded and the others named by their line of help."""
    p = _Parser(prog="gcbench", description="How much of a training step goes to the garbage collector.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        command = name.replace("_", "-")
        if lazy and command != only:
            sub.add_parser(command, help=HELP[command], add_help=False)  # never chosen: `only` is the one given
        else:
            importlib.import_module(f".commands.{name}", __package__).register(sub)
            sub.choices[command].epilog = epilog(command)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The command the arguments name: the first that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


class Terminated(BaseException):
    """SIGTERM, raised where the process is, so that temporary folders and locks are
    cleaned up on the way out as they are for Ctrl-C."""


def _terminate(signum, frame):
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """The command line: the command's exit status. A Ctrl-C that lands in a callback CPython
    runs for itself (an import lock's weakref callback while a command module loads, seen on a
    loaded machine) is not raised there: CPython prints it as an ignored exception and goes
    on. It is kept from the screen and said once, as gcbench's own line, when the command
    ends, with the exit status of an interrupt."""
    swallowed: list[str] = []
    previous = sys.unraisablehook

    def unraisable(info) -> None:
        if isinstance(info.exc_value, KeyboardInterrupt):
            swallowed.append(getattr(info.object, "__qualname__", "") or "a callback")
        else:
            previous(info)

    sys.unraisablehook = unraisable
    from .core import files

    files.PAUSE_COLLECTOR[0] = True  # gcbench's own process: its collector pauses while it parses JSON
    try:
        code = _main(argv)
    finally:
        sys.unraisablehook = previous
        files.PAUSE_COLLECTOR[0] = False
    if swallowed and code not in (130, 143):
        print("\ngcbench: interrupted", file=sys.stderr)
        code = 130
    if code in (130, 143):  # an interrupt can land between a temporary folder's creation and its cleanup's
        files.remove_own_temps()
    return code


def flag(option: str) -> str:
    """The command-line flag of a flow's option (`batch_size`: `--batch-size`), as errors name it."""
    return "--" + option.replace("_", "-")


def _exit_code(e: BaseException) -> int | None:
    """The exit status of an error the command line ends on with one line (a file name
    longer than the file system takes: 2) or a signal's; None for any other (a bug: its
    traceback is shown). Any other OSError is such a bug, whatever interrupt it came with."""
    if isinstance(e, OSError):
        if e.errno != errno.ENAMETOOLONG:
            return None
        print(f"gcbench: error: {e.filename or ''}: a file name longer than the file system takes", file=sys.stderr)
        return 2
    return _signalled(e)


def _main(argv: list[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path or title that is not UTF-8 is shown, not a crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    previous = signal.signal(signal.SIGTERM, _terminate) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        args = _parse(sys.argv[1:] if argv is None else list(argv))
        return args.main(args)
    except UsageError as e:
        print(f"gcbench: error: {printable(e.worded(flag))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except (KeyboardInterrupt, Terminated) as e:
        print(f"\ngcbench: {'terminated' if isinstance(e, Terminated) else 'interrupted'}", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
    except BaseException as e:
        code = _exit_code(e)
        if code is None:
            raise
        return code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _parse(argv: list[str]) -> argparse.Namespace:
    """The command line, parsed by its command's parser (loaded alone); `--out` checked."""
    args = build_parser(_command_of(argv), lazy=True).parse_args(argv)
    if getattr(args, "out", None) is not None and not args.out.strip():  # not the default, which is left out
        raise UsageError("--out '' names no folder: give one, or leave --out out for the default")
    if getattr(args, "out", None):
        files.check_path(args.out, "--out")
    args.argv = argv
    return args


def _signalled(e: BaseException) -> int | None:
    """The exit code of an error that a signal caused (an interrupt turned into another
    error, or a flow's `running.runner.Interrupted`), said in one line; None for any other."""
    code = getattr(e, "exit_code", None)
    if isinstance(e, Exception) and _from_an_interrupt(e):
        print("\ngcbench: interrupted", file=sys.stderr)
        return 130
    if not isinstance(code, int) or code <= 128:
        return None
    print(f"\ngcbench: {'terminated' if code == 143 else 'interrupted'}", file=sys.stderr)
    return code


def _from_an_interrupt(e: BaseException) -> bool:
    """Whether `e` was caused by a Ctrl-C: an interrupt that lands while an extension module
    initializes, or in a class body's `__set_name__`, comes out as the ImportError or
    RuntimeError it caused (numpy's and scipy's, seen on a loaded machine)."""
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
