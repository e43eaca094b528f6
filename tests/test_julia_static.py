"""Checks of the Julia half that need no Julia: it parses, Python calls only functions
that exist with the arity it uses, and the two package manifests agree with each other
and with the General registry."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import sys

import numpy as np
import pytest

from gcbench.measuring.backends import julia_layout
from julia_source import JULIA_DIR, definitions, parse, returned_keys

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = JULIA_DIR.parent
PACKAGE = ROOT / "python" / "gcbench"
# UUIDs of these packages in Julia's General registry (and the stdlib UUIDs).
REGISTERED = {
    "Flux": "587475ba-b771-5e3f-ad9e-33799f191a9c",
    "Lux": "b2108857-7c20-44ae-9111-449ecde12c47",
    "MLUtils": "f1d291b0-491e-4a28-83b9-f70985020b54",
    "NNlib": "872c559c-99b0-510c-b3b7-b6c96a88d5cd",
    "Optimisers": "3bd65402-5787-11e9-1adc-39752487f4e2",
    "Profile": "9abbd945-dff8-562f-b5e8-e1ebf5ef1b79",
    "Random": "9a3f8284-a2c9-5f02-9a11-845980a1fd5c",
    "SimpleChains": "de6bee2f-e2f4-4ec7-b6ed-219cc6f6e9e5",
    "Statistics": "10745b16-79ce-11e8-11f9-7d13ad32a3b2",
    "TOML": "fa267f1f-6049-4f14-aa54-33bafae1ed76",
    "Zygote": "e88e6eb3-aa80-5325-afca-941959d7151f",
}


FRAMEWORK_FILES = {"flux": "flux.jl", "lux": "lux.jl", "simplechains": "simplechains.jl"}


def test_every_julia_file_parses():
    files = sorted(JULIA_DIR.rglob("*.jl"))
    assert len(files) >= 9
    assert JULIA_DIR / "test" / "runtests.jl" in files
    for path in files:
        tree = parse(path)
        assert not tree.root_node.has_error, f"{path.name} does not parse"


def test_the_core_is_included_once_and_frameworks_on_demand():
    module = (JULIA_DIR / "GCBench.jl").read_text()
    included = re.findall(r'^include\("([^"]+)"\)', module, re.M)
    core = sorted(
        p.name for p in JULIA_DIR.glob("*.jl") if p.name != "GCBench.jl" and p.name not in FRAMEWORK_FILES.values()
    )
    assert sorted(included) == core
    assert len(set(included)) == len(included)
    # no framework is loaded by the core: the core's files use nothing but the standard library
    for name in ["GCBench.jl", *core]:
        used = set(re.findall(r"^\s*(?:using|import)\s+([A-Za-z]\w*)", (JULIA_DIR / name).read_text(), re.M))
        assert used <= {"Random", "Statistics", "Profile", "TOML"}, (name, used)
    table = dict(re.findall(r'"(\w+)" => "(\w+\.jl)"', module.split("FRAMEWORK_FILES")[1].split("\n")[0]))
    assert table == FRAMEWORK_FILES
    for framework, file in FRAMEWORK_FILES.items():
        assert f'FRAMEWORKS["{framework}"] = build_{framework}' in (JULIA_DIR / file).read_text()


def test_functions_python_calls_exist_with_that_arity():
    defs = definitions()
    for name, arity in julia_layout.JULIA_API.items():
        matching = [d for d in defs if d.name == name]
        assert matching, f"GCBench.{name} is not defined in julia/"
        assert any(d.accepts(arity) for d in matching), \
            f"GCBench.{name} is called with {arity} arguments but defined as {matching}"
    exports = re.search(r"^export (.+)$", (JULIA_DIR / "GCBench.jl").read_text(), re.M).group(1)
    assert {e.strip() for e in exports.split(",")} == set(julia_layout.JULIA_API)


def test_python_reads_every_key_the_julia_functions_return_and_no_other():
    """`julia_layout.JuliaRun` and `JuliaAllocTables` name, field by field, the Dicts that
    `run!` and `explain_allocs` return (a refusal aside): a key renamed on one side fails here,
    not on a user's machine."""
    for name, record in (("run!", julia_layout.JuliaRun), ("explain_allocs", julia_layout.JuliaAllocTables)):
        returns = returned_keys(name)
        fields = {f.name for f in dataclasses.fields(record)}
        assert fields in returns, (name, returns)
        assert all(keys in (fields, {"refused"}) for keys in returns), (name, returns)


