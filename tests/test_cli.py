"""What a user sees at the command line: clear one-line errors with exit code 2."""

import json
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import TINY_RUN, assert_one_line_error, ok_results_folder, run_cli, write_mnist
from gcbench import __version__
from gcbench.measuring import mnist as datamod


@pytest.mark.parametrize(("args", "fragments"), [
    (["--backends", "pytorch"], ["unknown backend 'pytorch'", "valid backends: jax"]),
    (["--workloads", "resnet"], ["unknown workload 'resnet'", "mlp, lenet5, vit"]),
    (["--gc", "sometimes"], ["unknown GC policy 'sometimes'", "manual:K"]),
    (["--gc", "manual:0"], ["manual:K needs a positive integer"]),
    (["--steps", "0"], ["steps must be an integer from 1"]),
    (["--steps", "-5"], ["steps must be an integer from 1"]),
    (["--steps", "many"], ["invalid int value: 'many'"]),
    (["--steps", "1000000000"], ["steps must be an integer from 1 to 10,000,000"]),
    (["--networks", "0"], ["networks for mlp must be an integer from 1"]),
    (["--batch-size", "0"], ["batch_size must be an integer from 1"]),
    (["--repeats", "0"], ["repeats must be an integer from 1"]),
    (["--timeout", "nan"], ["timeout must be a positive, finite number"]),
    (["--timeout", "inf"], ["timeout must be a positive, finite number"]),
    (["--suite", "nosuch"], ["no suite 'nosuch'", "default, quick"]),
    (["--resume", "--force"], ["exclude each other"]),
])
def test_bad_run_arguments(args, fragments):
    assert_one_line_error(run_cli("run", *args), *fragments)


def test_output_folder_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    assert_one_line_error(run_cli("run", "--steps", "5", "--out", str(target)), "exists and is not a folder")


def test_truncated_idx_names_the_file(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.IMAGES
    path.write_bytes(path.read_bytes()[:1000])
    assert_one_line_error(run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "out")),
                       str(path), "truncated")


