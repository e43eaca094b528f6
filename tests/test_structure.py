"""The package's shape: subpackages in layers along the data's path, each importing only
the layers below it, and no import cycle anywhere (imports inside functions count too), so
that each module can be read and tested from the bottom up. DESIGN.md says why."""

import ast
import functools
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "python" / "gcbench"
# bottom to top; modules at the package's root and `commands` (the entry points) stand above all
LAYERS = ("core", "measuring", "running", "analysing", "publishing", "flows")
TOP = len(LAYERS)


def modules() -> dict[str, pathlib.Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return mods


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """gcbench's modules and the gcbench modules each imports (anywhere in the file, relative
    or absolute); a package's own `__init__` counts only where it is imported by name.
    Read once per test process (callers do not change it)."""
    mods = modules()
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            edges[m].update(t for t in targets if t in mods and t != m)
    return edges


def layer(module: str) -> int:
    """The module's layer: its subpackage's place in LAYERS; the root and `commands` are the top."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else TOP


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, done = [], set()

    def visit(u, path):
        for v in sorted(edges[u]):
            if v in path:
                found.append([*path[path.index(v):], v])
            elif v not in done:
                done.add(v)
                visit(v, [*path, v])

    for m in sorted(edges):
        visit(m, [m])
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, ts in edges.items() for t in ts if layer(t) > layer(m))


def test_no_module_imports_a_module_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_each_subpackage_imports_only_the_layers_below_it():
    assert upward(import_graph()) == []


def test_the_checks_find_a_cycle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    edges = {"gcbench.measuring.worker": {"gcbench.core.files", "gcbench.analysing.summary"},
             "gcbench.core.files": set(), "gcbench.analysing.summary": {"gcbench.measuring.worker"},
             "gcbench.flows.pipeline": {"gcbench.publishing.report"}, "gcbench.publishing.report": set()}
    assert upward(edges) == ["gcbench.measuring.worker -> gcbench.analysing.summary"]
    graph = import_graph()
    assert len(graph) > 60
    assert graph["gcbench.child"] >= {"gcbench.measuring.worker"}
    assert "gcbench.running.config" in graph["gcbench.flows.pipeline"]  # the walker sees relative imports


@pytest.mark.parametrize("name", LAYERS)
def test_each_subpackage_says_what_lives_there_and_what_it_may_import(name):
    doc = ast.get_docstring(ast.parse((ROOT / name / "__init__.py").read_text()))
    assert doc
    assert 2 <= len(doc.splitlines()) <= 3
    said = re.search(r"Imports (.*)$", doc, re.S).group(1)
    may = set(re.findall(r"`(\w+)`", said)) & set(LAYERS)
    assert may == set(LAYERS[: LAYERS.index(name)]), f"{name}: its docstring allows {sorted(may)}"
    # and what its modules import stays inside what the docstring allows
    used = {t.split(".")[1] for m, ts in import_graph().items() if m.startswith(f"gcbench.{name}") for t in ts}
    assert used - {name} <= may


def test_commands_hold_only_the_cli_and_the_flow_has_a_module_of_its_own():
    """`commands/` parses arguments and calls the flows (`flows.pipeline`: a plan, run end
    to end); nothing below the entry points imports them, and `_common` keeps only the
    helpers of arguments and output."""
    graph = import_graph()
    assert {m for m, ts in graph.items() if "gcbench.flows.pipeline" in ts} == {
        "gcbench.commands.bisect", "gcbench.commands.explain", "gcbench.commands.report", "gcbench.commands.reproduce",
        "gcbench.commands.run", "gcbench.commands._outcome", "gcbench.flows.bisection", "gcbench.flows.reproduction"}
    for m, ts in graph.items():
        if layer(m) < TOP:
            assert not any(layer(t) == TOP for t in ts), m

    def functions(path):
        return {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}

    flow = {"run_suite", "run_plan", "write_plan", "write_report", "check_data", "prepare_folder"}
    assert flow <= functions(ROOT / "flows" / "pipeline.py")
    assert not functions(ROOT / "commands" / "_common.py") & flow
    # what a command module defines: its parser, its main, and helpers that read arguments
    for path in (ROOT / "commands").glob("*.py"):
        assert not functions(path) & (flow | {"calibrate", "commits", "releases", "_explain"}), path.name


def test_no_flow_reads_a_command_line():
    """The flows take typed options (`flows/options.py`), never an argparse namespace: no
    module under flows/ imports argparse, names a parameter `args` or reads `getattr(args`."""
    for path in (ROOT / "flows").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names} | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "argparse" not in imported, path.name
        params = {a.arg for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for a in n.args.args}
        assert "args" not in params, path.name
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "args" not in names, path.name


def test_flows_name_options_and_commands_word_them_as_flags():
    """A flow's refusal names an option by `errors.option(name)`, never by its flag: no
    string under flows/ holds `--word`, every option a flow names is a flag of some command,
    and the CLI words it so while a library caller reads the option's name."""
    from gcbench import cli
    from gcbench.core.errors import UsageError, option

    named = set()
    for path in (ROOT / "flows").glob("*.py"):
        tree = ast.parse(path.read_text())
        texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and n not in _docstrings(tree)]
        assert not [t for t in texts if re.search(r"(^|[\s(`])--[a-z]", t)], path.name
        named |= {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and getattr(n.func, "id", None) == "option"}
    assert {"out", "resume", "force", "detach", "batch_size"} <= named
    flags = {s for action in _all_actions(cli.build_parser()) for s in action.option_strings}
    assert {cli.flag(name) for name in named} <= flags
    e = UsageError(f"{option('batch_size')} needs {option('out')} in C:/a{{b}}\0x")
    assert str(e) == "`batch_size` needs `out` in C:/a{b}\0x"
    assert e.worded(cli.flag) == "--batch-size needs --out in C:/a{b}\0x"