def test_every_framework_implements_the_trainer_interface():
    defs = definitions()
    for fn, arity in [("update_network!", 4), ("param_count", 1)]:
        files = {d.file for d in defs if d.name == fn and d.accepts(arity)}
        assert set(FRAMEWORK_FILES.values()) <= files, f"{fn} missing in {files}"
    assert [d.file for d in defs if d.name == "step!"] == ["run.jl"]  # one step for all
    builders = {d.name for d in defs}
    assert {"build_flux", "build_lux", "build_simplechains"} <= builders


def test_simplechains_takes_the_canonical_weights_and_its_own_memory():
    """Item 1 and 3 of the source review: parameters are the Vector{Float32} Python sends
    (never `init_params`, which may return a StaticStrideArray the trainer cannot hold), and
    `valgrad!` gets each network's own working memory (never the task-local default)."""
    code = (JULIA_DIR / "simplechains.jl").read_text()
    body = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    assert "init_params" not in body
    assert "params::Vector{Vector{Float32}}" in body
    assert "Vector{Float32}(weights[:, k])" in body
    assert re.search(r"valgrad!\(SimpleChains\.align\(pointer\(buf\)\)", body)
    # Item 2: the summed loss is scaled to a batch mean, and so is the update.
    assert "update!(t.opt, t.adam[k], t.params[k], t.grads[k], t.scale)" in body
    assert "summed * t.scale" in body
    assert "inv(Float32(batch_size(data)))" in body


def test_lux_train_states_are_a_concrete_vector():
    code = (JULIA_DIR / "lux.jl").read_text()
    assert "Vector{Any}" not in code
    assert "states::Vector{S}" in code


def test_the_bridge_calls_only_the_declared_api():
    source = (PACKAGE / "measuring" / "backends" / "julia_bridge.py").read_text()
    called = set(re.findall(r'call\("([A-Za-z_!]+)"', source))
    assert called == set(julia_layout.JULIA_API)


def test_only_the_bridge_imports_juliacall():
    importers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "juliacall" for n in names):
                importers.append(path.name)
    assert importers == ["julia_bridge.py"]


def _manifests():
    project = tomllib.loads((ROOT / "julia" / "Project.toml").read_text())
    juliapkg = json.loads((PACKAGE / "juliapkg.json").read_text())
    return project, juliapkg


def test_project_toml_and_juliapkg_json_agree():
    project, juliapkg = _manifests()
    pkgs = juliapkg["packages"]
    assert set(project["deps"]) == set(pkgs)
    for name, uuid in project["deps"].items():
        assert pkgs[name]["uuid"] == uuid, name
        assert pkgs[name]["version"] == project["compat"][name], name
    assert juliapkg["julia"] == project["compat"]["julia"]
    assert set(project["compat"]) == set(project["deps"]) | {"julia"}  # a bound for every dep
    assert set(project["targets"]["test"]) == set(project["extras"])


# The newest stable Julia release: 1.13 (JuliaLang/julia's release-1.13 branch; v1.13.0 in
# September 2026, endoflife.date's "[julia] Add 1.13 cycle", 2026-09-12). Raise it when a newer
# one is tagged; the compat bound, the workflow's matrix and this test then move together.
OLDEST_JULIA, NEWEST_JULIA = (1, 10), (1, 13)


def test_julia_is_bounded_from_the_lts_through_the_newest_release():
    """Issue 57: `"1.10"` means ^1.10, read the way juliapkg reads it: 1.10 (the LTS) through
    every 1.x, the newest release included, and nothing older or 2.0."""
    compat = pytest.importorskip("juliapkg.compat")
    from semver import Version

    project, juliapkg = _manifests()
    assert juliapkg["julia"] == project["compat"]["julia"]
    bound = compat.Compat.parse(juliapkg["julia"])
    for minor in range(OLDEST_JULIA[1], NEWEST_JULIA[1] + 1):
        assert Version(1, minor, 0) in bound, minor
        assert Version(1, minor, 9) in bound, minor
    assert Version(1, 9, 4) not in bound
    assert Version(2, 0, 0) not in bound


def test_the_workflow_runs_the_oldest_and_the_newest_julia_the_bounds_admit():
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "julia.yml").read_text())
    matrix = [tuple(int(x) for x in v.split(".")) for v in flow["jobs"]["julia"]["strategy"]["matrix"]["julia"]]
    assert min(matrix) == OLDEST_JULIA, matrix
    assert max(matrix) == NEWEST_JULIA, matrix
    project, _ = _manifests()
    assert project["compat"]["julia"] == "{}.{}".format(*OLDEST_JULIA)


