"""Links into this repository, made to work where its pages are read off it.

README.md and the docs link to files of the repository by relative paths, which work on
the repository's own pages only. Two readers see them elsewhere:

- the package's long description (setup.py): every relative link of README becomes the
  repository's page for the file, every image its raw bytes;
- the documentation site (MkDocs, through this module as a hook in mkdocs.yml): a report
  the pages link to (`../reports/NAME/...`) is published inside the site, at
  `reports/NAME/`, with its files (its self-contained index.html stands for its index.md);
  any other link out of docs/ (`../README.md`) becomes the repository's page for it.

The repository's address is [project.urls] Repository in pyproject.toml, its one place.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent
# [text](target) where the text may be an image; ![alt](target)
_IMAGE = re.compile(r"!\[([^\[\]]*)\]\(([^)\s]+)\)")
_LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|!\[[^\[\]]*\]\([^)]*\))*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"(```.*?```)", re.S)
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.I)  # a URL, an anchor, a site-absolute path
_REPORT = re.compile(r"^reports/([^/]+)/")


def repository(root: pathlib.Path = ROOT) -> str:
    """The repository's address, from pyproject.toml."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Repository"] \
        .rstrip("/")


def raw_base(repo: str) -> str:
    """Where the repository's files are served as they are (images)."""
    return "https://raw.githubusercontent.com/" + repo.split("github.com/", 1)[1] + "/HEAD"


def rewrite(markdown: str, page_dir: str, target_of) -> str:
    """`markdown` with each relative link and image target replaced by `target_of(path,
    anchor, is_image)` (`path` the file's path in the repository, from `page_dir`, the page's
    folder in it; None keeps the link as it is). Code blocks are left alone."""
    def one(m: re.Match, is_image: bool) -> str:
        text, target = m.group(1), m.group(2)
        if _EXTERNAL.match(target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(pathlib.PurePosixPath(page_dir, path)).replace(os.sep, "/")
        if resolved.startswith("../"):
            return m.group(0)  # outside the repository: not ours to say
        new = target_of(resolved, anchor, is_image)
        return m.group(0) if new is None else f"{'!' if is_image else ''}[{text}]({new})"

    parts = _FENCE.split(markdown)
    for i in range(0, len(parts), 2):  # the odd parts are fenced code
        parts[i] = _LINK.sub(lambda m: one(m, False), _IMAGE.sub(lambda m: one(m, True), parts[i]))
    return "".join(parts)


def absolute(markdown: str, page_dir: str = "", root: pathlib.Path = ROOT) -> str:
    """Every relative link of `markdown` (a page in `page_dir` of the repository) as the
    repository's page for the file, every image as its raw bytes."""
    repo = repository(root)
    raw = raw_base(repo)

    def target_of(path: str, anchor: str, is_image: bool) -> str:
        kind = "tree" if (root / path).is_dir() else "blob"
        url = f"{raw}/{path}" if is_image else f"{repo}/{kind}/HEAD/{path}"
        return url + (f"#{anchor}" if anchor else "")

    return rewrite(markdown, page_dir, target_of)


def long_description(root: pathlib.Path = ROOT) -> str:
    """README.md as the package's long description."""
    return absolute((root / "README.md").read_text(encoding="utf-8"), "", root)


# -- the MkDocs hook (mkdocs.yml: hooks) ----------------------------------------------------------
def _root(config) -> pathlib.Path:
    """The repository: mkdocs.yml's folder."""
    return pathlib.Path(config["config_file_path"]).resolve().parent


def _docs_folder(config) -> str:
    """docs_dir's path in the repository ("docs")."""
    return pathlib.Path(config["docs_dir"]).resolve().relative_to(_root(config)).as_posix()


def linked_reports(config) -> list[str]:
    """The reports the pages link to (`../reports/NAME/...`), which the site publishes."""
    docs = pathlib.Path(config["docs_dir"])
    root = _root(config)
    names: set[str] = set()
    for page in docs.rglob("*.md"):
        page_dir = (pathlib.Path(_docs_folder(config)) / page.parent.relative_to(docs)).as_posix()

        def note(path: str, anchor: str, is_image: bool) -> None:
            m = _REPORT.match(path)
            if m and (root / "reports" / m.group(1) / "index.html").is_file():
                names.add(m.group(1))

        rewrite(page.read_text(encoding="utf-8"), page_dir, note)
    return sorted(names)


def on_files(files, config):
    """Each linked report's files, published at reports/NAME/ in the site (its index.md is
    the page its index.html already is)."""
    from mkdocs.structure.files import File

    for name in linked_reports(config):
        folder = _root(config) / "reports" / name
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name != "index.md":
                files.append(File.generated(config, f"reports/{name}/{path.relative_to(folder).as_posix()}",
                                            abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    """A page's links out of docs/: to a published report's copy in the site, else to the
    repository."""
    docs = _docs_folder(config)
    root = _root(config)
    page_dir = pathlib.PurePosixPath(docs, page.file.src_uri).parent.as_posix()
    published = set(linked_reports(config))
    repo = repository(root)
    raw = raw_base(repo)

    def target_of(path: str, anchor: str, is_image: bool) -> str | None:
        if path == docs or path.startswith(docs + "/"):
            return None  # a page of the site: MkDocs checks it
        m = _REPORT.match(path)
        if m and m.group(1) in published:
            in_site = path[:-len("index.md")] + "index.html" if path.endswith("/index.md") else path
            here = pathlib.PurePosixPath(page.file.src_uri).parent.as_posix()
            return os.path.relpath(in_site, here).replace(os.sep, "/") + (f"#{anchor}" if anchor else "")
        kind = "tree" if (root / path).is_dir() else "blob"
        return (f"{raw}/{path}" if is_image else f"{repo}/{kind}/HEAD/{path}") + (f"#{anchor}" if anchor else "")

    return rewrite(markdown, page_dir, target_of)
