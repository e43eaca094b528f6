"""Where gcbench keeps things of its own outside a project: the user cache."""

from __future__ import annotations

import os
import pathlib


def user_cache(*parts: str) -> pathlib.Path:
    """A folder in the user cache: `$XDG_CACHE_HOME/gcbench/...` (default `~/.cache/gcbench/...`)."""
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base, "gcbench", *parts)
