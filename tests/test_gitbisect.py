"""`gcbench bisect --git`: a toy package's history, bisected to the commit that changed a
cell's full collections, for real (environments built from each commit), and the
search's rules on their own."""

from __future__ import annotations

import json
import math
import pathlib
import subprocess
import tarfile

import pytest

from conftest import assert_one_line_error, documentation_text, ok_results_folder, run_cli
from gcbench.analysing import gitbisect
from gcbench.core.errors import UsageError
from gcbench.measuring import results
from gcbench.publishing import bisect_text
from gcbench.running import gitrepo

# A package whose `sitecustomize` module runs at every interpreter start in its environment:
# from the "bad" commit on it makes the young generation collect after every 5 new
# objects instead of 2,000, so a loop that spent no time in the collector spends some in
# every step.
QUIET = "# nothing to do\n"
BUSY = "import gc\n\ngc.set_threshold(5, 100000, 100000)\n"
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "gctoy"
version = "0.1.0"

[tool.setuptools]
py-modules = ["sitecustomize"]
"""

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _commit(repo, message, **files):
    for name, text in files.items():
        (repo / name).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q",
                    "-m", message], check=True, capture_output=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


BROKEN = PYPROJECT.replace('version = "0.1.0"', 'version = "not a version"')


@pytest.fixture
def toy_repo(tmp_path):
    """Eight commits: the good start (0), the fifth (4) turns the collector busy, the sixth
    (5) does not build (a broken version), the seventh (6) mends it, the last (7) is bad."""
    repo = tmp_path / "gctoy"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shas = [_commit(repo, "start", **{"pyproject.toml": PYPROJECT, "sitecustomize.py": QUIET}),
            _commit(repo, "docs", **{"README.md": "gctoy\n"}),
            _commit(repo, "more docs", **{"README.md": "gctoy, a toy\n"}),
            _commit(repo, "a changelog", **{"CHANGES.md": "0.1.0\n"}),
            _commit(repo, "tune the collector", **{"sitecustomize.py": BUSY}),
            _commit(repo, "a typo in the version", **{"pyproject.toml": BROKEN}),
            _commit(repo, "mend the version", **{"pyproject.toml": PYPROJECT}),
            _commit(repo, "release", **{"CHANGES.md": "0.1.0, tuned\n"})]
    return repo, shas


@pytest.fixture
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.mark.e2e
@pytest.mark.slow
def test_a_toy_packages_history_is_bisected_to_the_commit_that_changed_the_cell(toy_repo, cache, tmp_path):
    """Eight commits, the fifth bad: found in 5 builds (at most ceil(log2(7)) + 2), going
    around the sixth, which does not build. Three repeats a commit: the t test of two a side
    (df 2) missed the bad endpoint on a loaded CI machine (GC share 8.37 and 5.13 %, p = 0.053)."""
    repo, shas = toy_repo
    out = tmp_path / "bis"
    args = ["bisect", "--git", str(repo), "--good", shas[0], "--bad", shas[-1], "--cell", "jax/mlp/default",
            "--metric", "gc-share", "--steps", "30", "--warmup", "1", "--networks", "2", "--repeats", "3",
            "--out", str(out), "--no-progress"]
    proc = run_cli(*args, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    plan = gitbisect.load(out / gitbisect.FILE)
    tab = gitbisect.table(plan, gitbisect.docs_by_env(results.load_dir(out)))
    assert tab.first_bad == shas[4]
    assert tab.builds == len(plan.tested) <= 5 == math.ceil(math.log2(7)) + 2
    decisions = {r.sha: r.decision for r in tab.rows}
    assert decisions == {shas[0]: "good (endpoint)", shas[3]: "good", shas[5]: "skip", shas[4]: "bad",
                         shas[7]: "bad (endpoint)"}
    skipped = next(r for r in tab.rows if r.sha == shas[5])
    assert skipped.value is None
    assert "gctoy" in skipped.why_not
    assert tab.endpoints.startswith("t test of the repeats")
    assert f"first bad commit: {shas[4]}" in proc.stdout
    assert "tune the collector" in proc.stdout
    assert "files changed: sitecustomize.py" in proc.stdout
    # every environment but the good endpoint's pins what the good one resolved: only gctoy changes
    pinned = [env for sha, env in plan.tested.items() if sha != shas[0]]
    assert all("numpy==" in env and "jax==" in env for env in pinned)
    # the report recomputes the table from the results, and rebuilds from its own archive
    proc = run_cli("report", str(out), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "rep" / "index.md").read_text()
    assert "## Commit bisect: gctoy on `jax/mlp/default`" in md
    assert f"The first bad commit: `{shas[4][:9]}`" in md
    assert f"| `{shas[4][:9]}` |" in md
    assert "bad (first bad)" in md
    assert (tmp_path / "rep" / "gitbisect.png").is_file()
    assert run_cli("report", str(tmp_path / "rep")).returncode == 0
    assert (tmp_path / "rep" / "index.md").read_text() == md
    # --resume measures nothing again
    again = run_cli(*args, "--resume", timeout=900)
    assert again.returncode == 0
    assert f"first bad commit: {shas[4]}" in again.stdout
    assert json.loads((out / gitbisect.FILE).read_text())["tested"] == plan.tested


def test_the_search_goes_around_skipped_commits():
    assert gitbisect.next_candidate(9, 0, 8, set()) == 4
    assert gitbisect.next_candidate(9, 0, 8, {4}) == 3  # 4 could not be built: the nearest other
    assert gitbisect.next_candidate(9, 0, 8, {3, 4}) == 5
    assert gitbisect.next_candidate(9, 3, 4, set()) is None  # adjacent: nothing left between


def test_the_rule_and_the_endpoints():
    full = gitbisect.get_metric("full-collections")
    assert gitbisect.decide(full, 4.0, good=15.0, bad=5.0) == "bad"
    assert gitbisect.decide(full, 14.0, good=15.0, bad=5.0) == "good"
    median = gitbisect.get_metric("median")
    # on a log scale the midpoint of 10 and 20 ms is 14.14 ms, not 15
    assert gitbisect.decide(median, 14.0, good=10.0, bad=20.0) == "good"
    assert gitbisect.decide(median, 14.2, good=10.0, bad=20.0) == "bad"
    assert gitbisect.endpoints_differ(full, [15, 15, 15], [5, 5, 5]) == (
        True,
        "exact: the counts are the same in every repeat",
    )
    assert not gitbisect.endpoints_differ(full, [5, 6, 5], [6, 7, 6])[0]
    share = gitbisect.get_metric("gc-share")
    assert gitbisect.endpoints_differ(share, [12.0, 12.5, 12.2], [4.0, 4.2, 4.1])[0]
    assert not gitbisect.endpoints_differ(share, [12.0, 4.5, 8.2], [4.0, 12.2, 9.1])[0]


@pytest.mark.e2e
def test_usage_errors_are_one_line(toy_repo, tmp_path):
    repo, shas = toy_repo
    base = ["bisect", "--cell", "jax/mlp/default", "--out", str(tmp_path / "o")]
    assert_one_line_error(run_cli(*base, "--git", str(repo), "--good", shas[0]), "--bad is missing")
    assert_one_line_error(run_cli(*base, "--git", str(tmp_path / "nowhere"), "--good", "a", "--bad", "b"),
                          "no such folder")
    assert_one_line_error(run_cli(*base, "--git", str(repo), "--good", shas[-1], "--bad", shas[0]),
                          "is not an ancestor")
    assert_one_line_error(run_cli(*base, "--git", str(repo), "--good", "nope", "--bad", shas[0]), "git show")
    assert_one_line_error(run_cli(*base, "--git", str(repo), "--good", shas[0], "--bad", shas[-1],
                                  "--metric", "p99"), "unknown --metric 'p99'")
    assert_one_line_error(run_cli(*base, "--git", str(repo), "--good", shas[0], "--bad", shas[-1],
                                  "--env", "gctoy==0.1.0"), "--env pins gctoy")
    assert not (tmp_path / "o").exists()


def test_a_commit_is_exported_even_from_a_clone_that_lacks_some_objects(toy_repo, cache):
    """A size-limited copy of a repository (large data files left out) still builds."""
    repo, shas = toy_repo
    blob = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{shas[-1]}:CHANGES.md"], capture_output=True,
                          text=True, check=True).stdout.strip()
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    loose.unlink()  # as if the copy had left this file out
    folder = gitrepo.export(repo, shas[-1], "gctoy")
    assert (folder / "pyproject.toml").read_text() == PYPROJECT
    assert (folder / "sitecustomize.py").read_text() == BUSY
    assert not (folder / "CHANGES.md").exists()
    assert (folder / ".gcbench-missing").read_text() == "CHANGES.md\n"
    assert (folder / "README.md").read_text() == "gctoy, a toy\n"
    assert gitrepo.source_pin("gctoy", repo, shas[-1]) == f"gctoy@{folder.as_uri()}"
    assert gitrepo.export(repo, shas[-1], "gctoy") == folder  # made once


def test_the_package_name_is_read_from_the_checkout(toy_repo):
    repo, shas = toy_repo
    assert gitrepo.package_name(repo, shas[0]) == "gctoy"
    with pytest.raises(UsageError, match="same commit"):
        gitrepo.commits_between(repo, gitrepo.commit(repo, shas[0]), gitrepo.commit(repo, shas[0]))
    between = gitrepo.commits_between(repo, gitrepo.commit(repo, shas[0]), gitrepo.commit(repo, shas[-1]))
    assert [c.sha for c in between] == shas[1:]
    assert between[3].subject == "tune the collector"


def test_a_package_named_as_a_path_is_refused_for_what_it_is(tmp_path):
    """A project that calls itself `../../outside/evil` is refused as an invalid name, not
    reported as having no name; a failed clone gives git's own reason."""
    from gcbench.core.errors import UsageError

    repo = tmp_path / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "../../outside/evil"\n')
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "one")
    with pytest.raises(UsageError, match=r"calls itself '\.\./\.\./outside/evil', not a valid distribution name"):
        gitrepo.package_name(repo, "HEAD")
    with pytest.raises(UsageError, match="does not exist"):
        gitrepo.git(tmp_path, "clone", "--quiet", "--bare", str(tmp_path / "nowhere.git"), str(tmp_path / "c"))


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _repo(tmp_path, pyproject: str) -> pathlib.Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pyproject.toml").write_text(pyproject)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "one")
    return repo


