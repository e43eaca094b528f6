"""Text that fits the terminal: its width (COLUMNS, else the terminal's, else 100), wrapped
paragraphs, and tables that drop their least useful columns, then put a long first
column on a line of its own, rather than wrap mid-row."""

from __future__ import annotations

import shutil
import textwrap

DEFAULT_WIDTH = 100


def counted(count: int, word: str) -> str:
    """`1 job`, `3 jobs`: a count and its noun, plural where it is not one."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def width() -> int:
    return max(60, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def wrap(text: str, indent: str = "", subsequent: str | None = None, columns: int | None = None) -> str:
    """`text` wrapped to the width, every line of it (a line already short enough is kept)."""
    columns = columns or width()
    sub = indent if subsequent is None else subsequent
    return "\n".join(textwrap.fill(line, columns, initial_indent=indent, subsequent_indent=sub,
                                   break_on_hyphens=False, break_long_words=True) if len(indent + line) > columns
                     else indent + line for line in text.split("\n"))


def table(head: list[str], rows: list[list[str]], left: frozenset[int] | set[int] = frozenset({0}),
          drop: tuple[int, ...] = (),
          columns: int | None = None, extra: dict[int, list[str]] | None = None) -> list[str]:
    """Lines of a table that fit `columns`: the columns in `drop` go first, in that order,
    while it is too wide; then the first column moves to a line of its own above each row.
    `extra` puts lines (already wrapped) under row i."""
    columns = columns or width()
    keep = list(range(len(head)))

    def render(cols: list[int], own_line: bool) -> list[str]:
        shown = [c for c in cols if not (own_line and c == 0)]
        widths = {c: max([len(head[c])] + [len(r[c]) for r in rows]) for c in shown}
        def line(cells):
            return "  ".join((cells[c].ljust(widths[c]) if c in left else cells[c].rjust(widths[c]))
                                               for c in shown).rstrip()
        out = [line(head), "-" * (sum(widths.values()) + 2 * (len(shown) - 1))]
        for i, r in enumerate(rows):
            if own_line:
                out.append(r[0])
            out.append(("  " if own_line else "") + line(r))
            out += (extra or {}).get(i, [])
        return out

    for c in (None, *drop):
        if c is not None and c in keep:
            keep.remove(c)
        lines = render(keep, False)
        if max(len(x) for x in lines) <= columns:
            return lines
    return render(keep, True)
