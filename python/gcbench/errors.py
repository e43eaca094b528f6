"""The one exception type for mistakes a user can fix.

The CLI turns a `UsageError` into a one-line message and exit code 2; anything else
is a bug in gcbench and keeps its traceback.
"""


class UsageError(Exception):
    """Bad input from the user: an unknown name, a bad number, a corrupt file."""
