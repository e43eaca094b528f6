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


def did_you_mean(name: str, names) -> str:
    """` (did you mean 'nnx'?)` for a name close to one of `names`, else ``."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(n) for n in names], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
