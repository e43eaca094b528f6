"""The documentation: README a page, the docs/ site building with MkDocs in strict mode,
every link between the pages and into the repository pointing at a file that is there,
every link of the built site resolving in it (or, for the repository's address, to a file
of this checkout), and every `gcbench` command the pages name being one the command line
has."""

from __future__ import annotations

import html.parser
import pathlib
import re
import shutil
import subprocess
import sys
import urllib.parse

import pytest

from conftest import REPOSITORY_ONLY  # what MANIFEST.in leaves out of the sdist

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_a_page():
    assert len((ROOT / "README.md").read_text().splitlines()) < 200


def _build(config: pathlib.Path, site: pathlib.Path) -> subprocess.CompletedProcess:
    # never -q: it hides the warnings that --strict counts, and a dead link then builds
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, cwd=config.parent, timeout=300)


class _Links(html.parser.HTMLParser):
    """The links (a, link: href; img, script: src) and the ids of one HTML page."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if a.get("name") and tag == "a":
            self.ids.add(a["name"])
        target = a.get("href") if tag in ("a", "link") else a.get("src") if tag in ("img", "script") else None
        if target:
            self.links.append(target)


def _repository() -> str:
    sys.path.insert(0, str(ROOT))
    try:
        import repo_links
    finally:
        sys.path.remove(str(ROOT))
    return repo_links.repository()


def dead_links(site: pathlib.Path) -> list[str]:
    """Every link of the built site that does not resolve: a file of the site that is not
    there, an anchor its page lacks, or a link to the repository's address naming a file
    this checkout lacks. Other sites' links are not followed."""
    repo = _repository()
    raw = "https://raw.githubusercontent.com/" + repo.split("github.com/", 1)[1] + "/HEAD/"
    pages = {p: _Links() for p in site.rglob("*.html")}
    for page, parser in pages.items():
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    dead = []
    for page, parser in pages.items():
        for link in parser.links:
            where = f"{page.relative_to(site)}: {link}"
            for prefix in (f"{repo}/blob/HEAD/", f"{repo}/tree/HEAD/", raw):
                if link.startswith(prefix):
                    if not (ROOT / urllib.parse.unquote(link[len(prefix):].split("#")[0])).exists():
                        dead.append(where)
                    break
            else:
                parts = urllib.parse.urlsplit(link)
                if parts.scheme or parts.netloc or link.startswith(("data:", "mailto:", "javascript:")):
                    continue
                path = urllib.parse.unquote(parts.path)
                # a site-absolute path (404.html's, which is served from any folder) from the site's root
                base = site if path.startswith("/") else page.parent
                target = page if not path else (base / path.lstrip("/")).resolve()
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file() or site.resolve() not in target.resolve().parents:
                    dead.append(where)
                elif parts.fragment and target.suffix == ".html" and target in pages \
                        and urllib.parse.unquote(parts.fragment) not in pages[target].ids:
                    dead.append(where)
    return dead


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    pytest.importorskip("mkdocs")
    folder = tmp_path_factory.mktemp("site")
    proc = _build(ROOT / "mkdocs.yml", folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder


def test_the_docs_build_with_warnings_as_errors(site):
    assert (site / "gc-budgets" / "index.html").is_file()
    # the reports the pages link to are published in the site, where the links go
    assert (site / "reports" / "cpu-quick" / "index.html").is_file()
    assert (site / "reports" / "cpu-quick" / "gc_split_vit.png").is_file()


def test_every_link_of_the_built_site_resolves(site):
    """Issue 56, item 2: 0 dead links in the built site (pages, published reports, links to
    the repository), and the check finds one put there."""
    assert dead_links(site) == []
    probe = site / "probe"
    probe.mkdir()
    (probe / "index.html").write_text('<a href="../reports/no-such/index.html">x</a> <a href="#nowhere">y</a>'
                                      f'<a href="{_repository()}/blob/HEAD/no/such.md">z</a>')
    try:
        assert sorted(dead_links(site)) == sorted(f"probe/index.html: {t}" for t in (
            "../reports/no-such/index.html", "#nowhere", f"{_repository()}/blob/HEAD/no/such.md"))
    finally:
        shutil.rmtree(probe)


def test_a_dead_link_fails_the_build(tmp_path):
    """not_found at warn under --strict: a page linking to a page that is not there, or out of
    docs/ to a file the repository lacks, fails the build, naming the link."""
    pytest.importorskip("mkdocs")
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    for name in ("mkdocs.yml", "repo_links.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path)
    config = tmp_path / "mkdocs.yml"
    first = _build(config, tmp_path / "site")
    assert first.returncode == 0, first.stdout + first.stderr
    page = docs / "usage.md"
    page.write_text(page.read_text() + "\nSee [the missing page](missing.md).\n")
    proc = _build(config, tmp_path / "site")
    assert proc.returncode != 0
    assert "missing.md" in proc.stdout + proc.stderr


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold no links
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^(https?:|mailto:|#)", target):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        inside = path.relative_to(ROOT).parts[:1] if path.is_relative_to(ROOT) else ()
        if inside and inside[0] in REPOSITORY_ONLY and not (ROOT / inside[0]).exists():
            continue  # an unpacked sdist: the published reports, benchmarks and workflows stay in the repository
        if not path.exists():
            missing.append(target)
    assert not missing, f"{page.name}: {missing}"


def test_every_command_the_pages_name_exists():
    proc = subprocess.run([sys.executable, "-m", "gcbench", "--help"], capture_output=True, text=True, timeout=120)
    commands = set(re.search(r"\{([a-z,-]+)\}", proc.stdout).group(1).split(","))
    named = set()
    for page in PAGES:
        named |= set(re.findall(r"`gcbench ([a-z][a-z-]+)", page.read_text()))
    assert named, named - commands
    assert named <= commands, named - commands


def test_the_command_reference_is_the_parser_s_own():
    """Issue 56, item 2: docs/cli.md is what the parser writes (every option, its default),
    so it cannot drift; each run option with a default gives it in --help too."""
    from gcbench import cli_reference

    assert (ROOT / "docs" / "cli.md").read_text() == cli_reference.markdown(), \
        "docs/cli.md is stale: python -m gcbench.cli_reference > docs/cli.md"
    text = (ROOT / "docs" / "cli.md").read_text()
    run = text.split("## gcbench run", 1)[1].split("\n## ", 1)[0]
    for option, default in (("--repeats", "3 in every shipped suite"), ("--steps", "150 in default; 100 in quick"),
                            ("--warmup", "5 in default; 3 in quick"), ("--suite", "default")):
        row = next(line for line in run.splitlines() if line.startswith(f"| `{option} "))
        assert row.rstrip(" |").endswith(default), row
    proc = subprocess.run([sys.executable, "-m", "gcbench", "run", "--help"], capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ, "COLUMNS": "200"})
    assert "(default: the suite's: 150 in default; 100 in quick)" in proc.stdout


def test_the_api_page_documents_every_exported_name(site):
    """Issue 58, item 4: the reference is generated from docstrings; every name gcbench
    exports is on it, and each `:::` target is the object gcbench exports under that name."""
    import importlib

    import gcbench

    targets = re.findall(r"^::: (\S+)$", (ROOT / "docs" / "api.md").read_text(), re.M)
    shown = {}
    for target in targets:
        module, _, name = target.rpartition(".")
        shown[name] = getattr(importlib.import_module(module), name)
    exported = set(gcbench.__all__) - {"__version__"}
    assert exported - {"gc_budget"} <= set(shown), exported - set(shown)
    for name in exported:
        assert shown[name] is getattr(gcbench, name), name
    page = (site / "api" / "index.html").read_text()
    assert "Measure your own loop" in page  # measure's docstring, rendered
    for target in targets:
        assert f'id="{target}"' in page, f"{target} is not rendered"


def test_the_api_page_shows_real_defaults_parameters_and_only_public_names(site):
    """Issue 69, item 6: `measure`'s defaults as numbers (not DEFAULT_CAPACITY), the budget
    fixture's keyword arguments, and StepProbe's public methods only."""
    import inspect

    from gcbench import user_loop
    from gcbench.budget.plugin import GCBudgets

    for function in (user_loop.measure, user_loop.Measurement):
        parameters = inspect.signature(function).parameters
        assert parameters["capacity"].default == user_loop.DEFAULT_CAPACITY
        assert parameters["rss_every"].default == user_loop.RSS_EVERY
    page = re.sub(r"<[^>]+>", "", (site / "api" / "index.html").read_text())
    assert "DEFAULT_CAPACITY" not in page
    assert "RSS_EVERY" not in page
    assert "100000" in page or "100_000" in page
    for keyword in inspect.signature(GCBudgets.__call__).parameters:
        if keyword not in ("self", "unknown"):
            assert keyword in page, keyword
    for internal in ("bracket_ok", "keep_interrupt", "take_interrupt", "close_clock", "sample_rss"):
        assert internal not in page, internal
