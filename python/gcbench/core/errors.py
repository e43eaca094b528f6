"""The one exception type for mistakes a user can fix.

The CLI turns a `UsageError` into a one-line message and exit code 2; anything else
is a bug in gcbench and keeps its traceback.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's own flag: `gcbench.measure` imports this before the loop it measures
if TYPE_CHECKING:
    from collections.abc import Callable

# around an option's name in a message: this process's own, so that no text a message quotes
# (a path, a name read from a file) can pose as one
_OPTION = f"\0{os.urandom(4).hex()}\0"


def option(name: str) -> str:
    """The option `name` (a field of a flow's options: `out`, `resume`, `batch_size`) inside
    a `UsageError`'s text: a command words it as its flag (`--out`), a library caller reads
    the option's name. Flows name options so; only commands know flags."""
    return f"{_OPTION}{name}{_OPTION}"


class UsageError(Exception):
    """Bad input from the user: an unknown name, a bad number, a corrupt file."""

    def worded(self, name_option: Callable[[str], str]) -> str:
        """The message with each `option(...)` in it named by `name_option` (a command: its flag)."""
        parts = str(self.args[0] if self.args else "").split(_OPTION)
        return "".join(name_option(part) if i % 2 else part for i, part in enumerate(parts))

    def __str__(self) -> str:  # as a library caller reads it: options by their names
        return self.worded(lambda name: f"`{name}`")


def is_interrupt(exc: object) -> bool:
    """An exception that stops a program rather than reports a fault (KeyboardInterrupt, a
    timeout's signal: a BaseException that is not an Exception)."""
    return isinstance(exc, BaseException) and not isinstance(exc, Exception)


def printable(text) -> str:
    """`text` safe to print on a terminal: control characters (a newline, an escape sequence
    in a folder's name) shown escaped, so that one message stays one line."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def did_you_mean(name: str, names, synonyms: dict[str, str] | None = None) -> str:
    """` (did you mean 'nnx'?)` for a name close to one of `names`, or one `synonyms` maps
    to one of them (`off` for `disable`), else ``."""
    import difflib

    if synonyms and str(name).lower() in synonyms:
        return f" (did you mean {synonyms[str(name).lower()]!r}?)"
    close = difflib.get_close_matches(str(name), [str(n) for n in names], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def keywords(function) -> list[str]:
    """The keyword arguments `function` names in its signature (its `**unknown` left out): what
    a misspelt one is matched against."""
    import inspect

    return [k for k, p in inspect.signature(function).parameters.items() if p.kind is not p.VAR_KEYWORD]


