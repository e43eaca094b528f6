"""Checks of plain values that import nothing: what a name may be, what counts as an
integer. `gcbench.measure` checks its arguments with these before the loop, so they load
nothing into the heap whose schedule it measures."""

from __future__ import annotations

import re

# What a suite, a user loop or a variant may be called (a file name, and a label's part).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def is_int(value) -> bool:
    """An integer that is not a bool (JSON and TOML give both)."""
    return isinstance(value, int) and not isinstance(value, bool)


# the folder `m.save()` writes into when given none: `gcbench run --script` sets it for each run
RESULTS_ENV = "GCBENCH_RESULTS"
