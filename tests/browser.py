"""Rendering a report's HTML in headless Chromium (Debian's `chromium`), for the browser
check and for screenshots to look at:

    python tests/browser.py reports/NAME/index.html shot.png [width]

`check` adds a script to a copy of the page that measures it as Chromium laid it out and
writes the measurements into the DOM as JSON (read back through `--dump-dom`): the page's
own overflow, every image (does it load, how wide is it shown), and every table (how wide
it is against the box it sits in, whether its first column stays in view when the box
scrolls, and which cells show less than their text).
"""

from __future__ import annotations

import html
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=15000"]
MEASURE = """<script>
window.addEventListener('load', () => {
  const doc = document.documentElement;
  const imgs = [...document.images].map(i => ({
    alt: i.alt, loaded: i.complete && i.naturalWidth > 0, natural: i.naturalWidth, shown: i.clientWidth,
    right: Math.round(i.getBoundingClientRect().right),
    linked: !!(i.closest('a') && i.closest('a').getAttribute('href'))}));
  const tables = [...document.querySelectorAll('table')].map((t, k) => {
    const box = t.parentElement;
    const first = t.querySelector('tr > :first-child');
    const scrolls = t.scrollWidth > box.clientWidth + 1;
    let stays = true;
    if (scrolls && first) {
      const before = first.getBoundingClientRect().left;
      box.scrollLeft = box.scrollWidth;
      stays = Math.abs(first.getBoundingClientRect().left - before) < 1;
      box.scrollLeft = 0;
    }
    const cut = [...t.querySelectorAll('th, td')].filter(c => c.scrollWidth > c.clientWidth + 1)
      .map(c => c.textContent.slice(0, 40));
    return {index: k + 1, header: first ? first.textContent.slice(0, 40) : '', width: t.scrollWidth,
            column: box.clientWidth, scrolls: scrolls, first_column_stays: stays, cut: cut};
  });
  // the first screen: the verdict's first paragraph and the first table or figure after it
  const verdict = document.getElementById('verdict');
  let lead = null, headline = null;
  for (let e = verdict && verdict.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
    const holds = e.matches('table, img, .table-wrap') || e.querySelector('table, img');
    if (!lead && e.tagName === 'P' && !holds) lead = e;
    if (!headline && holds) headline = e;
  }
  const box = e => e ? {top: Math.round(e.getBoundingClientRect().top),
                        bottom: Math.round(e.getBoundingClientRect().bottom)} : null;
  const first = {verdict: box(lead), headline: box(headline)};
  const out = document.createElement('pre');
  out.id = 'gcbench-measure';
  out.textContent = JSON.stringify({overflow: doc.scrollWidth - doc.clientWidth, images: imgs, tables: tables,
                                   first_screen: first});
  document.body.appendChild(out);
});
</script>"""


# the smallest share of its own width a figure may be shown at: its 11 pt text, 23 px at
# 150 dpi, stays 11 px or more. A figure fits the page's column (issue 69: at 800 px a
# figure kept 1,000 px, and its right-hand panels and legend were cut off); at 800 px its
# text is 11.7 px, and the figure links to its full size
LEGIBLE = 0.48


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="gcbench-chromium-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=120)


def measure(page: pathlib.Path, width: int = 1400) -> dict:
    """The page as Chromium lays it out in a window `width` px wide: `overflow` (px the
    page is wider than the window), `images`, `tables` (see the module docstring) and
    `first_screen` (the top and bottom of the verdict's first paragraph and of the first
    table or figure after it, in px from the page's top)."""
    with tempfile.TemporaryDirectory(prefix="gcbench-check-") as tmp:
        copy = pathlib.Path(tmp) / "index.html"
        copy.write_text(pathlib.Path(page).read_text().replace("</body>", MEASURE + "</body>"))
        out = _run([f"--window-size={width},1000", "--dump-dom", copy.as_uri()])
    m = re.search(r'<pre id="gcbench-measure">(.*?)</pre>', out.stdout, re.S)
    if m is None:
        raise RuntimeError(f"chromium did not render {page}: {out.stderr[-500:]}")
    return json.loads(html.unescape(m.group(1)))


def problems(page: pathlib.Path, width: int) -> list[str]:
    """What a reader of `page` at `width` px would not see whole: at 1400 px every table fits
    its column; narrower, a table may scroll when its first column stays in view; at every
    width no cell cuts its text, every image loads, fits the window and is shown at a size its
    text can be read at, and the page itself does not scroll."""
    got = measure(page, width)
    found = []
    if got["overflow"] > 0:
        found.append(f"the page is {got['overflow']} px wider than the window")
    for img in got["images"]:
        if not img["loaded"]:
            found.append(f"image {img['alt']!r} does not load")
        elif img["shown"] < img["natural"] and not img["linked"]:
            found.append(f"image {img['alt']!r} is shrunk to {img['shown']} px with no link to its full size")
        elif img["right"] > width:
            found.append(f"image {img['alt']!r} reaches {img['right']} px in a {width} px window: it is cut off")
        elif img["shown"] < LEGIBLE * img["natural"]:  # 11 pt text at 150 dpi: under 11 px
            found.append(f"image {img['alt']!r} is shown at {img['shown']} of its {img['natural']} px: "
                         "its text is too small to read")
    for t in got["tables"]:
        name = f"table {t['index']} ({t['header']!r})"
        if t["scrolls"] and width >= 1400:
            found.append(f"{name} is {t['width']} px wide in a {t['column']} px column")
        if t["scrolls"] and not t["first_column_stays"]:
            found.append(f"{name} scrolls its first column out of view")
        if t["cut"]:
            found.append(f"{name} cuts the text of {len(t['cut'])} cells, e.g. {t['cut'][0]!r}")
    return found


def screenshot(page: pathlib.Path, png: pathlib.Path, width: int = 1400, height: int = 6000) -> pathlib.Path:
    _run([f"--window-size={width},{height}", f"--screenshot={png}", pathlib.Path(page).resolve().as_uri()])
    return png


if __name__ == "__main__":
    page, png = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 1400
    print("\n".join(problems(page, width)) or "no problems")
    screenshot(page, png, width)