def test_a_commit_bisect_refuses_another_runs_folder(tmp_path):
    run_folder = ok_results_folder(tmp_path / "run")
    before = sorted(p.name for p in run_folder.iterdir())
    base = ["bisect", "--git", str(tmp_path / "nowhere"), "--good", "v1", "--bad", "v2", "--cell", "jax/mlp/default"]
    assert_one_line_error(run_cli(*base, "--out", str(run_folder)), "not a commit bisect's", "new or empty folder")
    assert_one_line_error(run_cli(*base, "--out", str(run_folder), "--resume"), "not a commit bisect's")
    assert sorted(p.name for p in run_folder.iterdir()) == before


@pytest.mark.parametrize("option", ["--bad=--output=OUT", "--good=-n"])
def test_a_ref_that_is_an_option_is_refused_before_git_sees_it(tmp_path, option):
    repo = _repo(tmp_path, '[project]\nname = "toy"\n')
    option = option.replace("OUT", str(tmp_path / "x"))
    args = {"--good": "HEAD", "--bad": "HEAD"}
    name, value = option.split("=", 1)
    args[name] = value
    proc = run_cli("bisect", "--git", str(repo), "--good", "HEAD", "--bad", "HEAD", option, "--cell", "jax/mlp/default",
                   "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "is not a git ref")
    assert not list(tmp_path.glob("x*"))
    with pytest.raises(UsageError, match="is not a git ref"):
        gitrepo.commit(repo, "--output=" + str(tmp_path / "y"))
    assert not list(tmp_path.glob("y*"))
    assert gitrepo.commit(repo, "HEAD").sha == _git(repo, "rev-parse", "HEAD").strip()


def test_readme_says_a_commit_bisect_runs_build_code():

    readme = " ".join(documentation_text().split())
    assert "Building a commit runs its build code" in readme
    assert "as you, with your permissions" in readme


def test_a_commit_bisect_with_a_culprit_but_no_first_bad_commit_reports(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    with tarfile.open(ROOT / "reports/cpu-vit-bisect-equinox-commits/results.tar.gz") as tar:
        tar.extractall(src, filter="data")
    plan = json.loads((src / "gitbisect.json").read_text())
    assert plan.get("culprit")
    bad_sha = plan["commits"][-1]["sha"]
    for p in src.glob(f"*equinox-{bad_sha[:9]}-*.json"):  # the bad endpoint's results gone: no first bad commit
        p.unlink()
    proc = run_cli("report", str(src), "--out", str(tmp_path / "rep"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "The first bad commit," not in (tmp_path / "rep" / "index.md").read_text()


@pytest.mark.parametrize("name", ["/abs/path/evil", "../../escape", "a b", ""])
def test_a_hostile_package_name_is_refused(tmp_path, name):
    repo = _repo(tmp_path, f'[project]\nname = "{name}"\n')
    with pytest.raises(UsageError, match=r"not a valid distribution name|cannot tell the package"):
        gitrepo.package_name(repo, _git(repo, "rev-parse", "HEAD").strip())


def _toy_table(before_every: int, after_every: int):
    """A commit bisect's table without building anything: eight commits, full collections
    every `before_every` steps up to the fourth, every `after_every` from the fifth (4) on,
    all tested, three repeats each."""
    import numpy as np

    import simulate
    from gcbench.running.gitrepo import Commit

    rng = np.random.default_rng(0)
    commits = [Commit(f"{i:040x}", "2026-11-0" + str(i + 1), f"commit {i}") for i in range(8)]
    plan = gitbisect.CommitPlan("gctoy", "/src/gctoy", "jax/mlp/default", "full-collections", commits[0], commits[1:],
                                {c.sha: f"env{i}" for i, c in enumerate(commits)})
    by_env = {f"env{i}": [results.validate(d) for d in simulate.docs(
        rng, steps=400, full_every=before_every if i < 4 else after_every, pause_ms=5.0)] for i in range(8)}
    return gitbisect.table(plan, by_env), commits


def _figure_texts(tab, tmp_path, monkeypatch) -> list[str]:
    from gcbench.publishing.report import plots

    texts: list[str] = []

    def keep(fig, path):
        texts.extend(t.get_text() for t in fig.findobj(match=lambda a: hasattr(a, "get_text")))
        return path

    monkeypatch.setattr(plots, "save", keep)
    plots.gitbisect_figure(tab, tmp_path / "gitbisect.png")
    return texts


def test_an_improvement_is_never_called_bad(tmp_path, monkeypatch):
    """Issue 69, item 1: a commit that cut full collections (every 10 steps to every 40) is
    "fewer full collections from" it, in the terminal's table, the report's answer, table and
    figure; "bad" only where a change made them more (the same history the other way)."""
    from gcbench.publishing.report import document, environments

    tab, commits = _toy_table(10, 40)
    assert tab.first_bad == commits[4].sha
    assert tab.better is True
    culprit = gitbisect.Culprit("perf: fewer allocations", ["src/gctoy.py"])
    terminal = bisect_text.commit_table(tab, culprit)
    answer = environments.gitbisect_answer(tab)
    page = document.to_markdown(environments.gitbisect_section(tab, culprit, tmp_path))
    section = page.split("## Commit bisect", 1)[1]
    said = [terminal, answer, *(line for line in section.splitlines() if line.startswith("|")),
            *_figure_texts(tab, tmp_path, monkeypatch)]
    assert not [s for s in said if "bad" in s.lower()], [s for s in said if "bad" in s.lower()]
    assert f"fewer full collections from commit {commits[4].sha}" in terminal
    assert answer.startswith("The first commit with fewer full collections of gctoy")
    assert any(f"fewer full collections from {commits[4].sha[:9]}" in t for t in _figure_texts(tab, tmp_path,
                                                                                              monkeypatch))
    assert "after (endpoint)" in terminal
    assert "before (endpoint)" in terminal

    worse, _ = _toy_table(40, 10)  # the regression: its first commit is bad, and called so
    assert worse.better is False
    assert f"first bad commit: {commits[4].sha}" in bisect_text.commit_table(worse, culprit)
    assert environments.gitbisect_answer(worse).startswith("The first bad commit of gctoy")
    assert any(f"first bad: {commits[4].sha[:9]}" in t for t in _figure_texts(worse, tmp_path, monkeypatch))
