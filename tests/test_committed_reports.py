"""The committed reports answer their own question first, their verdict and Findings agree,
and their Findings are tables with a few sentences (read from the committed pages)."""

from __future__ import annotations

import pathlib
import re

import pytest

import committed

ROOT = pathlib.Path(__file__).resolve().parent.parent
REPORTS = committed.reports()


def verdict(name: str) -> str:
    page = (ROOT / "reports" / name / "index.md").read_text()
    return page.split("## Verdict", 1)[1].split("\n## ", 1)[0].strip()


def test_the_commit_bisect_opens_with_its_commit():
    first = verdict("cpu-vit-bisect-equinox-commits").split("\n\n")[0]
    # 0277a30 cut full collections from 15 to 6 a repeat: an improvement, not "bad" (issue 69)
    assert first.startswith("The first commit with fewer full collections of equinox")
    assert "`0277a3015`" in first
    assert "perf: code generation" in first


def test_the_reproductions_open_with_what_reproduced():
    """Issue 53: every claim of the seeds is counted (13: the median step is a setting, not a
    claim), those not run say why, and a match only through the widened interval says so."""
    first = verdict("reproductions").split("\n\n")[0]
    m = re.match(r"Of the seeds' (\d+) claims, (\d+) reproduced \((\d+) of them only within the interval widened "
                 r"for the hardware\), (\d+) partly, (\d+) not, (\d+) not run\. reproduced: 000:", first)
    assert m, first
    total, *kinds = map(int, m.groups())
    assert total == 13
    assert total == kinds[0] + sum(kinds[2:])
    assert "not: 000: Flax NNX" in first
    assert "(only within the widened interval)" in first
    assert "not run: 001: step time" in first
    assert "(Flux: no Julia" in first


def test_cpu_vits_verdict_and_findings_agree():
    """The verdict quotes the Findings' own corrected test of `disable` on nnx's runs."""
    page = (ROOT / "reports" / "cpu-vit" / "index.md").read_text()
    top = verdict("cpu-vit")
    row = next(line for line in page.splitlines() if line.startswith("| `nnx`: `disable` vs `default` |"))
    mean = [c.strip() for c in row.split("|")][5]  # the mean step's test
    p = re.search(r"p = ([\d.e-]+) corrected", mean).group(1)
    assert f"p = {p} after correcting" in top
    if mean.startswith("cannot tell"):
        assert "Whether `disable` shortens its runs the repeats cannot tell" in top
    else:
        assert "`disable` shortens its runs:" in top or "`disable` does not help it" in top


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.name)
def test_findings_are_tables_and_a_few_sentences(report):
    page = (report / "index.md").read_text()
    if "## Findings" not in page:
        return
    findings = page.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert sum(line.startswith("- ") for line in findings.splitlines()) <= 15


def test_the_commit_bisect_lists_its_commits_in_history_order():
    """Issue 45: environments named by commit were sorted by hash; the summary table and the
    figures now follow the bisect table's history (oldest first)."""
    page = (ROOT / "reports" / "cpu-vit-bisect-equinox-commits" / "index.md").read_text()
    history = re.findall(r"^\| `([0-9a-f]{9})` \| \d{4}-\d\d-\d\d \|", page, re.M)
    summary = list(dict.fromkeys(re.findall(r"^\| equinox-filter/vit/default \\\[py3\.11 equinox@([0-9a-f]{9})",
                                            page, re.M)))
    assert len(history) >= 5
    assert summary == history


def test_the_policy_comparison_opens_with_what_each_policy_did():
    """cpu-vit ran `--gc default,freeze,disable`: its first paragraph says what each policy did,
    counts first, with the Findings' own corrected test of the time a run takes."""
    page = (ROOT / "reports" / "cpu-vit" / "index.md").read_text()
    first = verdict("cpu-vit").split("\n\n")[0]
    assert first.startswith("What each policy did, against `default`")
    assert "`disable` on vit: full collections per repeat against `default` `equinox-filter` 4 -> 0" in first
    row = next(line for line in page.splitlines() if line.startswith("| `nnx`: `disable` vs `default` |"))
    mean = [c.strip() for c in row.split("|")][5]  # the Findings' mean-step test: "cannot tell: 0.73 x (...)"
    assert mean.split("; p =")[0].split(": ", 1)[1] in first


def test_the_environment_matrix_opens_with_which_versions_move_the_count():
    first = verdict("cpu-vit-env-matrix").split("\n\n")[0]
    assert first.startswith("Which versions move the full collections")
    filt = first.split("`equinox-filter/vit/default`", 1)[1].split("`equinox-partition", 1)[0]
    assert "it moves with equinox (0.12.2 -&gt; 0.13.8: 16 -&gt; 6)" in filt  # the largest change first
    assert "not with" in filt
    assert "jax (0.10.2 -&gt; 0.12.0.1: 5 -&gt; 5" in filt.split("not with", 1)[1]


def test_the_published_reports_are_what_git_tracks_and_a_users_own_are_not_read(tmp_path):
    """Tests and benchmarks read the published reports by name: a report a user made beside
    them (README's first look writes reports/quick-<date>) is never one of them."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "reports"], cwd=ROOT, capture_output=True, text=True, check=True)
    names = {line.split("/")[1] for line in tracked.stdout.splitlines() if line.count("/") >= 2}
    assert names == set(committed.PUBLISHED)
    assert {p.name for p in REPORTS} == set(committed.PUBLISHED)


@pytest.mark.e2e
@pytest.mark.parametrize("name", committed.PUBLISHED)
def test_every_committed_report_rebuilds_byte_for_byte(name, tmp_path):
    """`gcbench report` on a copy of each published report gives its pages back, byte for
    byte (benchmarks/rebuild_reports.py): a change to the analysis that moves a page
    without the page being rebuilt fails here (the reproductions' nnx freeze row read "more
    full GCs" for a week after the phase rule had made it "same (phase)")."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import rebuild_reports

    differ, _ = rebuild_reports.rebuild(ROOT / "reports" / name, tmp_path)
    assert not differ, f"reports/{name}: {differ} differ from a rebuild: gcbench report reports/{name}"
