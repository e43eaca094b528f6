"""Every code block in README and docs/ runs (issue 68, item 2): Python blocks executed,
each in a fresh process with the user's own objects (a jitted step, its batches) defined
before it, a GC budget's test run by pytest; every command of a shell block parsed by
gcbench's own parser (and its checks of each value), every extra a `pip install` names
one the package has; a TOML suite loaded as `gcbench run --suite` loads it. A block no
rule covers fails here, so a new one is run or checked as it is written."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


@dataclasses.dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(lang: str) -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                found.append(Block(page.relative_to(ROOT).as_posix(), text.count("\n", 0, m.start()) + 1, lang,
                                   m.group(2)))
    return found


# -- Python: run ------------------------------------------------------------------------

# The user's own objects the blocks use: a jitted step (one argument: the loss; two: the
# state and the loss), its batches, a loader worker's source and transform, and a GC
# budget's step (which keeps nothing)
USER = '''
import gcbench
import jax
import jax.numpy as jnp


@jax.jit
def _update(w, x):
    loss, grad = jax.value_and_grad(lambda w: jnp.sum((w * x) ** 2))(w)
    return w - 0.01 * grad, loss


state = jnp.ones(16)
batches = loader = [jnp.full(16, i / 10) for i in range(12)]
dataset, transform = range(40), lambda raw: [[raw]] * 8


def train_step(*args):
    return _update(state, args[0])[1] if len(args) == 1 else _update(*args)


def make_step():
    return lambda: sum(range(200))


step = make_step()
'''


def _is_budget_test(block: Block) -> bool:
    return "def test_" in block.text and "gc_budget" in block.text


PYTHON = _blocks("python")


@pytest.mark.e2e
@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_every_python_block_runs(block, tmp_path):
    """Run as written, in a fresh process in an empty folder; what it saves is a result
    gcbench reads back."""
    if _is_budget_test(block):
        (tmp_path / "test_block.py").write_text(USER + "\n\n" + block.text)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "-p", "no:randomly", "test_block.py"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, f"{block}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        assert "1 passed" in proc.stdout, proc.stdout
        return
    (tmp_path / "user_objects.py").write_text(USER)
    (tmp_path / "block.py").write_text(block.text)  # as written: a module's docstring and __future__ first
    run = "import runpy, user_objects; runpy.run_path('block.py', vars(user_objects).copy(), '__main__')"
    proc = subprocess.run([sys.executable, "-c", run], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{block}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    import gcbench

    for folder in re.findall(r'(?:save\(|out=)"([^"]+)"', block.text):  # m.save(...), RunOptions(out=...)
        docs = gcbench.load_dir(str(tmp_path / folder))
        assert docs, f"{block}: nothing saved in {folder}"
        assert all(d.status == "ok" and len(d.wall_ns) > 0 for d in docs), folder
    if "print(m)" in block.text:
        assert "full collections" in proc.stdout, proc.stdout


def test_the_python_blocks_are_found_and_each_is_a_script_or_a_budget_test():
    assert len(PYTHON) >= 8, [str(b) for b in PYTHON]
    for block in PYTHON:
        compile(block.text, str(block), "exec")  # a syntax error fails here, in the quick tier
    assert sum(map(_is_budget_test, PYTHON)) >= 3


# -- shell: every command checked -------------------------------------------------------

EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
SEPARATORS = {";", "&&", "||", "|", "do", "done", "then", "fi"}


def _commands(text: str) -> list[list[str]]:
    """The commands of a shell block: continuations joined, comments dropped, split at
    `;`, `&&`, `|` and a loop's `do`/`done`; a `for` header and a `...` placeholder dropped."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token in SEPARATORS:
                if words and words[0] != "for":
                    commands.append(words)
                words = []
            elif token != "...":  # noqa: S105 (a placeholder, not a password)
                words.append(token)
    return commands