def _pytest_workers(args: list[str]) -> int:
    """How many xdist workers pytest would start with these arguments (pyproject's addopts
    first, as pytest reads them): the last -n/--numprocesses wins; -p no:xdist means none."""
    n = 0
    for i, a in enumerate(args):
        if a in ("-n", "--numprocesses") and i + 1 < len(args):
            n = 0 if args[i + 1] == "0" else 2  # "auto" or a number: workers
        elif a.startswith("--numprocesses="):
            n = 0 if a.split("=", 1)[1] == "0" else 2
        elif a == "-p" and i + 1 < len(args) and args[i + 1] == "no:xdist":
            return 0
    return n


def test_the_workflow_runs_the_julia_tests_in_one_process():
    """Issue 57, item 2: pytest's default options spread the tests that share the Julia run
    over two workers, which ran the 8 cells, cold compiles included, twice at once. The
    workflow's command, after pyproject's addopts, must start no xdist worker."""
    import shlex

    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "julia.yml").read_text())
    commands = [line.strip() for s in flow["jobs"]["julia"]["steps"] if "run" in s
                for line in s["run"].splitlines() if "pytest" in line and "-m julia" in line]
    assert len(commands) == 1, commands
    addopts = shlex.split(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
                          ["addopts"])
    assert _pytest_workers(addopts) > 0  # the default that made them run twice
    assert _pytest_workers(addopts + shlex.split(commands[0])) == 0, commands[0]
    assert _pytest_workers([*addopts, "-m", "julia"]) > 0  # what the check would catch


def test_uuids_are_the_registered_ones():
    project, _ = _manifests()
    assert project["deps"] == REGISTERED


def test_julia_code_uses_only_declared_packages():
    project, _ = _manifests()
    used = set()
    for path in JULIA_DIR.glob("*.jl"):
        used |= set(re.findall(r"^\s*(?:using|import)\s+([A-Za-z]\w*)", path.read_text(), re.M))
    assert used == set(project["deps"]), f"used {sorted(used)}, declared {sorted(project['deps'])}"
    tests = set()
    for path in (JULIA_DIR / "test").glob("*.jl"):
        tests |= set(re.findall(r"^\s*(?:using|import)\s+([A-Za-z]\w*)", path.read_text(), re.M))
    assert "Test" in tests, tests
    assert tests <= set(project["extras"]) | set(project["deps"]), tests


def test_the_julia_workflow_names_real_actions_and_commands():
    yaml = pytest.importorskip("yaml")
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "julia.yml").read_text())
    steps = flow["jobs"]["julia"]["steps"]
    uses = {s["uses"].split("@")[0] for s in steps if "uses" in s}
    assert uses == {"actions/checkout", "astral-sh/setup-uv", "julia-actions/setup-julia", "julia-actions/cache"}
    commands = [line.strip().split()[0] for s in steps if "run" in s for line in s["run"].strip().splitlines()]
    assert set(commands) == {"uv", "python", "echo", "gcbench", "julia"}, commands
    # the admission check asks gcbench's own bridge, which asks pyjuliapkg (test_julia_absent.py)
    assert "julia_bridge as j; exe = j.find_julia()" in " ".join(s.get("run", "") for s in steps)
    runs = " ".join(s.get("run", "") for s in steps)
    assert "pytest -m julia" in runs
    assert "julia/test/runtests.jl" in runs
    assert "gcbench julia-setup" in runs
    # julia-actions/cache v3 deletes the caches it replaced: that job's token needs actions: write
    assert flow["jobs"]["julia"]["permissions"] == {"contents": "read", "actions": "write"}
    assert flow["permissions"] == {"contents": "read"}


def test_juliapkg_json_ships_with_the_package():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "juliapkg.json" in pyproject["tool"]["setuptools"]["package-data"]["gcbench"]


