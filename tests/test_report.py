import base64
import dataclasses
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import committed
import gcbench
from conftest import assert_one_line_error, copy_of, ok_results_folder, run_cli, write_documents
from gcbench.core import wording
from gcbench.core.errors import UsageError
from gcbench.measuring import results
from gcbench.measuring.cell import Cell
from gcbench.publishing.report import build_report, document
from simulate import docs

ROOT = pathlib.Path(__file__).resolve().parents[1]


def make_results(folder, slow=1.0, seed=0):
    """A small results folder: jax with periodic full collections under default and none under
    disable, nnx without GC, one failed and two unavailable cells, and a plan."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    written = docs(rng, 3, 10.0 * slow, full_every=20, pause_ms=30) + \
        docs(rng, 3, 10.0 * slow, policy="disable") + docs(rng, 3, 25.0 * slow, backend="nnx")
    for d in written:
        results.write(d, folder / f"{d.cell}.json")
    def cell(backend, repeat=0):
        return Cell(backend, "mlp", "default", repeat, 2, 4992, 300, 2, 0, 10)
    results.write(results.new(cell("equinox-filter"), "failed", "worker exit code 1\nTraceback ..."), folder / "f.json")
    for r in range(2):
        results.write(results.new(cell("flux", r), "unavailable", "Julia is not installed <b>!</b>"),
                      folder / f"u{r}.json")
    return folder


def test_report_files_plots_and_content(tmp_path):
    paths = build_report(make_results(tmp_path / "res"), tmp_path / "rep")
    assert {"markdown", "html", "archive", "summary_mlp", "trace_mlp", "ecdf_mlp", "gc_split_mlp", "pauses_mlp",
            "cumulative_gc_mlp"} <= set(paths)
    for name, path in paths.items():
        if name != "warnings" and path.suffix == ".png":
            data = path.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n", name
            assert len(data) > 5000, name
    md = paths["markdown"].read_text()
    assert "Data: synthetic" in md
    assert "repeats per cell (fresh processes, the unit of inference): 3" in md
    glance, row = [line for line in md.splitlines() if line.startswith("| jax/mlp/default |")][:2]
    assert glance.startswith("| jax/mlp/default | 15 in every repeat, same steps |")  # the verdict's headline
    assert md.index(glance) < md.index("## What was run")
    assert row.startswith("| jax/mlp/default | 3 | 15 in every repeat, same steps |")  # the summary's row
    assert row.endswith("| 900 |")
    # Findings rest on intervals and schedules: the cells with full collections in a table, with
    # what a step holding one cost; each policy against default, the corrected tests in another.
    assert re.search(
        r"\| `jax` under `default` \| 15 full collections in every repeat of 300 steps, at steps 0, 20, "
        r"40, 60, 80, 100, 120, 140 and 7 more \| \+(29\.\d|30\.\d) ms, 3\.\d x \(95 % [\d.]+-[\d.]+ ms\) \|",
        md,
    )
    policy_row = next(line for line in md.splitlines() if line.startswith("| `jax`: `disable` vs `default` |"))
    assert "| fewer full GCs: -50 per 1,000 steps (exact) |" in policy_row  # both schedules fixed: exact
    assert "`nnx` collected nothing under" not in md  # no nnx policy to compare with
    assert "Median step under `default`: `jax`" in md
    # a ranking claims what its test supports: the slower end against the faster, nothing more
    assert re.search(r"`nnx` takes [12]\.\d\d x \([\d.]+ % [12]\.\d\d-\d\.\d\d\) the time of `jax`\.", md)
    assert "fastest" not in md
    # Not run: grouped by reason, text from results escaped.
    assert (
        "| unavailable | Julia is not installed &lt;b&gt;!&lt;/b&gt; | 2 | flux/mlp/default r1, flux/mlp/default r2 |"
        in md
    )
    assert "| failed | worker exit code 1 | 1 | equinox-filter/mlp/default r1 |" in md
    assert "(trace_mlp.png)" in md
    assert "<b>" not in md


def test_html_is_self_contained_and_escaped(tmp_path):
    paths = build_report(make_results(tmp_path / "res"), tmp_path / "rep")
    page = paths["html"].read_text()
    assert not re.search(r"""src=["']?(https?:|//|[^"'d])""", page)  # everything it shows is inside the file
    own = {p.name for p in paths["html"].parent.glob("*.png")}
    links = re.findall(r'href="([^"#][^"]*)"', page)  # besides anchors, only the full-size plots beside it
    assert links
    assert set(links) <= own
    anchors = re.findall(r'href="#([^"]+)"', page)
    assert anchors
    assert all(f'id="{a}"' in page for a in anchors)
    captions = re.findall(r'<p class="caption"><em>Figure (\d+)\.</em>', page)
    assert captions == [str(i + 1) for i in range(page.count("<img "))]
    assert captions
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len([p for p in paths.values() if hasattr(p, "suffix") and p.suffix == ".png"])
    for data in images:
        assert base64.b64decode(data)[:4] == b"\x89PNG"
    assert "<b>!</b>" not in page
    assert "&lt;b&gt;!&lt;/b&gt;" in page
    assert "<table>" in page
    assert "<code>jax</code>" in page
    assert "**" not in page


def test_report_of_only_unavailable_cells(tmp_path):
    res = tmp_path / "res"
    results.write(results.new(Cell("flux", "mlp", "default", 0, 2, 4992, 3, 1, 0, 1), "unavailable", "no Julia"),
                  res / "u.json")
    paths = build_report(res, tmp_path / "rep")
    assert "| unavailable | no Julia | 1 | flux/mlp/default r1 |" in paths["markdown"].read_text()
    assert not list((tmp_path / "rep").glob("*.png"))


def test_cells_of_an_interrupted_plan_are_listed(tmp_path):
    res = make_results(tmp_path / "res")
    plan = {"cells": ["jax__mlp__default__r0", "jax__lenet5__default__r0", "nnx__lenet5__default__r0"],
            "labels": ["jax/mlp/default", "jax/lenet5/default", "nnx/lenet5/default"],
            "state": "interrupted", "runs": [{"command": ["gcbench", "run"]}]}
    (res / "suite.json").write_text(json.dumps(plan))
    md = build_report(res, tmp_path / "rep")["markdown"].read_text()
    assert "| not run | never ran: the run was interrupted first | 2 | jax/lenet5/default, nnx/lenet5/default |" in md


def test_the_report_carries_its_raw_results_and_rebuilds_from_them(tmp_path):
    res = make_results(tmp_path / "res")
    first = build_report(res, tmp_path / "rep")
    with tarfile.open(first["archive"]) as tar:
        names = tar.getnames()
    assert len(names) == 12
    assert all(n.endswith(".json") and "/" not in n for n in names)
    before = first["markdown"].read_text()
    # The report folder alone is enough: rebuild it in place, from its own archive.
    proc = run_cli("report", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "rep" / "index.md").read_text() == before
    assert first["archive"].read_bytes() == (tmp_path / "rep" / "results.tar.gz").read_bytes()


def test_report_never_touches_files_it_did_not_write(tmp_path):
    res = make_results(tmp_path / "res")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "holiday.png").write_bytes(b"my photo")
    proc = run_cli("report", str(res), "--out", str(mine))
    assert proc.returncode == 2
    assert "holds files gcbench did not write" in proc.stderr
    assert (mine / "holiday.png").read_bytes() == b"my photo"
    assert len(list(mine.iterdir())) == 1
    # Its own folder it may rewrite, and a stranger's file put there later survives.
    rep = tmp_path / "rep"
    assert run_cli("report", str(res), "--out", str(rep)).returncode == 0
    (rep / "notes.txt").write_text("mine")
    (rep / "trace_mlp.png").unlink()
    (rep / "index.md").rename(rep / "kept.md")
    (rep / "index.md").write_text("a file of the user's where the report wants to write")
    proc = run_cli("report", str(res), "--out", str(rep))
    # index.md is listed in the marker, but its content is not what gcbench wrote: the user's
    assert proc.returncode == 2
    assert "changed since" in proc.stderr
    assert (rep / "index.md").read_text().startswith("a file of the user's")
    (rep / "index.md").unlink()
    assert run_cli("report", str(res), "--out", str(rep)).returncode == 0
    assert (rep / "notes.txt").read_text() == "mine"
    assert (rep / "kept.md").exists()
    assert (rep / "trace_mlp.png").exists()


