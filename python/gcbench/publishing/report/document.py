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

from ...core.version import __version__


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
    alt: str  # what the figure shows, in a few words (plain text)
    caption: str = ""  # how to read it (Markdown, already escaped); numbered "Figure N." when written


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")  # what changes meaning inside a line
# what starts a block where a line begins with it: a heading, a list item, a rule or fence
_MD_LEADING = re.compile(r"^(\s*)(?:(#{1,6}(?=\s|$)|[-+](?=\s+\S))|(-{3,}|={3,}|~{3,})|(\d{1,9})([.)])(?=\s+\S))")


def escape(text) -> str:
    """Text taken from results, safe in Markdown and in the HTML rendered from it."""
    text = html.escape(str(text), quote=False)  # & < >
    text = _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ").replace("\r", " ")
    return _MD_LEADING.sub(_escape_leading, text)


def _escape_leading(m: re.Match) -> str:
    if m.group(4):  # `1.` starts an ordered list: the punctuation is what is escaped
        return f"{m.group(1)}{m.group(4)}\\{m.group(5)}"
    return f"{m.group(1)}\\{m.group(2) or m.group(3)}"


def natural_key(text: str) -> list:
    """A sort key under which `py3.10` follows `py3.9` and `equinox==0.13.10` follows `0.13.9`."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text)]


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


def plain(markdown_text: str) -> str:
    """The text a reader sees of a line of gcbench's own Markdown (escapes and code marks gone)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", markdown_text).replace("`", ""))


def slug(text: str, seen: dict[str, int]) -> str:
    """The anchor GitHub gives a heading (lower case, punctuation dropped, spaces as '-',
    '-1', '-2' after repeats), so that the contents list links on GitHub and in the HTML."""
    base = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}-{n}"


def contents(blocks: list) -> list:
    """`blocks` with a contents line (every section: level-2 headings) after the first
    section (the verdict and its headline: the first screen is the answer, not a list)."""
    seen: dict[str, int] = {}
    anchors = [(b, slug(plain(b.text), seen)) for b in blocks if isinstance(b, Heading)]
    items = [f"[{b.text}](#{a})" for b, a in anchors if b.level == 2]
    sections = [i for i, b in enumerate(blocks) if isinstance(b, Heading) and b.level == 2]
    if len(items) < 3:
        return blocks
    second = sections[1]
    return [*blocks[:second], Para("**Contents:** " + " · ".join(items)), *blocks[second:]]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _markdown_table(b: Table) -> str:
    """A table in Markdown, its right-aligned columns marked."""
    align = ["---:" if i in b.align_right else "---" for i in range(len(b.header))]
    lines = ["| " + " | ".join(map(_cell, b.header)) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in b.rows]
    return "\n".join(lines)


def _markdown_image(b: Image, figure: int) -> list[str]:
    """A picture, linked to itself, and its numbered caption."""
    name = urllib.parse.quote(b.path.name)
    return [f"[![{escape(b.alt)}]({name})]({name})",
            f"*Figure {figure}.* {escape(b.alt)}" + (f". {b.caption}" if b.caption else "")]


def to_markdown(blocks: list) -> str:
    out = []
    figure = 0
    for b in contents(blocks):
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            out.append(_markdown_table(b))
        elif isinstance(b, Image):
            figure += 1
            out += _markdown_image(b, figure)
        else:
            raise TypeError(f"unknown block {b!r}")
    return "\n\n".join(out) + "\n"


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:86rem;margin:1rem auto;padding:0 1rem;
color:#1b1b1b;line-height:1.45}
.table-wrap{overflow-x:auto;margin:.6rem 0;max-width:100%}
table{border-collapse:separate;border-spacing:0;font-size:.85rem}
th,td{border-bottom:1px solid #ddd;border-right:1px solid #eee;padding:.25rem .45rem;background:#fff;
vertical-align:top;max-width:24rem;overflow-wrap:break-word}
th{background:#f2f2f2;position:sticky;top:0;text-align:left;font-weight:600}
td[style*="right"]{white-space:nowrap;font-variant-numeric:tabular-nums}
th:first-child,td:first-child{position:sticky;left:0;z-index:1;border-right:1px solid #ccc;max-width:16rem}
th:first-child{background:#f2f2f2;z-index:2}
img{max-width:100%;height:auto;border:1px solid #eee;display:block}
.figure{display:block;overflow-x:auto;max-width:100%}
p.caption{margin:.2rem 0 1.6rem;font-size:.9rem;color:#444;max-width:60rem}
code{background:#f4f4f4;padding:0 .2rem;overflow-wrap:anywhere}
@media (max-width:900px){table{font-size:.8rem}th:first-child,td:first-child{max-width:11rem}}
"""


def _renderer(folder: pathlib.Path) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(self, tokens, idx, options, env):
        token = tokens[idx]
        src = token.attrGet("src") or ""
        alt = html.escape(self.renderInlineAsText(token.children or [], options, env))
        path = folder / src
        if "/" in src or not src.endswith(".png") or not path.is_file():
            return f'<span class="missing-image">[{alt}]</span>'
        data = base64.b64encode(path.read_bytes()).decode()
        return f'<span class="figure"><img alt="{alt}" src="data:image/png;base64,{data}"></span>'

    def anchors_and_captions(state):
        """Headings get GitHub's anchors (the contents list links to them); a paragraph that
        starts "*Figure N.*" is a caption."""
        seen: dict[str, int] = {}
        tokens = state.tokens
        for i, token in enumerate(tokens[:-1]):
            inline = tokens[i + 1]
            if token.type == "heading_open":
                text = "".join(t.content for t in inline.children or [] if t.type in ("text", "code_inline"))
                token.attrSet("id", slug(text, seen))
            elif token.type == "paragraph_open" and re.match(r"\*Figure \d+\.\*", inline.content or ""):
                token.attrSet("class", "caption")

    md.add_render_rule("image", image)
    md.core.ruler.push("gcbench_anchors_and_captions", anchors_and_captions)
    return md


def to_html(markdown: str, title: str, folder: pathlib.Path) -> str:
    """`markdown` as one self-contained HTML page (images from `folder` embedded)."""
    body = _renderer(folder).render(markdown)
    body = body.replace("<table>", '<div class="table-wrap"><table>').replace("</table>", "</table></div>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="gcbench {html.escape(__version__)}">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n")
