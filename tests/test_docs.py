"""The documentation: README a page, the docs/ site building with MkDocs in strict mode,
every link between the pages and into the repository pointing at a file that is there,
and every `gcbench` command the pages name being one the command line has."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_a_page():
    assert len((ROOT / "README.md").read_text().splitlines()) < 200


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "gc-budgets" / "index.html").is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold no links
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^(https?:|mailto:|#)", target):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, f"{page.name}: {missing}"


def test_every_command_the_pages_name_exists():
    proc = subprocess.run([sys.executable, "-m", "gcbench", "--help"], capture_output=True, text=True, timeout=120)
    commands = set(re.search(r"\{([a-z,-]+)\}", proc.stdout).group(1).split(","))
    named = set()
    for page in PAGES:
        named |= set(re.findall(r"`gcbench ([a-z][a-z-]+)", page.read_text()))
    assert named and named <= commands, named - commands
