"""Every committed report, rendered in headless Chromium at 1400 px: every image loads and
nothing makes the page wider than the window (wide tables scroll inside their box).
Skipped where Chromium is absent (Debian's `chromium` package provides it)."""

import pathlib

import pytest

import browser

REPORTS = sorted(pathlib.Path(__file__).resolve().parent.parent.glob("reports/*/index.html"))
pytestmark = pytest.mark.skipif(browser.chromium() is None, reason="no chromium on this machine")


@pytest.mark.parametrize("page", REPORTS, ids=[p.parent.name for p in REPORTS])
def test_committed_report_renders_whole(page):
    html = page.read_text()
    got = browser.check(page)
    assert got["images"] == html.count("<img ") and got["images"] > 0
    assert got["broken"] == 0
    assert got["overflow"] <= 0, f"the page is {got['overflow']} px wider than the window"


def test_the_check_sees_a_broken_image(tmp_path):
    page = tmp_path / "index.html"
    page.write_text('<!DOCTYPE html><html><head><title>t</title></head><body>'
                    '<img alt="x" src="data:image/png;base64,AAAA"></body></html>')
    assert browser.check(page) == {"images": 1, "broken": 1, "overflow": 0}
