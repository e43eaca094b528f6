"""A tiny document model rendered two ways: Markdown (index.md, images beside it) and
self-contained HTML (index.html, images embedded as data URIs). One list of blocks is
the single source of the report's content."""

from __future__ import annotations

import base64
import dataclasses
import html
import pathlib


@dataclasses.dataclass
class Heading:
    text: str
    level: int = 2


@dataclasses.dataclass
class Para:
    text: str


@dataclasses.dataclass
class Bullets:
    items: list[str]


@dataclasses.dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    align_right: tuple[int, ...] = ()  # column indices of numbers


@dataclasses.dataclass
class Image:
    path: pathlib.Path  # a PNG beside the documents
    alt: str


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list) -> str:
    out = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            align = ["---:" if i in b.align_right else "---" for i in range(len(b.header))]
            lines = ["| " + " | ".join(map(_md_cell, b.header)) + " |", "| " + " | ".join(align) + " |"]
            lines += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, Image):
            out.append(f"![{b.alt}]({b.path.name})")
        else:
            raise TypeError(f"unknown block {b!r}")
    return "\n\n".join(out) + "\n"


def _inline(text: str) -> str:
    """Escape, then render `code` spans (the only inline markup the report uses)."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:72rem;margin:1rem auto;padding:0 1rem;
color:#1b1b1b;line-height:1.45}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.25rem .5rem;white-space:nowrap}th{background:#f2f2f2}
td.num{text-align:right;font-variant-numeric:tabular-nums}img{max-width:100%;height:auto;border:1px solid #eee}
code{background:#f4f4f4;padding:0 .2rem}
"""


def to_html(blocks: list, title: str) -> str:
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"]
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{_inline(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            head = "".join(f"<th>{_inline(h)}</th>" for h in b.header)
            rows = "".join(
                "<tr>" + "".join(f"<td class=\"num\">{_inline(c)}</td>" if i in b.align_right else f"<td>{_inline(c)}</td>"
                                 for i, c in enumerate(row)) + "</tr>" for row in b.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(b, Image):
            data = base64.b64encode(b.path.read_bytes()).decode()
            out.append(f"<p><img alt=\"{html.escape(b.alt)}\" src=\"data:image/png;base64,{data}\"></p>")
        else:
            raise TypeError(f"unknown block {b!r}")
    out.append("</body></html>")
    return "\n".join(out)
