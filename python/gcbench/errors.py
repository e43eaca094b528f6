"""The one exception type for mistakes a user can fix.

The CLI turns a `UsageError` into a one-line message and exit code 2; anything else
is a bug in gcbench and keeps its traceback.
"""


class UsageError(Exception):
    """Bad input from the user: an unknown name, a bad number, a corrupt file."""


def printable(text) -> str:
    """`text` safe to print on a terminal: control characters (a newline, an escape sequence
    in a folder's name) shown escaped, so that one message stays one line."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))
