"""The report as a list of blocks, written once as Markdown (index.md, images beside it)
and rendered to self-contained HTML (index.html, images embedded) by markdown-it-py.

Text that comes from results (reasons, names, commands) goes through `escape` before it
enters a block: Markdown and HTML special characters become entities or escapes, so a
result cannot inject markup into either file. The HTML renderer also runs with raw HTML
off, so nothing in the Markdown reaches the page as markup of its own.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import pathlib
import re
import urllib.parse

from markdown_it import MarkdownIt


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


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")  # what changes meaning inside a line


def escape(text) -> str:
    """Text taken from results, safe in Markdown and in the HTML rendered from it."""
    text = html.escape(str(text), quote=False)  # & < >
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def code(text) -> str:
    """An inline code span of `text` (from results), whatever backticks it holds."""
    text = str(text).replace("\n", " ")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(text) -> str:
    """Text from results that may name commands in backticks (a reason, a verdict): the
    backticked parts as code spans, the rest escaped."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: all of it is plain text
        return escape(text)
    return "".join(code(p) if i % 2 and p else escape(p) for i, p in enumerate(parts))


def _cell(text: str) -> str:
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
            lines = ["| " + " | ".join(map(_cell, b.header)) + " |", "| " + " | ".join(align) + " |"]
            lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, Image):
            out.append(f"![{escape(b.alt)}]({urllib.parse.quote(b.path.name)})")
        else:
            raise TypeError(f"unknown block {b!r}")
    return "\n\n".join(out) + "\n"


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:80rem;margin:1rem auto;padding:0 1rem;
color:#1b1b1b;line-height:1.45}
.table-wrap{overflow-x:auto;margin:.6rem 0;max-width:100%}
table{border-collapse:separate;border-spacing:0;font-size:.88rem}
th,td{border-bottom:1px solid #ddd;border-right:1px solid #eee;padding:.25rem .5rem;background:#fff;
vertical-align:top;max-width:26rem}
td{min-width:3rem}
td[style*="right"]{white-space:nowrap}
th{background:#f2f2f2;position:sticky;top:0}
th:first-child,td:first-child{position:sticky;left:0;z-index:1;border-right:1px solid #ccc;min-width:min(16rem,40vw)}
td:first-child:not([style*="right"]){max-width:22rem}
th:first-child{background:#f2f2f2;z-index:2}
td[style*="right"]{font-variant-numeric:tabular-nums}
img{max-width:100%;height:auto;border:1px solid #eee}
code{background:#f4f4f4;padding:0 .2rem}
"""


def _renderer(folder: pathlib.Path) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(self, tokens, idx, options, env):
        token = tokens[idx]
        src = token.attrGet("src") or ""
        alt = html.escape(token.content or "")
        path = folder / src
        if "/" in src or not src.endswith(".png") or not path.is_file():
            return f'<span class="missing-image">[{alt}]</span>'
        data = base64.b64encode(path.read_bytes()).decode()
        return f'<img alt="{alt}" src="data:image/png;base64,{data}">'

    md.add_render_rule("image", image)
    return md


def to_html(markdown: str, title: str, folder: pathlib.Path) -> str:
    """`markdown` as one self-contained HTML page (images from `folder` embedded)."""
    body = _renderer(folder).render(markdown)
    body = body.replace("<table>", '<div class="table-wrap"><table>').replace("</table>", "</table></div>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n")