def _parse_gcbench(argv: list[str]) -> str | None:
    """None where gcbench's parser takes `argv` with every value's check, each option named
    in full (argparse would take a prefix: a page names the option); else why not."""
    from gcbench import cli
    from gcbench.core.errors import UsageError

    parser = cli.build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as e:
        if e.code:
            return f"the parser exits {e.code}"
    except UsageError as e:
        return str(e)
    command = next((w for w in argv if not w.startswith("-")), None)
    options = parser._option_string_actions
    if command is not None:
        options = {**options, **parser._subparsers._group_actions[0].choices[command]._option_string_actions}
    abbreviated = [w for w in argv if w.startswith("--") and w.split("=", 1)[0] not in options]
    return f"options not named in full: {abbreviated}" if abbreviated else None


def _extras(words: list[str]) -> set[str]:
    return {extra for w in words for group in re.findall(r"\[([a-z0-9,\-]+)\]", w) for extra in group.split(",")}


def _check(command: list[str]) -> str | None:
    """None where the command is one the page may show; else what is wrong with it."""
    program = command[0].rsplit("/", 1)[-1]
    if program == "gcbench":
        return _parse_gcbench(command[1:])
    if program in ("python", "python3") and command[1:3] == ["-m", "gcbench"]:
        return _parse_gcbench(command[3:])
    if program == "pip" and command[1:2] == ["install"]:
        unknown = _extras(command) - EXTRAS
        return f"extras the package has not: {sorted(unknown)}" if unknown else None
    if program in ("python", "python3"):
        if command[1:3] in (["-m", "venv"], ["-m", "pytest"]) or command[1].endswith(".py"):  # a user's script
            return None
    if program == "julia":
        project = next((w.split("=", 1)[1] for w in command if w.startswith("--project=")), ".")
        included = re.findall(r'include\("([^"]+)"\)', " ".join(command))
        missing = [p for p in [f"{project}/Project.toml", *included] if not (ROOT / p).is_file()]
        return f"no {missing}" if missing else None
    return f"no rule checks {program!r}"


SHELL = _blocks("sh")


@pytest.mark.parametrize("block", SHELL, ids=str)
def test_every_shell_command_is_one_gcbench_takes(block):
    commands = _commands(block.text)
    assert commands, block
    wrong = {" ".join(c): why for c in commands if (why := _check(c)) is not None}
    assert not wrong, f"{block}: {wrong}"


def test_a_misspelt_option_or_value_in_a_shell_block_is_caught():
    """The checks can fail: an option the parser lacks, a --fail-on value it refuses, an
    extra the package lacks, a program no rule knows."""
    assert _check(["gcbench", "run", "--backend", "jax"]) is not None  # a prefix argparse would take
    assert _check(["gcbench", "run", "--backendz", "jax"]) is not None
    assert _check(["gcbench", "--version"]) is None
    assert _check(["gcbench", "compare", "a", "b", "--fail-on", "slower-run,more-memroy"]) is not None
    assert _check(["pip", "install", "gcbench[jaxx] @ git+https://github.com/gcbench/gcbench@main"]) is not None
    assert _check(["curl", "https://example.org"]) is not None
    assert _commands("for i in 1 2; do python a.py; gcbench list; done  # three") == [
        ["python", "a.py"], ["gcbench", "list"]]


# -- TOML: a suite ----------------------------------------------------------------------

@pytest.mark.parametrize("block", _blocks("toml"), ids=str)
def test_every_toml_block_is_a_suite_gcbench_loads(block, tmp_path):
    from gcbench.running.config import load_suite

    path = tmp_path / "suite.toml"
    path.write_text(block.text)
    suite = load_suite(str(path)).validate()
    assert suite.backends, block
    assert suite.workloads, block


def test_no_block_goes_unchecked():
    """Every fenced block's language is one a test here runs or checks, or one that other
    tests hold: yaml (tests/test_gate_action.py runs the workflow's steps), text (docs/cli.md,
    the parser's own help, tests/test_docs.py) and the layout's drawing (tests/test_layout.py)."""
    held_elsewhere = {"yaml", "text", ""}
    langs = {m.group(1) for page in PAGES for m in FENCE.finditer(page.read_text())}
    assert langs <= {"python", "sh", "toml"} | held_elsewhere, langs

