"""What pyproject.toml cannot say.

- The Julia half (julia/, beside python/) ships inside the package as `gcbench.julia`, so an
  installed wheel runs the Julia backends as a checkout does (julia_bridge.julia_dir finds
  it through `importlib.resources`).
- The long description is README.md with its links made absolute against the repository
  (repo_links.py, which the docs site uses too), so that it reads right off the repository.
"""

import importlib.util
import pathlib

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("repo_links", HERE / "repo_links.py")
repo_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(repo_links)

setup(
    # find_packages finds the folders with an __init__.py; suites/ holds data only. julia/test
    # (the Julia tests and their fixture) is in the sdist (MANIFEST.in), not in the wheel.
    packages=[*find_packages("python"), "gcbench.suites", "gcbench.julia"],
    package_dir={"": "python", "gcbench.julia": "julia"},
    long_description=repo_links.long_description(HERE),
    long_description_content_type="text/markdown",
)