def test_runtests_never_calls_a_framework_in_the_world_of_its_include():
    """Issue 24, item 1: `load_framework` includes a file at run time; code compiled before
    that cannot see its methods. runtests.jl loads each framework in a top-level statement
    of its own and calls the tests through invokelatest; the checker finds the old pattern."""
    from julia_source import world_age_problems

    assert world_age_problems((JULIA_DIR / "test" / "runtests.jl").read_bytes()) == []
    old = b'''
function trainer_for(framework, workload, data)
    GCBench.load_framework(framework)
    return GCBench.build(framework, spec, weights, data)
end
for f in ("flux", "lux")
    GCBench.load_framework(f); t = GCBench.build(f, spec, w, d, 3e-4)
end
'''
    problems = world_age_problems(old)
    assert len(problems) == 2
    assert "a function calls load_framework" in problems[0]
    assert "one top-level" in problems[1]
    runtests = (JULIA_DIR / "test" / "runtests.jl").read_text()
    assert runtests.count("Base.invokelatest(test_framework") == 1
    run_jl = (JULIA_DIR / "run.jl").read_text()
    assert "Base.invokelatest(FRAMEWORKS[framework]" in run_jl  # build, too, calls the builder in the newest world


def test_every_framework_defines_its_logits_and_the_fixture_holds_them():
    """Issue 24, item 3: the fixture's logits, per framework, per step losses."""
    for file in FRAMEWORK_FILES.values():
        assert re.search(
            r"^(function )?network_logits\(t::\w+Trainer, k::Int, x\)", (JULIA_DIR / file).read_text(), re.M
        )
    fixture = JULIA_DIR / "test" / "fixture"
    meta = tomllib.loads((fixture / "fixture.toml").read_text())
    for workload in ("mlp", "lenet5"):
        logits = np.fromfile(fixture / f"{workload}_logits.f32", "<f4")
        assert logits.size == 10 * meta["batch"] * meta[workload]["networks"]
        assert np.isfinite(logits).all()
    from gcbench.measuring.workloads import LEARNING_RATE

    assert meta["learning_rate"] == LEARNING_RATE
    for file in FRAMEWORK_FILES.values():  # one learning rate: Python's, passed through build
        assert "3f-4" not in (JULIA_DIR / file).read_text()
        assert "3e-4" not in (JULIA_DIR / file).read_text()


def test_lux_is_tested_alone_and_every_framework_is_tested():
    """Issue 34, item 4: runtests.jl tests Flux and SimpleChains in its own process and Lux in
    a process of its own (lux_cases.jl), as a measured Lux cell runs; every framework's
    cases are run somewhere, each through invokelatest."""
    runtests = (JULIA_DIR / "test" / "runtests.jl").read_text()
    lux = (JULIA_DIR / "test" / "lux_cases.jl").read_text()
    def loaded(text):
        return re.findall(r'^GCBench\.load_framework\("(\w+)"\)', text, re.M)
    assert sorted(loaded(runtests)) == ["flux", "simplechains"]
    assert loaded(lux) == ["lux"]
    assert "lux_cases.jl" in runtests
    assert "success(pipeline(cmd" in runtests
    assert 'Base.invokelatest(test_framework, "lux", workload)' in lux
    assert 'for framework in ("flux", "simplechains")' in runtests
    for text in (runtests, lux):
        assert 'include(joinpath(@__DIR__, "common.jl"))' in text
    from julia_source import world_age_problems

    assert world_age_problems(lux.encode()) == []


def test_free_memory_is_read_once_and_the_limit_follows_the_process_group():
    """Issue 34, items 2 and 3: available_memory takes the free memory it compares against,
    and the cgroup is followed from /proc/self/cgroup (v2 up to the root, v1 by the
    controller's path), as footprint.cgroup_room does on the Python side."""
    measure = (JULIA_DIR / "measure.jl").read_text()
    assert re.search(r"^function available_memory\(free::Integer=Int\(Sys\.free_memory\(\)\)\)", measure, re.M)
    assert re.search(
        r'^function cgroup_room\(root::AbstractString="/sys/fs/cgroup", proc::AbstractString="/proc/self/cgroup"\)',
        measure,
        re.M,
    )
    for needed in ('"memory.max"', '"memory.high"', '"memory.current"', '"memory.limit_in_bytes"',
                   '"memory.usage_in_bytes"', "dirname(dir)"):
        assert needed in measure, needed
    runtests = (JULIA_DIR / "test" / "runtests.jl").read_text()
    assert "GCBench.available_memory(free) <= free" in runtests
    assert "Sys.free_memory()) <=" not in runtests
    assert "GCBench.cgroup_room(root, proc)" in runtests


