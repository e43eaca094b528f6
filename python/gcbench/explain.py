"""`gcbench explain`: where the collector's work comes from (being written)."""

from __future__ import annotations

FILE = "explain.json"


def load(folder):
    return None
