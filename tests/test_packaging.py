"""gcbench as users install it: a wheel (and an sdist) built from this checkout, installed
non-editable into a fresh virtual environment, used from an empty folder. The Julia sources
travel as package data (gcbench.julia), the long description reads right off the repository."""

from __future__ import annotations

import email
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
JULIA_SOURCES = [*sorted(p.name for p in (ROOT / "julia").glob("*.jl")), "Project.toml"]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, pathlib.Path]:
    """The sdist and the wheel, built as `python -m build` builds them (the wheel from the sdist)."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True,
                   capture_output=True, text=True, timeout=600)
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


def _wheel_names(wheel: pathlib.Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def _metadata(wheel: pathlib.Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(z.read(name))


@pytest.mark.e2e
def test_the_wheel_carries_what_the_code_reads(dists):
    names = _wheel_names(dists["wheel"])
    for source in JULIA_SOURCES:
        assert f"gcbench/julia/{source}" in names, source
    assert {"gcbench/py.typed", "gcbench/juliapkg.json", "gcbench/suites/default.toml",
            "gcbench/suites/quick.toml"} <= names
    # the Julia tests and their 750 KB fixture are for developers: the sdist holds them
    assert not any(n.startswith("gcbench/julia/test/") for n in names)
    with tarfile.open(dists["sdist"]) as t:
        sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"julia/test/runtests.jl", "julia/test/fixture/fixture.toml", "julia/Project.toml",
            "setup.py", "MANIFEST.in", "README.md", "examples/list_dataloader.py"} <= sdist  # docs point to examples/
    assert not any("__pycache__" in n for n in sdist)


@pytest.mark.e2e
def test_the_metadata_links_and_the_long_description_read_off_the_repository(dists):
    meta = _metadata(dists["wheel"])
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Repository", "Documentation", "Issues"} <= set(urls)
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers
    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    description = meta.get_payload()
    targets = re.findall(r"\]\(([^)\s]+)\)", description)
    readme_targets = re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text())
    assert len(targets) == len(readme_targets) > 10  # every link kept, none lost to the rewrite
    relative = [t for t in targets if not t.startswith(("https://", "http://", "#"))]
    assert relative == []
    repo = urls["Repository"]
    for target, original in zip(targets, readme_targets, strict=True):
        if original.startswith(("https://", "http://", "#")):
            assert target == original
            continue
        # each absolute link names a file this checkout has, at the same path
        path = target.split("/HEAD/", 1)[1]
        assert path == original, target
        assert (ROOT / path).exists(), target
        assert target.startswith((repo, "https://raw.githubusercontent.com/"))
    image = re.search(r"!\[[^\]]*\]\(([^)]+)\)", description).group(1)
    assert image.startswith("https://raw.githubusercontent.com/")
    assert image.endswith(".png")


@pytest.mark.e2e
def test_an_installed_wheel_runs_from_an_empty_folder(dists, tmp_path):
    """Install non-editable (with the jax and julia extras) into a fresh venv; from an empty
    folder: the Julia sources are found, a tiny run writes its result, a budget test passes."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              f"{dists['wheel']}[jax,julia]", "pytest"],
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GCBENCH_JULIA_DIR", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=empty, env=env, capture_output=True, text=True, timeout=timeout)

    where = run(str(py), "-c", "import gcbench, pathlib; from gcbench.measuring.backends import julia_bridge as j; "
                               "print(pathlib.Path(gcbench.__file__).parent); print(j.julia_dir())")
    assert where.returncode == 0, where.stderr
    package, julia = (pathlib.Path(line) for line in where.stdout.split())
    assert venv in package.parents
    assert ROOT not in package.parents
    assert julia == package / "julia"
    assert all((julia / s).is_file() for s in JULIA_SOURCES)
    # a user's extras install no developer tool (issue 67: `all` pulled in ruff, mypy, MkDocs)
    tools = run(str(py), "-c", "import importlib.util as u; print([m for m in ('ruff', 'mypy', 'mkdocs', 'pandas', "
                               "'tree_sitter') if u.find_spec(m)])")
    assert tools.stdout.strip() == "[]", tools.stdout + tools.stderr

    listed = run(str(venv / "bin" / "gcbench"), "list")
    assert listed.returncode == 0, listed.stderr
    julia_lines = [line for line in listed.stdout.splitlines() if line.split()[:2] in (["flux", "julia"],
                                                                                      ["lux", "julia"])]
    assert len(julia_lines) == 2
    # unavailable only for want of a Julia executable here, never for want of the sources
    assert not any("sources are not at" in line for line in julia_lines), julia_lines

    tiny = run(str(venv / "bin" / "gcbench"), "run", "--backends", "jax", "--workloads", "mlp", "--repeats", "1",
               "--steps", "3", "--warmup", "1", "--networks", "2", "--no-progress", "--out", "results/tiny")
    assert tiny.returncode == 0, tiny.stderr[-3000:]
    assert list((empty / "results" / "tiny").rglob("*.json"))

    (empty / "test_budget.py").write_text(
        "def test_loop(gc_budget):\n"
        "    kept = []\n"
        "    with gc_budget(warmup=2, max_promotions_per_step=1_000, max_full_per_1000=100) as b:\n"
        "        for i in range(50):\n"
        "            with b.step():\n"
        "                kept.append([i])\n")
    budget = run(str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_budget.py")
    assert budget.returncode == 0, budget.stdout[-3000:]
    assert "1 passed" in budget.stdout


def test_a_users_extras_pull_in_no_developer_tool():
    """Issue 67, item 4: `all` is what a user runs gcbench with; the toolchain (pytest and
    its plugins, ruff, mypy, MkDocs, pandas, tree-sitter) is `dev`, and `test`, its old
    name, an alias for it until 0.4."""

    from gcbench.running.config import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    def closure(name: str, seen: frozenset = frozenset()) -> set[str]:
        out: set[str] = set()
        for req in extras[name]:
            inner = re.fullmatch(r"gcbench\[([\w,]+)\]", req)
            if inner:
                for sub in inner.group(1).split(","):
                    if sub not in seen:
                        out |= closure(sub, seen | {name})
            else:
                out.add(re.split(r"[<>=\[ ]", req, maxsplit=1)[0].lower())
        return out

    tools = {"pytest", "ruff", "mypy", "mkdocs", "pandas", "tree-sitter", "hypothesis", "build"}
    for user in ("jax", "julia", "report", "envs", "cluster", "cuda12", "cuda13", "all"):
        assert not closure(user) & tools, (user, closure(user) & tools)
    assert tools <= closure("dev")
    assert extras["test"] == ["gcbench[dev]"]
