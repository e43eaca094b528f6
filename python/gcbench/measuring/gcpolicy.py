"""GC policies: what the collector may do during the timed steps.

How it works, and why: docs/internals.md, `gcbench.measuring.gcpolicy`.
"""

from __future__ import annotations

import dataclasses
import gc

from ..core.errors import UsageError, did_you_mean

NAMES = ("default", "freeze", "disable", "manual:K")


@dataclasses.dataclass(frozen=True)
class GCPolicy:
    kind: str  # default | freeze | disable | manual
    every: int = 0  # K for manual

    @property
    def name(self) -> str:
        return f"manual:{self.every}" if self.kind == "manual" else self.kind

    @property
    def slug(self) -> str:
        """The name, safe in a file name."""
        return self.name.replace(":", "-")

    def before_timed(self) -> None:
        """Called once after warm-up, right before the first timed step."""
        if self.kind == "freeze":
            gc.collect()
            gc.freeze()
        elif self.kind in ("disable", "manual"):
            gc.disable()

    def collects_after(self, i: int) -> bool:
        """Whether step `i` (0-based) ends with a manual collection."""
        return self.kind == "manual" and (i + 1) % self.every == 0

    def after_timed(self) -> None:
        """Undo what `before_timed` did."""
        if self.kind == "freeze":
            gc.unfreeze()
        gc.enable()


def parse(text: str) -> GCPolicy:
    """`default`, `freeze`, `disable` or `manual:K` with K a positive integer."""
    text = text.strip()
    if text in ("default", "freeze", "disable"):
        return GCPolicy(text)
    if text.startswith("manual:"):
        k = text.partition(":")[2]
        if k.isascii() and k.isdigit() and len(k) <= 9 and int(k) > 0:
            return GCPolicy("manual", int(k))
        raise UsageError(
            f"bad GC policy {text[:40]!r}{'...' if len(text) > 40 else ''}: manual:K needs a positive integer K, "
            "e.g. manual:100"
        )
    raise UsageError(f"unknown GC policy {text!r}{did_you_mean(text, NAMES[:-1], SYNONYMS)}; valid policies: "
                     f"{', '.join(NAMES)}")


# what people write for a policy (the collector off, on, frozen), with gcbench's name for it
SYNONYMS = {"off": "disable", "disabled": "disable", "none": "disable", "no": "disable", "false": "disable",
            "gc.disable": "disable", "on": "default", "enable": "default", "enabled": "default", "true": "default",
            "frozen": "freeze", "gc.freeze": "freeze", "manual": "manual:K"}
