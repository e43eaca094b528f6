"""The gc-gate action on a user's own script (issue 67): a small git repository with a
training-step script, its base against its head run in one job as the action runs them
(its shell steps, here, with bash -eo pipefail as a runner does), a change that keeps a
record a step failing the gate with its reason in the job's summary, an unchanged head
passing."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if not (ROOT / ".github").is_dir():
    pytest.skip("reads the repository's .github, which an sdist leaves out", allow_module_level=True)
ACTION = yaml.safe_load((ROOT / ".github" / "actions" / "gc-gate" / "action.yml").read_text())

SCRIPT = '''
import gcbench
from model import step

history = []
m = gcbench.measure("train-step", warmup=20)
with m:
    for i in range(3000):
        with m.step():
            step(i, history)
m.save()
'''

MODEL = '''
def step(i, history):
    garbage = [[] for _ in range(50)]
    for g in garbage:
        g.append(g)
    history.append(i)  # KEPT
'''


def _git(repo: pathlib.Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _repo(tmp_path: pathlib.Path, kept: str) -> pathlib.Path:
    """A project whose base keeps an int a step and whose head keeps `kept`."""
    repo = tmp_path / "project"
    (repo / "bench").mkdir(parents=True)
    (repo / "bench" / "train_step.py").write_text(SCRIPT)
    (repo / "bench" / "model.py").write_text(MODEL)
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=u", "add", "-A")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=u", "commit", "-qm", "base")
    (repo / "bench" / "model.py").write_text(MODEL.replace("history.append(i)  # KEPT", kept))
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=u", "commit", "-qam", "head")
    return repo


def run_action(repo: pathlib.Path, summary: pathlib.Path, **given: str) -> subprocess.CompletedProcess:
    """The action's shell steps in order, each as a runner runs a `shell: bash` step, its
    `${{ inputs.x }}` the given input or the default; the first failing step ends the job."""
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    inputs.update({k.replace("_", "-"): v for k, v in given.items()})

    def value(expr: str) -> str:
        return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], str(expr))

    bin_dir = str(pathlib.Path(sys.executable).parent)
    proc = None
    for step in ACTION["runs"]["steps"]:
        if "run" not in step:
            continue  # the artifact upload: GitHub's own action
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"], "GITHUB_STEP_SUMMARY": str(summary),
               **{k: value(v) for k, v in (step.get("env") or {}).items()}}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            return proc
    assert proc is not None
    return proc


def _gate(tmp_path: pathlib.Path, kept: str) -> tuple[subprocess.CompletedProcess, str, pathlib.Path]:
    """The action, as a pull request's job runs it, on a project whose head keeps `kept`."""
    repo = _repo(tmp_path, kept)
    summary = tmp_path / "summary.md"
    proc = run_action(repo, summary, script="bench/train_step.py", base="HEAD~1", head="HEAD", repeats="3")
    said = summary.read_text()
    assert said.count("```") == 2, said  # the fence opened and closed, whatever the exit
    return proc, said, repo


@pytest.mark.e2e
def test_the_gate_fails_a_head_that_keeps_a_record_a_step_and_says_why_in_the_summary(tmp_path):
    proc, said, repo = _gate(tmp_path, 'history.append({"step": i, "loss": [0.5]})  # a record a step, tracked')
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert said.rstrip().splitlines()[-1].startswith("**gc-gate FAILED** (exit 1): gcbench: --fail-on ")
    assert "more retained" in said
    assert "user/train-step/default" in said
    assert (repo / "results" / "gc-gate" / "base").is_dir()
    assert (repo / "results" / "gc-gate" / "head").is_dir()


@pytest.mark.e2e
def test_the_gate_passes_an_unchanged_head(tmp_path):
    proc, said, _ = _gate(tmp_path, "history.append(i)  # the same step, a comment changed")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert said.rstrip().splitlines()[-1].startswith("**gc-gate passed**")


def test_a_gate_without_script_or_baseline_is_refused_in_one_line(tmp_path):
    proc = run_action(tmp_path, tmp_path / "summary.md")
    assert proc.returncode == 1
    assert "::error::gc-gate: give script" in proc.stdout


@pytest.mark.parametrize(("body", "said"), [
    ("raise SystemExit('no data here')", "exited with 1: no data here"),
    ("import gcbench\nwith gcbench.measure('x') as m:\n    with m.step():\n        pass\n", "saved no result"),
    ("print('hello')", "saved no result"),
])
def test_a_script_that_fails_or_saves_nothing_is_one_line_and_exit_2_with_what_ran_kept(tmp_path, body, said):
    from conftest import run_cli

    good = tmp_path / "good.py"
    good.write_text("import gcbench\nm = gcbench.measure('x')\nwith m:\n    for _ in range(50):\n"
                    "        with m.step():\n            pass\nm.save()\n")
    out = tmp_path / "out"
    ok = run_cli("run", "--script", str(good), "--repeats", "2", "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    assert len(list(out.glob("*.json"))) == 2
    bad = tmp_path / "bad.py"
    bad.write_text(body)
    proc = run_cli("run", "--script", str(bad), "--repeats", "2", "--out", str(out), "--force")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert said in lines[0]
    assert len(list(out.glob("*.json"))) == 2  # what ran before is kept


def test_script_options_go_with_script_only(tmp_path):
    from conftest import run_cli

    proc = run_cli("run", "--base", "main", "--head", "HEAD", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "go with --script" in proc.stderr
    script = tmp_path / "s.py"
    script.write_text("")
    proc = run_cli("run", "--script", str(script), "--base", "main", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert "--base and --head go together" in proc.stderr
