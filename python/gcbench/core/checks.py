"""Checks of plain values that import nothing: what a name may be, what counts as an
integer. `gcbench.measure` checks its arguments with these before the loop, so they load
nothing into the heap whose schedule it measures."""

from __future__ import annotations


def is_name(value) -> bool:
    """What a suite, a user loop or a variant may be called (a file name, and a label's
    part): 1 to 80 ASCII letters, digits, ".", "_" and "-", beginning with a letter or a
    digit. Without `re`, which with enum, functools and collections puts 1,700 objects in the
    heap of a loop `gcbench.measure` measures, where the interpreter had not loaded them (3.12)."""
    return (isinstance(value, str) and 0 < len(value) <= 80 and value.isascii() and value[0].isalnum()
            and value.replace(".", "a").replace("_", "a").replace("-", "a").isalnum())


def is_int(value) -> bool:
    """An integer that is not a bool (JSON and TOML give both)."""
    return isinstance(value, int) and not isinstance(value, bool)


# the folder `m.save()` writes into when given none: `gcbench run --script` sets it for each run
RESULTS_ENV = "GCBENCH_RESULTS"