def test_julia_runs_of_disable_or_manual_take_two_warmup_steps():
    """Issue 34, item 1: julia/measure.jl refuses disable and manual:K with fewer than two
    warm-up steps (the first compiles), so every Julia test that runs them asks for two,
    and reads a result only once it is ok."""
    text = (ROOT / "tests" / "test_julia_run.py").read_text()
    calls = re.findall(r'run_cli\("run",(.*?)\)\n', text, re.S)
    policied = [c for c in calls if re.search(r'"--gc", "[^"]*(disable|manual)', c)]
    assert policied
    for call in policied:
        warmup = int(re.search(r'"--warmup", "(\d+)"', call).group(1))
        assert warmup >= 2, call
    assert "measure.jl" in text
    assert 'doc.status == "ok"' in text


def test_the_allocation_test_counts_by_package_not_by_type():
    """Julia 1.10 records objects allocated by compiled code without a type (UnknownType):
    julia/test/runtests.jl must not count allocations by a type's name (it required Dict
    samples, which 1.10 does not report), and counts GCBench's own allocations instead."""
    text = (JULIA_DIR / "test" / "runtests.jl").read_text()
    assert not re.search(r'by_type"\]\s+if\s+startswith\(k,\s*"Dict"\)', text)
    assert not re.search(r'\["by_type"\].*"Dict', text)
    assert 'get(out["by_package"], "GCBench", [0, 0])' in text
    assert "jl_gc_unknown_type_tag" in text


def test_the_worker_skips_python_exit_hooks_once_juliacall_is_loaded():
    """juliacall's exit hook (`jl_atexit_hook(0)`) can segfault with several Julia threads
    (PythonCall issue #764): the worker leaves with os._exit once its result is written."""
    import pathlib

    import gcbench.child as child

    src = pathlib.Path(child.__file__).read_text()
    assert 'if "juliacall" in sys.modules:' in src
    assert "os._exit(code)" in src
    assert "leave(main())" in src


def test_the_repository_s_julia_environment_is_at_the_top_and_the_wheel_s_copy_equals_it():
    """Issue 70, item 6: the design card's layout names Project.toml at the top level (the
    repository's Julia environment: `julia --project=.`); the wheel ships julia/'s copy."""
    top, copy = ROOT / "Project.toml", ROOT / "julia" / "Project.toml"
    assert top.is_file()
    assert top.read_bytes() == copy.read_bytes(), "cp Project.toml julia/Project.toml"
    readme = (ROOT / "README.md").read_text()
    assert "`Project.toml` (their\nJulia environment: `julia --project=.`)" in readme
    workflow = (ROOT / ".github" / "workflows" / "julia.yml").read_text()
    assert "julia --project=. -e 'using Pkg; Pkg.instantiate(); include(\"julia/test/runtests.jl\")'" in workflow
    assert "exclude julia/Manifest.toml" in (ROOT / "MANIFEST.in").read_text()


def test_the_data_s_indices_are_checked_before_the_steps_index_without_checks():
    """Issue 70, item 4: `@inbounds` covered `view(d.schedule, :, s)`, so a bad step index
    read out of bounds; `setup_data` checked nothing. The step's column is bounds-checked now,
    and every label and schedule index is checked once, when the data is set up."""
    data = (ROOT / "julia" / "data.jl").read_text()
    take = data.split("function take_batch!", 1)[1].split("\nend", 1)[0]
    assert take.index("checkbounds(d.schedule, :, s)") < take.index("@inbounds")
    setup = data.split("function setup_data", 1)[1].split("\nend", 1)[0]
    for check in ("all(in(1:10), labs)", "all(in(1:n), sched)", "length(labs) == n"):
        assert check in setup, check


def test_simplechains_allocations_are_measured_at_top_level_with_a_bound_per_release():
    """Issue 70, item 5: as SimpleChains measures its own since Julia 1.12 (30cf46f, `@allocated`
    at top level, not inside a function), and with the bound stated per release."""
    common = (ROOT / "julia" / "test" / "common.jl").read_text()
    runtests = (ROOT / "julia" / "test" / "runtests.jl").read_text()
    assert "macro step_bytes(t, s)" in common
    assert "let t = $(esc(t)), s = $(esc(s))" in common
    assert "@allocated" not in common.split("function test_framework", 1)[1].split("\nend", 1)[0]
    assert "bytes = @step_bytes(t, 1)" in runtests
    bounds = re.search(r"const STEP_BYTES = Dict\((.*)\)", common).group(1)
    assert {'v"1.10"', 'v"1.13"'} <= set(re.findall(r'v"\d+\.\d+"', bounds))
