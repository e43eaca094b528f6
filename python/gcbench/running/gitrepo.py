"""A package's git history, as a commit bisect reads it: a local repository or a cached bare
clone, its commits, and a commit's files exported into the source cache to be built.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pathlib
import re
import subprocess

from ..core.errors import UsageError
from ..core.paths import user_cache
from ..measuring import envspec


def git(repo: pathlib.Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, errors="replace",
                              timeout=600)
    except FileNotFoundError:
        raise UsageError("git is not installed; a commit bisect needs it") from None
    if proc.returncode != 0:  # git's own words, all of them (a failed clone says why over several lines)
        said = [line.strip() for line in proc.stderr.strip().splitlines() if line.strip()][-4:] or ["failed"]
        raise UsageError(f"git {' '.join(args[:2])} in {repo}: {' / '.join(said)}")
    return proc.stdout


def local_repo(repo: str) -> pathlib.Path:
    """A local repository for `repo`: the path itself, or a bare clone of a URL in the cache."""
    path = pathlib.Path(repo).expanduser()
    if path.exists():
        path = path.resolve()
        if git(path, "rev-parse", "--is-inside-work-tree", "--is-bare-repository").split() == ["false", "false"]:
            raise UsageError(f"{repo} is not a git repository")
        return path
    if not re.match(r"^(https?|ssh|git|file)://|^[\w.-]+@[\w.-]+:", repo):
        raise UsageError(f"--git {repo!r}: no such folder, and not a URL git can clone")
    clone = user_cache("git", hashlib.sha256(repo.encode()).hexdigest()[:12] + ".git")
    if clone.exists():
        git(clone, "fetch", "--quiet", "--tags", "origin")
    else:
        clone.parent.mkdir(parents=True, exist_ok=True)
        git(clone.parent, "clone", "--quiet", "--bare", repo, str(clone))
    return clone


def toplevel(folder: pathlib.Path) -> pathlib.Path | None:
    """The top of the git working tree that holds `folder`, or None outside one."""
    try:
        return pathlib.Path(git(folder, "rev-parse", "--show-toplevel").strip()).resolve()
    except UsageError:
        return None


@dataclasses.dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:9]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def check_ref(ref: str, option: str = "ref") -> str:
    """A ref as git may be given it: not an option (`--output=/tmp/x`), no control characters."""
    if not ref or ref.startswith("-") or any(ord(ch) < 32 or ord(ch) == 127 for ch in ref):
        raise UsageError(f"{option} {ref!r} is not a git ref (a branch, tag or commit)")
    return ref


def commit(repo: pathlib.Path, ref: str) -> Commit:
    check_ref(ref)
    out = git(repo, "show", "-s", "--format=%H%x00%cs%x00%s", "--end-of-options", f"{ref}^{{commit}}", "--")
    parts = out.rstrip("\n").split("\0", 2)
    if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", parts[0]):
        raise UsageError(f"git does not name one commit by {ref!r}")
    return Commit(*parts)


def commits_between(repo: pathlib.Path, good: Commit, bad: Commit) -> list[Commit]:
    """The first-parent commits after `good` up to `bad`, oldest first (`bad` last)."""
    try:
        git(repo, "merge-base", "--is-ancestor", good.sha, bad.sha)
    except UsageError:
        raise UsageError(f"--good {good.short} is not an ancestor of --bad {bad.short}") from None
    shas = git(repo, "rev-list", "--first-parent", "--reverse", f"{good.sha}..{bad.sha}").split()
    if not shas:
        raise UsageError("--good and --bad are the same commit: nothing to bisect")
    return [commit(repo, s) for s in shas]


def message_and_files(repo: pathlib.Path, sha: str) -> tuple[str, list[str]]:
    message = git(repo, "show", "-s", "--format=%B", sha).strip()
    changed = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", "--first-parent", "-m", sha).split()
    return message, sorted(set(changed))


def package_name(repo: pathlib.Path, sha: str) -> str:
    """The distribution the checkout builds: [project] name of pyproject.toml, else setup.cfg's."""
    from .config import tomllib

    try:  # a file git cannot show is not there: the other is tried; a name read is checked, and its refusal stands
        text = git(repo, "show", f"{sha}:pyproject.toml")
    except UsageError:
        text = None
    if text is not None:
        try:
            project = tomllib.loads(text).get("project", {})
        except tomllib.TOMLDecodeError as e:
            raise UsageError(f"pyproject.toml at {sha[:9]} is not valid TOML: {e}") from None
        if isinstance(project, dict) and isinstance(project.get("name"), str):
            return _distribution(project["name"], sha)
    try:
        cfg = git(repo, "show", f"{sha}:setup.cfg")
    except UsageError:
        cfg = ""
    m = re.search(r"^\s*name\s*=\s*(\S+)", cfg, re.M)
    if m:
        return _distribution(m.group(1), sha)
    raise UsageError(f"cannot tell the package's name at {sha[:9]}: no [project] name in pyproject.toml or setup.cfg")


def _distribution(name: str, sha: str) -> str:
    """A package's name from a repository's own files, refused unless it is a valid
    distribution name (PEP 508): it becomes a folder name in the source cache."""
    if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?", name):
        raise UsageError(f"the package at {sha[:9]} calls itself {name[:60]!r}, not a valid distribution name")
    return envspec.normalize(name)


def _export_entry(repo: pathlib.Path, entry: str, into: pathlib.Path) -> str | None:
    """One `ls-tree` entry written under `into` (a submodule, or a path outside the folder:
    skipped); its path where the clone lacks its object, else None."""
    meta, path = entry.split("\t", 1)
    mode, kind, obj = meta.split()
    if kind != "blob" or pathlib.PurePosixPath(path).is_absolute() or ".." in pathlib.PurePosixPath(path).parts:
        return None
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", obj], capture_output=True)
    if proc.returncode != 0:
        return path
    dest = into / path
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(proc.stdout)  # a symbolic link (120000) becomes the text of its target, never followed
    if mode == "100755":
        dest.chmod(0o755)
    return None


def export(repo: pathlib.Path, sha: str, name: str) -> pathlib.Path:
    """The commit's files in a folder of the cache (`~/.cache/gcbench/src/NAME-SHA`), made
    once. A clone that lacks some objects (a partial or a size-limited copy: large data
    files are often left out) still gives every file it holds; the missing ones are listed
    in the folder's `.gcbench-missing` (a package build seldom needs a test's data)."""
    import shutil
    import tempfile

    target = user_cache("src", f"{name}-{sha}")
    if (target / ".gcbench-complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{name}-{sha[:9]}-", dir=target.parent))
    try:
        listing = git(repo, "ls-tree", "-r", "-z", "--full-tree", sha).split("\0")
        missing = [path for entry in filter(None, listing) if (path := _export_entry(repo, entry, tmp)) is not None]
        (tmp / ".gcbench-missing").write_text("".join(f"{m}\n" for m in missing))
        (tmp / ".gcbench-complete").write_text(sha + "\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def source_pin(name: str, repo: pathlib.Path, sha: str) -> str:
    """The requirement that builds `name` from commit `sha`: its files, exported."""
    return f"{name}@{export(repo, sha, name).as_uri()}"
