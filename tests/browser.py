"""Rendering a report's HTML in headless Chromium (Debian's `chromium`), for the browser
check and for screenshots to look at:

    python tests/browser.py reports/NAME/index.html shot.png [width]
"""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=15000"]
CHECK = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  const over = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  document.title = `gcbench-check images=${imgs.length} broken=${broken} overflow=${over}`;
});
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="gcbench-chromium-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=120)


def check(page: pathlib.Path, width: int = 1400) -> dict:
    """Images in the page, how many of them did not load, and how far the page overflows
    the window horizontally (px), as Chromium renders a copy with a check script added."""
    with tempfile.TemporaryDirectory(prefix="gcbench-check-") as tmp:
        copy = pathlib.Path(tmp) / "index.html"
        copy.write_text(page.read_text().replace("</body>", CHECK + "</body>"))
        out = _run([f"--window-size={width},1000", "--dump-dom", copy.as_uri()])
    m = re.search(r"gcbench-check images=(\d+) broken=(\d+) overflow=(-?\d+)", out.stdout)
    if m is None:
        raise RuntimeError(f"chromium did not render {page}: {out.stderr[-500:]}")
    return {"images": int(m.group(1)), "broken": int(m.group(2)), "overflow": int(m.group(3))}


def screenshot(page: pathlib.Path, png: pathlib.Path, width: int = 1400, height: int = 6000) -> pathlib.Path:
    _run([f"--window-size={width},{height}", f"--screenshot={png}", pathlib.Path(page).resolve().as_uri()])
    return png


if __name__ == "__main__":
    page, png = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 1400
    print(check(page, width))
    screenshot(page, png, width)