def _docstrings(tree) -> set:
    return {n.body[0].value for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def _all_actions(parser):
    import argparse

    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_actions(sub)


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | \
        {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_argparse_only_under_the_commands():
    """Issue 58, item 3: a command line is parsed by the entry points only (`cli.py`,
    `cli_reference.py`, `commands/`); every layer below takes typed options."""
    entry = {ROOT / "cli.py", ROOT / "cli_reference.py"}
    parsing = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                     if "argparse" in _imports(p) and p not in entry and p.parent.name != "commands")
    assert parsing == []


def test_git_runs_in_running_only():
    """Issue 58, item 3: git (clone, log, a commit's files) is run by `running/gitrepo.py`;
    analysis decides on what it returns and runs no program."""
    running_git = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                         if re.search(r"""\[\s*["']git["']""", p.read_text()))
    # and core/metadata.py, which asks git for gcbench's own commit (a result's metadata)
    assert running_git == ["core/metadata.py", "running/gitrepo.py"]
    assert not [p.name for p in (ROOT / "analysing").glob("*.py") if "subprocess" in _imports(p)]


def _functions(path: pathlib.Path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]


def test_numbers_are_worded_in_one_place_and_statistics_word_nothing():
    """Issue 68, item 5: the statistics compute (no function of analysing/stats.py returns
    text); how a number, a range, a schedule reads is `core/wording.py`'s, an interval's
    `publishing/interval_text.py`'s; the verdict's sentences and every whole text (a
    comparison, a bisect, an explanation, a cell) are publishing's; no other module
    defines a number formatter of its own."""
    said = [n.name for n in _functions(ROOT / "analysing" / "stats.py")
            if n.returns is not None and "str" in ast.unparse(n.returns)]
    assert said == []
    formatters = sorted(f"{p.relative_to(ROOT)}:{n.name}" for p in ROOT.rglob("*.py") for n in _functions(p)
                        if n.name in {"fmt", "fmt_signed", "fmt_range", "fmt_ci", "fmt_paren", "fmt_values",
                                      "format_schedule", "short_schedule"})
    assert formatters == ["core/wording.py:fmt", "core/wording.py:fmt_range", "core/wording.py:fmt_signed",
                          "core/wording.py:format_schedule", "core/wording.py:short_schedule",
                          "publishing/interval_text.py:fmt_ci", "publishing/interval_text.py:fmt_paren",
                          "publishing/interval_text.py:fmt_values"]
    assert not (ROOT / "analysing" / "verdict.py").exists()
    # analysis hands records to publishing, which renders them whole: no text renderer is left there
    renderers = sorted(f"{p.name}:{n.name}" for p in (ROOT / "analysing").glob("*.py") for n in _functions(p)
                       if n.name.startswith(("format_", "describe_user", "describe_coll", "describe_expl")))
    assert renderers == []


def loaded_by(statement: str, names: tuple[str, ...]) -> set[str]:
    """The gcbench modules, and those of `names`, that a fresh interpreter holds after `statement`."""
    probe = (f"import sys; {statement}; print(' '.join(sorted(m for m in sys.modules "
             f"if m.startswith('gcbench') or m in {names!r})))")
    return set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                              cwd=ROOT.parent).stdout.split())


def test_a_worker_imports_what_it_imported_before_the_layers():
    """The worker's heap is part of what a run measures (DESIGN.md, "The worker's heap"): a
    worker process loads the explanation and the suites' module (and scipy.stats with
    them) as it did before the package was split, and nothing of publishing or the flows."""
    loaded = loaded_by("import gcbench.child", ("scipy.stats", "matplotlib", "juliacall", "tomllib", "tomli"))
    assert {"gcbench.analysing.gc_causes", "gcbench.analysing.stats", "gcbench.running.config", "scipy.stats",
            "gcbench.measuring.worker"} <= loaded
    assert "tomllib" in loaded or "tomli" in loaded  # the suites' module reads TOML
    assert not {m for m in loaded if m.startswith(("gcbench.publishing", "gcbench.flows", "gcbench.commands"))}
    assert not loaded & {"matplotlib", "juliacall"}