def test_wrong_magic_idx_names_the_file(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.LABELS
    path.write_bytes(b"PK\x03\x04" + path.read_bytes()[4:])
    assert_one_line_error(run_cli("run", "--data", str(tmp_path), "--out", str(tmp_path / "o")),
                       str(path), "not an IDX file", "expected")


def test_unknown_command_and_no_command():
    assert_one_line_error(run_cli("frobnicate"), "invalid choice")
    assert_one_line_error(run_cli(), "required")


def test_version_names_the_commit_of_a_git_checkout():
    proc = run_cli("--version")
    repo = pathlib.Path(__file__).resolve().parent.parent
    if shutil.which("git") and (repo / ".git").exists():
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        assert re.fullmatch(rf"gcbench {re.escape(__version__)} \(commit {head[:12]}\+?\)", proc.stdout.strip())
    else:
        assert proc.stdout.strip() == f"gcbench {__version__}"
    assert proc.returncode == 0


@pytest.mark.parametrize(("content", "fragment"), [
    ('backends = ["jax"]\nstepz = 4\n', "unknown keys stepz"),
    ("gc = 5\n", "gc must be a list of names"),
    ("backends = 5\n", "backends must be a list of names"),
    ("timeout = true\n", "timeout must be a positive"),
    ("warmup = true\n", "warmup must be an integer"),
    ("steps = 99999999999999999999\n", "steps must be an integer from 1 to 10,000,000"),
    ('name = "../../x"\n', "suite name must be"),
    ("alloc_blocks = 1\n", "alloc_blocks must be true or false"),
    ('bookkeeping = "lots"\n', "bookkeeping must be one of none, metrics"),
    ("[batch_size]\nresnet = 4\n", "unknown workload 'resnet'"),
    ("[networks]\nmlp = 1.5\n", "networks for mlp must be an integer"),
])
def test_bad_suite_files_are_one_line(tmp_path, content, fragment):
    path = tmp_path / "s.toml"
    path.write_text(content)
    assert_one_line_error(run_cli("run", "--suite", str(path), "--out", str(tmp_path / "o")), str(path), fragment)
    assert not (tmp_path / "o").exists()


def test_a_suite_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "s.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    assert_one_line_error(run_cli("run", "--suite", str(path)), "not a UTF-8")


def test_gc_as_one_string_is_a_list_of_one(tmp_path):
    from gcbench.running import config

    path = tmp_path / "s.toml"
    path.write_text('gc = "default"\nbackends = "jax"\nbatch_size = 32\n[networks]\nmlp = 2\n')
    suite = config.load_suite(str(path))
    assert suite.gc == ["default"]
    assert suite.backends == ["jax"]
    assert [c.batch_size for c in suite.cells()][:1] == [32]


def test_per_workload_batch_sizes(tmp_path):
    from gcbench.running import config

    path = tmp_path / "s.toml"
    path.write_text('backends = ["jax"]\nworkloads = ["mlp", "vit"]\nrepeats = 1\n[batch_size]\nvit = 16\n')
    cells = config.load_suite(str(path)).cells()
    assert {c.workload: c.batch_size for c in cells} == {"mlp": 128, "vit": 16}


def test_the_plan_interleaves_repeats_in_seeded_rounds():
    from gcbench.running import config

    suite = config.Suite(backends=["jax", "nnx"], workloads=["mlp", "lenet5"], gc=["default", "disable"],
                         repeats=3).validate()
    cells = suite.cells()
    assert [c.repeat for c in cells] == [0] * 8 + [1] * 8 + [2] * 8
    rounds = [[c.label.rsplit(" r", 1)[0] for c in cells[i:i + 8]] for i in (0, 8, 16)]
    assert sorted(rounds[0]) == sorted(rounds[1]) == sorted(rounds[2])
    assert rounds[0] != rounds[1] or rounds[1] != rounds[2]  # shuffled, round by round
    assert [c.id for c in suite.cells()] == [c.id for c in cells]  # the same seed, the same order


def test_a_plan_that_cannot_fit_in_memory_is_refused(tmp_path):
    # the largest plan gcbench accepts: about 2.4 TiB of batch schedule, more than any machine has
    proc = run_cli("run", "--backends", "jax", "--workloads", "mlp", "--steps", "10000000", "--batch-size", "65536",
                   "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "would need about", "is available", "fewer --steps or --networks")
    assert not (tmp_path / "o").exists()


def test_list_shows_backends_workloads_and_policies():
    proc = run_cli("list")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "jax" in out
    assert "available" in out
    assert "44,426 params/network" in out
    assert "4,992 params/network" in out
    for policy in ("default", "freeze", "disable", "manual:K"):
        assert policy in out


def test_list_json():
    doc = json.loads(run_cli("list", "--json").stdout)
    names = {b["name"]: b for b in doc["backends"]}
    assert names["jax"]["available"]
    assert (names["flux"]["available"] or names["flux"]["reason"])
    assert {w["name"]: w["params_per_network"] for w in doc["workloads"]} == {
        "mlp": 4992,
        "lenet5": 44426,
        "vit": 27978,
    }
    assert [p["name"] for p in doc["gc_policies"]] == ["default", "freeze", "disable", "manual:K"]
    suites = {s["name"]: s for s in doc["suites"]}
    assert {"default", "quick"} <= set(suites)
    from gcbench.running import config

    quick = config.load_suite("quick")
    assert (suites["quick"]["repeats"], suites["quick"]["steps"]) == (quick.repeats, quick.steps)
    assert 0 < suites["quick"]["cells"] <= len(list(quick.combinations())) < suites["default"]["cells"]
    assert all(s["description"].endswith(".") and "\n" not in s["description"] for s in suites.values())


def test_help_says_each_default_and_takes_it_from_the_suite():
    """`run --help` ends each option with its default, and the defaults are the suite's own
    (what `run` with no options runs), so help and behaviour cannot disagree."""
    from gcbench.running import config

    out = " ".join(run_cli("run", "--help").stdout.split())
    default, quick = config.load_suite("default"), config.load_suite("quick")
    assert f"(default: the suite's: {default.steps} in default; {quick.steps} in quick)" in out
    assert f"(default: the suite's: {default.warmup} in default; {quick.warmup} in quick)" in out
    assert "(default: default)" in out  # --suite
    explain = " ".join(run_cli("explain", "--help").stdout.split())
    assert "(default:" in explain


def test_memory_bad_size_leaves_no_folder(tmp_path):
    assert_one_line_error(run_cli("memory", "--size", "foo", "--out", str(tmp_path / "m")), "bad size 'foo'")
    assert not (tmp_path / "m").exists()


def test_help_and_version_load_no_command_module():
    """`gcbench --help` and `--version` import neither numpy nor scipy: the other commands
    are named by their line of help."""
    import subprocess
    import sys

    code = ("import sys\nfrom gcbench import cli\nfor argv in (['--help'], ['--version']):\n    try:\n"
            "        cli.main(argv)\n    except SystemExit:\n        pass\n"
            "print('LOADED', sorted(m for m in ('numpy', 'scipy', 'msgspec') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LOADED []" in proc.stdout, proc.stdout[-500:] + proc.stderr[-500:]
    assert "julia-setup" in proc.stdout
    assert "gcbench 0." in proc.stdout


def test_each_commands_line_of_help_is_its_own():
    from gcbench import cli

    full = cli.build_parser()
    actions = full._subparsers._group_actions[0]._choices_actions  # argparse keeps them here
    assert {a.dest: a.help for a in actions} == cli.HELP


def test_the_package_imports_light_and_measure_is_the_function():
    code = (
        "import sys, gcbench, gcbench.cli; heavy = [m for m in ('scipy', 'numpy', 'msgspec') if m in sys.modules];"
        "import gcbench.user_loop; print(heavy, callable(gcbench.measure), gcbench.summarize.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True summarize"


def test_ctrl_c_while_the_command_line_loads_is_one_line():
    for delay in (0.05, 0.15, 0.3):  # wherever SIGINT lands while the command line starts: no traceback
        started = subprocess.Popen([sys.executable, "-m", "gcbench", "list"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        started.send_signal(signal.SIGINT)
        out, err = started.communicate(timeout=60)
        if started.returncode == 1 and err.startswith("Could not import runpy module"):
            continue  # CPython's own start of `python -m`, before any of gcbench runs (seen under load)
        if err.startswith("Fatal Python error: init_import_site"):
            continue  # CPython's own start too: the site module and its .pth files, before gcbench (seen once)
        assert "Traceback" not in out + err, (delay, err)
        # before the interpreter has set up its own handler, SIGINT simply ends it (-2, nothing printed);
        # under `python -m`, CPython also ends with -2 after gcbench's own line when the interrupt arrived
        # inside an extension module's import (seen while scipy loads; not with the console script):
        # a shell shows 130 for both
        assert started.returncode in (0, 130, -signal.SIGINT), (delay, started.returncode, err)
        assert started.returncode != 130 or err.strip() == "gcbench: interrupted"
        assert started.returncode != -signal.SIGINT or err.strip() in ("", "gcbench: interrupted"), (delay, err)


def test_a_ctrl_c_that_cpython_swallows_in_a_callback_still_ends_as_an_interrupt(monkeypatch, capsys):
    """Ctrl-C in a callback CPython runs for itself (an import lock's weakref callback, under
    load) is printed by CPython as an ignored exception with a traceback, and the command goes
    on: gcbench keeps it from the screen and ends with its own line and status 130."""
    import weakref

    from gcbench import cli
    from gcbench.commands import list as list_command

    def interrupted_in_a_callback(args):
        class Held:
            pass

        def callback(ref):
            raise KeyboardInterrupt

        held = Held()
        ref = weakref.ref(held, callback)
        del held  # CPython calls the callback here, and cannot raise what it raises
        assert ref() is None
        return 0

    monkeypatch.setattr(list_command, "main", interrupted_in_a_callback)
    assert cli.main(["list"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "gcbench: interrupted"
    assert "Traceback" not in err
    assert "ignored" not in err


def test_an_interrupt_turned_into_another_error_is_still_an_interrupt():
    """numpy's and scipy's imports turn a Ctrl-C into the RuntimeError or ImportError it
    caused: those end as an interrupt; an error with no interrupt behind it stays an error."""
    from gcbench import cli

    def raised(outer, inner=None):
        try:
            try:
                raise inner or ValueError("no")
            except BaseException as e:
                raise outer from e
        except BaseException as e:
            return e

    assert cli._from_an_interrupt(raised(RuntimeError("set_name"), KeyboardInterrupt()))
    assert cli._from_an_interrupt(raised(ImportError("initialization failed"), KeyboardInterrupt()))
    assert not cli._from_an_interrupt(raised(RuntimeError("a real error")))


def test_an_empty_out_is_refused(tmp_path):
    for command in (["run", *TINY_RUN], ["report", str(ok_results_folder(tmp_path / "r"))]):
        assert_one_line_error(run_cli(*command, "--out", "", cwd=tmp_path), "--out '' names no folder")
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(("signum", "code", "word"), [(15, 143, "terminated"), (2, 130, "interrupted")])
def test_a_flow_ended_by_a_signal_exits_with_its_code(monkeypatch, capsys, signum, code, word):
    """Issue 54: a bisect stopped by SIGTERM exited 130, as for Ctrl-C: a flow's
    runner.Interrupted now gives the signal's own exit code, in one line."""
    from gcbench import cli
    from gcbench.commands import status
    from gcbench.running import runner

    def stopped(args):
        raise runner.Interrupted(signum)

    monkeypatch.setattr(status, "main", stopped)
    assert cli.main(["status", "."]) == code
    assert capsys.readouterr().err.strip() == f"gcbench: {word}"


def test_an_installer_leaves_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    """Issue 54: uv left uv-setuptools-*.lock in the temporary folder; every installer
    command gets a temporary folder of its own, removed after it."""
    import io
    import sys

    from gcbench.running import venvs

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    code, out = venvs._run([sys.executable, "-c", "import os, tempfile; open(os.path.join(tempfile.gettempdir(), "
                                              "'uv-setuptools-1.lock'), 'w').close(); print(tempfile.gettempdir())"],
                          io.StringIO())
    assert code == 0
    assert out.strip().startswith(str(tmp_path / "gcbench-install-"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "right"), [
    (["run", "--gc", "off"], "(did you mean 'disable'?)"),
    (["run", "--gc", "frozen"], "(did you mean 'freeze'?)"),
    (["run", "--gc", "defualt"], "(did you mean 'default'?)"),
    (["compare", "a", "b", "--fail-on", "slowr"], "(did you mean 'slower'?)"),
    (["compare", "a", "b", "--fail-on", "more-full-gcs"], "(did you mean 'more-full-gc'?)"),
])
def test_a_misspelt_choice_names_the_right_word_in_one_line(args, right, tmp_path):
    """Issue 69, item 5: `--gc off` (meant `disable`) and `--fail-on slowr` get a suggestion,
    as `--backends equinox` does."""
    assert_one_line_error(run_cli(*args, "--out", str(tmp_path / "o")) if args[0] == "run" else run_cli(*args), right)


def test_a_misspelt_measure_keyword_names_the_right_word():
    import gcbench
    from gcbench.core.errors import UsageError

    with pytest.raises(UsageError, match=r"unknown keyword 'warmpu' \(did you mean 'warmup'\?\)"):
        gcbench.measure("x", warmpu=3)


def test_every_commands_help_ends_with_two_examples_that_parse_and_its_exit_statuses():
    """Issue 69, item 5: `--help` gives two examples (each one gcbench's parser takes, every
    option named in full) and the exit statuses; a command whose 1 means something says what."""
    from gcbench import cli
    from test_doc_examples import _parse_gcbench

    parser = cli.build_parser()
    for command in cli.HELP:
        text = parser._subparsers._group_actions[0].choices[command].format_help()
        examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert len(examples) == 2, (command, examples)
        for example in examples:
            words = shlex.split(example.strip())
            words = words[words.index("gcbench") + 1:]
            assert _parse_gcbench(words) is None, (command, example, _parse_gcbench(words))
        statuses = text.split("exit status:\n", 1)[1]
        assert "0    done" in statuses
        assert "2    a usage error" in statuses
        assert ("1    " in statuses) == (command in cli.EXIT_ONE), command


def test_run_help_is_grouped():
    from gcbench import cli

    text = cli.build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    groups = re.findall(r"^([a-z][^\n]*):\n", text, re.M)
    assert {"what to run", "where the results go", "environments", "where repeats run"} <= set(groups), groups


@pytest.mark.parametrize(("args", "word"), [
    (["run", "--workloads", "vitt"], "vit"), (["run", "--gc", "disabel"], "disable"),
    (["run", "--executor", "slurmm"], "slurm"), (["export", "x", "--per", "cel"], "cell"),
    (["memory", "--size", "smal"], "small"), (["reproduce", "--only", "equinox-spike"], "equinox-spikes"),
    (["bisect", "--package", "equinox", "--versions", "1,2", "--cell", "jax/mlp/default", "--metric", "gc-shar"],
     "gc_share"),
    (["bisect", "--git", ".", "--good", "a", "--bad", "b", "--cell", "jax/mlp/default", "--metric", "gc-shar"],
     "gc-share"),
    (["compare", "a", "b", "--fail-on", "slowr"], "slower")])
def test_every_choice_valued_option_suggests_the_word_meant(args, word):
    """Issue 69, item 5: a misspelt choice gets one line naming the right word."""
    proc = run_cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"did you mean '{word}'?" in lines[0], lines[0]
