"""The version of gcbench (one place: pyproject reads it, `--version` and every result name it)."""

__version__ = "0.3.0"