def test_stale_plots_of_an_earlier_build_are_removed(tmp_path):
    res = make_results(tmp_path / "res")
    rep = tmp_path / "rep"
    build_report(res, rep)
    assert (rep / "pauses_mlp.png").exists()
    for p in res.glob("jax__*.json"):
        p.unlink()  # no collections left: no pause plot
    build_report(res, rep)
    assert not (rep / "pauses_mlp.png").exists()


def test_report_cli_errors(tmp_path):
    proc = run_cli("report", str(tmp_path / "missing"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "neither a results folder nor" in proc.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.json").write_text('{"a": 1}')
    proc = run_cli("report", str(bad), cwd=tmp_path)
    assert proc.returncode == 2
    assert "not a gcbench result" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())  # no empty folder left


@pytest.mark.parametrize(("name", "content", "message"), [
    ("suite.json", b"{not json", "suite.json: not a valid"),
    ("suite.json", b'{"cells": 5}', "suite.json: field cells: expected `array`, got `int`"),
    ("memory.json", b'{"format": "gcbench-memory", "schema_version": 1, "cases": [{"kind": "gather"}]}',
     "malformed case"),
    ("bisect.json", b'{"rows": 3}', "not a gcbench bisect table"),
    ("suite.json", b"\xff\xfe", "not a UTF-8"),
])
def test_malformed_documents_in_a_results_folder_are_one_line(tmp_path, name, content, message):
    res = make_results(tmp_path / "res")
    (res / name).write_bytes(content)
    proc = run_cli("report", str(res), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_report_on_a_read_only_folder_is_one_line(tmp_path):

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    res = make_results(tmp_path / "res")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    proc = run_cli("report", str(res), "--out", str(ro / "rep"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


REPO = pathlib.Path(__file__).resolve().parent.parent
COMMITTED = sorted(REPO.glob("reports/*/results.tar.gz"), key=lambda p: p.stat().st_size)


@pytest.mark.skipif(not COMMITTED, reason="no committed report yet")
def test_a_committed_report_rebuilds_from_its_raw_results(tmp_path):
    """The smallest published report, copied as it is in the repository, rebuilt from its own
    results.tar.gz by `gcbench report FOLDER`: the same index.md, word for word."""
    original = COMMITTED[0].parent
    copy = tmp_path / original.name
    shutil.copytree(original, copy)
    proc = run_cli("report", str(copy), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (copy / "index.md").read_text() == (original / "index.md").read_text()


def test_every_committed_report_carries_its_raw_results_under_5_mb():
    folders = committed.reports()
    for folder in folders:
        archive = folder / "results.tar.gz"
        assert archive.is_file(), f"{folder.name} has no raw results"
        assert archive.stat().st_size < 5 * 2**20


def test_environments_are_listed_in_natural_order_within_a_cell():
    """py3.9 before py3.10, equinox 0.13.9 before 0.13.10, whatever order the shuffled rounds ran them in."""
    from gcbench.measuring.plans import Plan
    from gcbench.publishing.report import _in_order

    def doc(backend, env, repeat=0):
        made = results.new(Cell(backend, "vit", "default", repeat, 1, 0, 3, 1, 0, 1), "ok",
                           environment={"spec": env, "name": env})
        return dataclasses.replace(made, cell=f"{backend}__vit__default__r{repeat}__{env}")

    envs_ran = ["py3.10", "py3.9 equinox==0.13.10", "py3.9", "py3.9 equinox==0.13.9"]
    docs = [doc("nnx", e) for e in envs_ran] + [doc("jax", "py3.10", 1), doc("jax", "py3.10", 0)]
    plan = Plan(cells=[d.cell for d in docs])
    ordered = [(d.backend, d.environment["name"], d.repeat) for d in _in_order(docs, plan)]
    assert ordered == [("nnx", "py3.9", 0), ("nnx", "py3.9 equinox==0.13.9", 0), ("nnx", "py3.9 equinox==0.13.10", 0),
                       ("nnx", "py3.10", 0), ("jax", "py3.10", 0), ("jax", "py3.10", 1)]


def test_reasons_show_their_commands_as_code_and_nothing_else_as_markup():
    from markdown_it import MarkdownIt

    from gcbench.publishing.report.document import prose

    render = MarkdownIt("commonmark").disable("html_inline").renderInline
    html = render(prose("no Julia (run `gcbench julia-setup` online) <b>*not bold*</b>"))
    assert "<code>gcbench julia-setup</code>" in html
    assert "`" not in html
    assert "<b>" not in html
    assert "<em>" not in html
    assert "&lt;b&gt;" in html
    assert render(prose("an unpaired ` backtick")) == "an unpaired ` backtick"
    assert "<code>a``b</code>" in render(prose("x ```a``b``` y"))  # backticks inside a span survive


def test_a_ranking_of_several_backends_claims_only_its_two_ends():
    from gcbench.analysing import summary
    from gcbench.publishing.report import findings

    rng = np.random.default_rng(1)
    cells = summary.summarize_all(docs(rng, 3, 10.0) + docs(rng, 3, 10.3, backend="nnx-split")
                                  + docs(rng, 3, 20.0, backend="nnx"))
    ranking = next(s for s in findings.findings(cells) if s.startswith("Median step under"))
    assert re.search(r"`nnx` takes 2\.\d\d x \(95 % [\d.]+-[\d.]+\) the time of `jax` \(the fastest and the slowest "
                     r"median of 3 backends; those between are not ranked\)\.$", ranking)


def test_host_time_gets_its_section_only_where_it_was_recorded(tmp_path):
    rng = np.random.default_rng(8)
    res = tmp_path / "res"
    res.mkdir()
    for d in docs(rng, 3, 10.0, steps=60) + docs(rng, 3, 10.0, steps=60, backend="nnx"):
        if d.backend == "nnx":
            d.host_ns = [w // 4 for w in d.wall_ns]
        results.write(d, res / f"{d.cell}.json")
    md = build_report(res, tmp_path / "rep")["markdown"].read_text()
    assert "## Host and device" in md
    section = md.split("## Host and device")[1].split("\n## ")[0]
    assert "| nnx/mlp/default |" in section
    assert "jax/mlp/default" not in section
    row = next(line for line in section.splitlines() if line.startswith("| nnx/mlp/default |"))
    assert "| 25.0 (" in row
    assert "| 75.0 |" in row
    plain = tmp_path / "plain"
    plain.mkdir()
    for d in docs(rng, 3, 10.0, steps=60):
        results.write(d, plain / f"{d.cell}.json")
    assert "Host and device" not in build_report(plain, tmp_path / "rep2")["markdown"].read_text()


@pytest.mark.parametrize(("lo", "hi"), [(3.0, 400.0), (12.0, 19.0), (101.0, 104.0), (0.02, 2.5)])
def test_every_log_axis_has_three_labelled_ticks_and_says_it_is_logarithmic(tmp_path, lo, hi):
    import matplotlib.pyplot as plt

    from gcbench.publishing.report import plots

    fig, ax = plt.subplots()
    ax.plot([lo, hi], [0, 1])
    plots.log_axis(ax, "x")
    ax.set_xlabel("step, ms")
    plots._finish_log_axes(fig)
    fig.canvas.draw()
    left, right = ax.get_xlim()
    labelled = [t.get_text() for t in ax.get_xticklabels() if left <= t.get_position()[0] <= right and t.get_text()]
    assert len(labelled) >= 3, labelled
    assert ax.get_xlabel() == "step, ms (log scale)"
    plt.close(fig)


def test_no_interval_or_p_value_from_fewer_than_three_processes(tmp_path):
    """Two repeats a cell (the GPU report's design): the report shows the values of the
    processes, and no interval, p-value or verdict rests on them."""
    rng = np.random.default_rng(4)
    folder = tmp_path / "two"
    folder.mkdir()
    cells = docs(rng, 2, 10.0, full_every=40, pause_ms=50) + docs(rng, 2, 10.0, policy="freeze") + \
        docs(rng, 2, 12.0, backend="nnx", full_every=20, pause_ms=60)
    for d in cells:
        results.write(d, folder / f"{d.cell}.json")
    build_report(folder, tmp_path / "report")
    page = (tmp_path / "report" / "index.md").read_text()
    summary = page[page.index("## Summary"):page.index("## Findings")]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and not line.startswith(("| cell", "| ---"))]
    assert rows
    assert all("processes " in row for row in rows)
    assert not any(re.search(r"\(\d[\d.]*-\d|\(-?\d[\d.]* to ", row) for row in rows), rows  # no interval
    findings = page[page.index("## Findings"):page.index("## Plots")]
    assert "p = " not in findings
    assert "95 %" not in findings
    assert "% -" not in findings
    assert "3 or more repeats" in findings  # each claim says why it makes none


@pytest.mark.e2e  # every committed report's plots drawn again, 8 s
def test_every_cumulative_gc_line_of_every_committed_report_stays_inside_its_axes(tmp_path, monkeypatch):
    """Issue 32: a y-limit frozen after the first line cut off the backend that paid most."""
    import matplotlib.figure

    from gcbench.analysing import summary
    from gcbench.publishing import archive
    from gcbench.publishing.report import plots

    drawn = []
    real_savefig = matplotlib.figure.Figure.savefig

    def keep(fig, *a, **kw):
        for ax in fig.axes:
            bottom, top = ax.get_ylim()
            for line in ax.lines:
                y = np.asarray(line.get_ydata(), float)
                if y.size:
                    drawn.append((ax.get_title(), float(y.min()), float(y.max()), bottom, top))
        return real_savefig(fig, *a, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    reports = committed.reports("results.tar.gz")
    assert len(reports) >= 7
    for rep in reports:
        with archive.opened(rep / "results.tar.gz") as folder:
            docs = list(gcbench.load_dir(folder, allow_empty=True))
        cells = summary.summarize_all(docs) if docs else []
        for w in dict.fromkeys(cs.key[1] for cs in cells if cs.ok):
            plots.cumulative_gc_figure([cs for cs in cells if cs.key[1] == w], w, tmp_path / f"{rep.name}-{w}.png")
    assert drawn
    outside = [d for d in drawn if d[1] < d[3] - 1e-9 or d[2] > d[4] + 1e-9]
    assert not outside, outside[:5]


def test_the_env_matrix_names_each_measured_environment_in_version_order(tmp_path, monkeypatch):
    """Issue 45: a grid of 32 slots, 10 filled, with unnamed stacked versions became one row per
    measured environment, named, Python then versions ascending, each with its interval."""
    import matplotlib.figure

    from gcbench.analysing import summary
    from gcbench.publishing import archive
    from gcbench.publishing.report import environments, plots

    seen = []

    def capture(fig, *a, **kw):
        seen.append([([t.get_text() for t in ax.get_yticklabels()], [len(line.get_xdata()) for line in ax.lines])
                     for ax in fig.axes])

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    with archive.opened(ROOT / "reports/cpu-vit-env-matrix/results.tar.gz") as folder:
        docs = gcbench.load_dir(folder)
    keys = [p for p in environments.KEY_PACKAGES if p in environments.differing(environments.environments(docs))]
    assert keys[:2] == ["jax", "jaxlib"]
    envs = {d.environment["name"] for d in docs if d.status == "ok"}

    with pytest.raises(UsageError):  # savefig wrote nothing: the capture is all there is
        plots.env_matrix_figure(summary.summarize_all(docs), "vit", tmp_path / "m.png", keys)
    (rows, lines), (second, _) = seen[0][0], seen[0][1]
    rows = rows[::-1]  # drawn top to bottom
    assert len(rows) == len(envs)
    assert second[::-1] == rows
    assert [r.split("  ")[0] for r in rows] == sorted(r.split("  ")[0] for r in rows)  # Python ascending
    jax = [r.split("  ")[1] for r in rows if r.startswith("Python 3.11")]
    assert jax[0] == "jax 0.4.38"
    assert jax.index("jax 0.8.0") < jax.index("jax 0.10.2")
    assert lines.count(2) == len(rows)  # an interval (a two-point line) on every row
    one_env = [d for d in docs if d.environment["name"] == docs[0].environment["name"]]
    assert plots.env_matrix_figure(summary.summarize_all(one_env), "vit", tmp_path / "n.png", keys) is None


def test_repeats_with_different_settings_are_refused_not_pooled(tmp_path):
    long = docs(np.random.default_rng(1), 2, 10.0, steps=400)
    short = docs(np.random.default_rng(2), 2, 10.0, steps=5)
    folder = write_documents(tmp_path / "mix", [long[0], short[1]])
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")],
                 ["compare", str(folder), str(copy_of(folder))]):
        assert_one_line_error(run_cli(*args), "jax/mlp/default", "differ in steps", "400 in repeat 0",
                              "5 in repeat 1")
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("text", ["# Injected", "## also", "- item", "+ item", "1. first", "3) third", "---",
                                  "===", "~~~ fence", "  # indented"])
def test_text_that_would_start_a_block_stays_text(tmp_path, text):
    md = document.to_markdown([document.Para(document.escape(text)),
                               document.Bullets([document.escape(text), "files changed: x"])])
    html = document.to_html(md, "t", tmp_path)
    for tag in ("<h1", "<h2", "<ol", "<hr", "<pre", "<h3"):
        assert tag not in html.split("<body>")[-1], (text, md)
    assert html.count("<li>") == 2  # the two bullets, no list inside them


def test_a_plan_with_fewer_labels_than_cells_reports(tmp_path):
    folder = ok_results_folder(tmp_path / "res")
    plan = {"format": "gcbench-suite", "schema_version": 2, "state": "interrupted",
            "cells": ["jax__mlp__default__r0", "jax__mlp__default__r1", "jax__mlp__default__r2"],
            "labels": ["jax/mlp/default r0"]}
    (folder / "suite.json").write_text(json.dumps(plan))
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    assert (
        "never ran: the run was interrupted first | 1 | jax\\_\\_mlp\\_\\_default\\_\\_r2"
        in (tmp_path / "rep" / "index.md").read_text()
    )


def test_repeats_counting_different_generations_are_one_line(tmp_path):
    ds = docs(np.random.default_rng(1), 3, 10.0, steps=40)
    ds[1].gc_collections = [row[:2] for row in ds[1].gc_collections]
    folder = write_documents(tmp_path / "res", ds)
    for args in (["report", str(folder), "--out", str(tmp_path / "rep")],
                 ["compare", str(folder), str(copy_of(folder))]):
        assert_one_line_error(run_cli(*args), "differ in collector generations")


def test_a_bad_archive_member_is_named_in_the_archive(tmp_path):
    folder = tmp_path / "rep"
    folder.mkdir()
    with tarfile.open(folder / "results.tar.gz", "w:gz") as tar:
        path = tmp_path / "jax__mlp__default__r0.json"
        path.write_text('{"format": "gcbench-result", "schema_version": 99}')
        tar.add(path, arcname=path.name)
    proc = run_cli("report", str(folder), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, f"{folder / 'results.tar.gz'}, member jax__mlp__default__r0.json")
    assert "gcbench-results-" not in proc.stderr


def _marker_listing(folder: pathlib.Path, name: str) -> None:
    digest = __import__("hashlib").sha256((folder / name).read_bytes()).hexdigest()
    (folder / ".gcbench-report.json").write_text(json.dumps(
        {"format": "gcbench-report-folder", "version": 2,
         "files": {name: {"size": (folder / name).stat().st_size, "sha256": digest}}}))


@pytest.mark.parametrize("name", ["thesis.md", "photo.png", "backup.tar.gz", "notes.html"])
def test_a_marker_listing_a_users_file_is_refused_and_the_file_stays(tmp_path, name):
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / name).write_text("the user's own")
    _marker_listing(rep, name)
    res = ok_results_folder(tmp_path / "res")
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "not a file gcbench writes")
    assert (rep / name).read_text() == "the user's own"


def test_a_users_folder_named_like_staging_is_never_removed(tmp_path):
    rep = tmp_path / "rep"
    (rep / ".gcbench-staging-x").mkdir(parents=True)
    (rep / ".gcbench-staging-x" / "draft.txt").write_text("mine")
    (rep / ".gcbench-staging-1-abc").mkdir()  # a process 1 that is alive: not a killed report's
    res = ok_results_folder(tmp_path / "res")
    assert_one_line_error(run_cli("report", str(res), "--out", str(rep)), "holds files gcbench did not write")
    assert (rep / ".gcbench-staging-x" / "draft.txt").read_text() == "mine"
    assert (
        rep / ".gcbench-staging-1-abc"
    ).is_dir()


def test_a_killed_reports_staging_folder_is_swept(tmp_path):
    rep = tmp_path / "rep"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = rep / f".gcbench-staging-{dead.pid}-k1ll3d"
    stale.mkdir(parents=True)
    (stale / "index.md").write_text("half a report")
    res = ok_results_folder(tmp_path / "res")
    proc = run_cli("report", str(res), "--out", str(rep))
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists()
    assert (rep / "index.md").is_file()


def test_the_trace_draws_only_cells_with_full_collections_and_their_pauses(tmp_path, monkeypatch):
    """Issue 45: no panel without an event; each pause a dot at its own length (not a segment
    that reads as a dip); the median step drawn and labelled; the cells left out named."""
    import matplotlib.figure

    from gcbench.analysing import summary
    from gcbench.publishing.report import plots

    seen = []

    def capture(fig, *a, **kw):
        seen.append({"title": fig.get_suptitle(), "panels": [
            {"title": ax.get_title(loc="left"), "dots": [c.get_offsets().data.copy() for c in ax.collections],
             "texts": [t.get_text() for t in ax.texts], "wall": ax.lines[0].get_ydata()}
            for ax in fig.axes if ax.axison]})
        pathlib.Path(a[0]).write_bytes(b"png")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    cells = summary.summarize_all(gcbench.load_dir(make_results(tmp_path / "res")))
    paths = plots.trace_figures([cs for cs in cells if cs.key[1] == "mlp"], "mlp", tmp_path)
    assert [p.name for p in paths] == ["trace_mlp.png"]
    (fig,) = seen
    assert len(fig["panels"]) == 1
    assert re.fullmatch(r"jax / default, r1: 15 full, median 1\d\.\d ms",
                                                     fig["panels"][0]["title"])
    title = " ".join(fig["title"].split())  # wrapped to the room the legend leaves
    assert "not drawn: jax / disable (median" in title
    assert "nnx / default (median" in title
    panel = fig["panels"][0]
    (dots,) = panel["dots"]
    assert len(dots) == 15
    assert all(dots[:, 1] < panel["wall"][dots[:, 0].astype(int)] + 1e-9)
    assert abs(float(np.median(dots[:, 1])) - 30) < 5  # the simulated 30 ms pauses, at their own length
    assert float(panel["title"].split("median ")[1][:-3]) == pytest.approx(np.median(panel["wall"]), rel=0.01)
    quiet = [cs for cs in cells if cs.key[1] == "mlp" and cs.key[0] == "nnx"]
    assert plots.trace_figures(quiet, "mlp", tmp_path) == []


def test_the_why_figure_draws_the_tables_promotions_on_one_scale(monkeypatch):
    """Issue 45: bars of 2,000-4,000 beside a table that said 922: promotions come in bursts,
    so the figure draws the table's own figure (the mean over the steps) as a labelled line,
    every row on one scale."""
    import matplotlib.figure

    from gcbench.analysing import gc_causes
    from gcbench.publishing import archive
    from gcbench.publishing.report import plots

    seen = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **kw: seen.append(
        [(ax.get_ylabel(), [line.get_ydata()[0] for line in ax.lines], [t.get_text() for t in ax.texts],
          ax.get_ylim()) for ax in fig.axes]))
    with archive.opened(ROOT / "reports/cpu-vit-bisect-equinox-commits/results.tar.gz") as folder:
        docs = gcbench.load_dir(folder)
        expl = [gc_causes.derive(e, docs, tests=False) for e in gc_causes.load(folder)]
    with pytest.raises(UsageError):  # savefig wrote nothing
        plots.why_figure(expl, pathlib.Path("/nonexistent-gcbench/why.png"))
    left = [ax for ax in seen[0] if ax[0].startswith("objects promoted")]
    assert len(left) == len(expl) >= 2
    for (_, lines, texts, _), e in zip(left, expl, strict=True):
        mean = e.full_interval.promoted_per_step
        assert lines == [pytest.approx(mean)]
        assert texts == [f"mean {wording.fmt(mean)} a step (the table's figure)"]
    assert len({ylim for *_, ylim in left}) == 1


def test_series_labels_leave_out_what_every_series_shares():
    from gcbench.publishing.report.plots import series_label

    among = [("equinox-filter", "py3.11 equinox@9b609e4bf +18-pinned-83874b"),
             ("equinox-filter", "py3.11 equinox@d2f35f8df jax==0.8.0")]
    assert series_label(among[1], among) == "equinox@d2f35f8df jax==0.8.0"
    assert series_label(among[0], among) == "equinox@9b609e4bf\n+18-pinned-83874b"  # wrapped at 34
    two = [*among, ("nnx", "py3.11 flax@1")]
    assert series_label(two[2], two) == "nnx [flax@1]"
    assert series_label(("jax", ""), [("jax", ""), ("nnx", "")]) == "jax"
    assert series_label(among[0]) == "equinox-filter [py3.11 equinox@9b609e4bf +18-pinned-83874b]"


@pytest.mark.parametrize("where", ["after mkdir", "as the unpacked archive goes"])
def test_an_interrupt_at_either_end_of_a_first_build_leaves_no_folder(tmp_path, monkeypatch, where):
    """Seen beside two busy processes: a Ctrl-C that lands just after the report folder is made,
    or while the unpacked archive is removed once the report is done, left the folder."""
    import contextlib

    from gcbench.core import files
    from gcbench.publishing import archive

    source = make_results(tmp_path / "res")
    if where == "after mkdir":
        real = files.make_folder

        def make_then_interrupt(path, what="output folder"):
            real(path, what)
            raise KeyboardInterrupt

        monkeypatch.setattr(files, "make_folder", make_then_interrupt)
    else:
        real_opened = archive.opened

        @contextlib.contextmanager
        def opened_then_interrupt(src):
            with real_opened(src) as folder:
                yield folder
            raise KeyboardInterrupt

        monkeypatch.setattr(archive, "opened", opened_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        build_report(source, tmp_path / "rep")
    assert not (tmp_path / "rep").exists()
    monkeypatch.undo()
    build_report(source, tmp_path / "rep")  # a complete build afterwards, into the same place
    assert (tmp_path / "rep" / "index.html").is_file()


def test_a_memory_report_answers_the_gather_question_first():
    from gcbench.measuring import program_memory
    from gcbench.publishing import archive
    from gcbench.publishing.report import memory_answer

    with archive.opened(ROOT / "reports/reproductions/results.tar.gz") as folder:
        doc = program_memory.load(folder)
    answer = memory_answer(doc)
    gathers = doc.gathers()
    lo, hi = min(r.gradient_over_forward for r in gathers), max(r.gradient_over_forward for r in gathers)
    assert answer.startswith(f"The gradient of a gather takes {lo:.2f}-{hi:.2f} x the memory of its forward program "
                             f"over {len(gathers)} cases")
    with pytest.raises(UsageError, match="malformed case"):  # a malformed case: one line, as it is read
        program_memory.read({"cases": [{"kind": "gather"}]}, "memory.json")


def test_the_full_collections_table_gives_the_share_the_verdict_goes_by():
    """On a loaded machine the verdict says every GC share below is of CPU time; the table of
    the cells with full collections gave the wall-time share under a bare "GC share". It
    gives the share the verdict goes by, and says which."""
    from gcbench.analysing import summary
    from gcbench.publishing.report import findings
    from simulate import docs

    rng = np.random.default_rng(58)
    loaded = docs(rng, 3, 16.0, full_every=50, pause_ms=5)
    for d in loaded:  # beside a process using 1.3 of 2 cores; the thread's CPU time a third under the wall
        d.machine_state.update(cpu_count=2, others_cores=1.3, steal=0.0, load_seconds=3.0)
        d.cpu_ns = [int(w * 2 / 3) for w in d.wall_ns]
        d.gc_cpu_ns = list(d.gc_ns)
    cells = summary.summarize_all(loaded)
    s = cells[0].measured
    assert s.gc_share_cpu is not None
    assert s.gc_share_cpu > 1.3 * s.gc_share
    table = findings.full_table(cells)
    assert table.header[-1] == "GC share of CPU time"
    assert table.rows[0][-1].startswith(f"{100 * s.gc_share_cpu:.2f} %")
    quiet = summary.summarize_all(docs(rng, 3, 16.0, full_every=50, pause_ms=5))
    assert findings.full_table(quiet).header[-1] == "GC share of wall time"


def test_a_trace_names_an_environment_by_what_it_resolved_and_a_file_holds_at_most_four_rows():
    """Issue 69: "[py3.11]" hid which jax and equinox ran (its spec pinned nothing); a trace
    panel now names the Python and the resolved versions of the packages that differ; eight
    rows of panels made a 2,595 px figure, four is the most a file holds now."""
    import numpy as np

    import simulate
    from gcbench.analysing import summary
    from gcbench.measuring import results
    from gcbench.publishing.report import plots

    docs = [results.validate(d) for d in simulate.docs(np.random.default_rng(0), full_every=40, pause_ms=3.0)]
    for d in docs:
        d.environment = {"spec": "python=3.11", "name": "py3.11", "python": "3.11.7",
                         "packages": {"jax": "0.10.2", "jaxlib": "0.10.2", "equinox": "0.13.8"}}
    cell = summary.summarize_all(docs)[0]
    assert plots.resolved_label(cell, ["jax", "jaxlib", "equinox"]) == "jax [py3.11 jax 0.10.2 equinox 0.13.8]"
    assert plots.resolved_label(cell, []) is None


def test_traces_of_many_cells_are_split_into_files_a_screen_or_so_tall(tmp_path):
    import numpy as np
    from PIL import Image

    import simulate
    from gcbench.analysing import summary
    from gcbench.publishing.report import plots

    rng = np.random.default_rng(1)
    docs = [results.validate(d) for b in ("jax", "jax-vmap", "equinox-filter", "equinox-partition", "nnx", "nnx-split")
            for gc in ("default", "freeze") for d in simulate.docs(rng, backend=b, policy=gc, full_every=30,
                                                                   pause_ms=3.0)]
    files = plots.trace_figures(summary.summarize_all(docs), "mlp", tmp_path)
    assert len(files) == 2  # twelve panels, eight a file
    assert max(Image.open(f).size[1] for f in files) < 1400