def test_gcbench_measure_loads_only_what_a_probe_needs_before_the_loop():
    """What `gcbench.measure` imports stays in the user's heap, whose schedule it measures
    (issue 66): before the loop the probe, its checks, the collector's watcher and the load
    reader; nothing of numpy, the schema, the suites, analysis, typing or threading (each
    hundreds to thousands of objects), nor `_ctypes` (220), `math` (55) or gcbench's errors
    in a loop that makes none; the rest loads after the loop, when a result is asked for.
    Where the process has loaded ctypes itself (numpy does), the C allocator is read."""
    heavy = ("numpy", "msgspec", "typing", "threading", "filelock", "tomllib", "tomli", "scipy", "_ctypes", "math")
    loaded = loaded_by("import gcbench; m = gcbench.measure('x')\nwith m:\n    with m.step(): pass", heavy)
    assert {"gcbench.user_loop", "gcbench.measuring.probe", "gcbench.measuring.gc_watch"} <= loaded
    assert not loaded & set(heavy), sorted(loaded & set(heavy))
    assert not loaded & {"gcbench.core.errors", "gcbench.core.version"}
    assert not {m for m in loaded if m.startswith(("gcbench.analysing", "gcbench.publishing", "gcbench.running"))}
    assert "gcbench.measuring.diagnose" not in loaded  # explaining only
    after = loaded_by("import gcbench; m = gcbench.measure('x')\nwith m:\n    with m.step(): pass\nm.result()",
                      ("numpy", "msgspec"))
    assert {"numpy", "gcbench.measuring.results"} <= after
    assert "msgspec" not in after  # a result still in memory is not checked against its types (issue 66)
    saved = loaded_by("import gcbench, tempfile; m = gcbench.measure('x')\nwith m:\n    with m.step(): pass\n"
                      "m.save(tempfile.mkdtemp())", ("msgspec", "jsonschema"))
    assert "msgspec" in saved  # one written is, by msgspec alone (issue 68)
    assert "jsonschema" not in saved


def test_every_command_s_parser_is_built_without_scipy():
    """scipy.stats takes most of a second to import: a command that computes no statistic
    (help, list, status, a refused option) does not pay it. Every command's parser is built
    here, as `gcbench COMMAND --help` builds it; the statistics import it when first used."""
    loaded = loaded_by("from gcbench import cli; cli.build_parser()", ("scipy", "scipy.stats"))
    assert "gcbench.commands.run" in loaded
    assert "gcbench.analysing.stats" in loaded
    assert not loaded & {"scipy", "scipy.stats"}, sorted(loaded & {"scipy", "scipy.stats"})


def _flows() -> dict:
    """What a command runs end to end, found, not listed: every public function of flows/
    that a command calls and that takes the flow's options (a record of flows/options.py)
    or is its module's `run`; a new flow is checked as it is written."""
    import importlib
    import inspect
    import typing

    from gcbench.flows import options

    records = {o for o in vars(options).values() if isinstance(o, type)}
    called = set()
    for path in (ROOT / "commands").glob("*.py"):
        called |= set(re.findall(r"\b([a-z_]+)\.([a-z_]+)\(", path.read_text()))
    found = {}
    for path in sorted((ROOT / "flows").glob("*.py")):
        if path.stem in ("__init__", "options"):
            continue
        module = importlib.import_module(f"gcbench.flows.{path.stem}")
        for name, f in vars(module).items():
            if not inspect.isfunction(f) or f.__module__ != module.__name__ or (path.stem, name) not in called:
                continue
            hints = typing.get_type_hints(f)
            if name == "run" or any(t in records for p, t in hints.items() if p != "return"):
                found[f"{path.stem}.{name}"] = hints.get("return")
    return found


def test_every_flow_returns_a_record():
    """Issue 58, item 3: what a flow ends with is a typed record (its fields named), never a
    bare tuple that each caller unpacks by position (nor a list: `script_runs.run` returned
    one while the test read a hard-coded map of flows)."""
    flows = _flows()
    assert {"pipeline.run_suite", "bisection.releases", "bisection.commits", "explanation.run", "reproduction.run",
            "script_runs.run"} <= set(flows), flows
    for name, returned in flows.items():
        assert getattr(returned, "_fields", None), f"{name} returns {returned}"


def test_a_worker_imports_no_reader_of_stored_documents():
    """A worker's heap is the loop's to measure: the worker entry point imports what it runs
    and writes, not msgspec (which reads stored documents into records, in gcbench's own
    process) nor matplotlib (the report's)."""
    code = "import sys, gcbench.child; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'msgspec'" not in loaded
    assert "'matplotlib'" not in loaded
    assert "'gcbench'" in loaded
