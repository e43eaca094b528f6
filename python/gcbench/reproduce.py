"""`gcbench reproduce`: the seed reports' cases, side by side with their figures (being written)."""

from __future__ import annotations

FILE = "reproduce.json"


def load(folder):
    return None
