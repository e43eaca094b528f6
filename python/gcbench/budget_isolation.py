"""A budgeted test in a fresh interpreter: counts that do not depend on what ran before.

What a step promotes depends on the process it runs in: caches that earlier tests warmed
or filled (JAX's tracing and dispatch caches, functools caches), and the hash seed. One
Equinox ViT step promoted 1,053 objects a step after gcbench's own `jax` step had run in
the same process, 984 alone. So the plugin runs each test that uses `gc_budget` in a
pytest of its own: `python -m pytest NODEID` with the session's rootdir, ini file and
plugins, PYTHONHASHSEED fixed (the session's, else 0), and reports the child's outcome
(setup, call and teardown reports, captured output, warnings) as the test's own. The test
is then measured the same way alone, in its file, in the whole suite, under `-n 2`, in
any order. `--gc-budget-in-process` measures in the session's own process instead (faster;
counts then depend on what ran before, and the failure message says so).

The child writes its reports as JSON to the file named by `CHILD_ENV`; a child that dies
before writing them fails the test with its exit status and the tail of its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from typing import Literal

CHILD_ENV = "GCBENCH_BUDGET_CHILD"
HASH_SEED = "0"  # the children's PYTHONHASHSEED where the session has none
DROPPED_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST",
               "PYTEST_ADDOPTS")
FORWARDED = ("--gc-budget-update", "--gc-budget-strict")


def in_child() -> bool:
    return bool(os.environ.get(CHILD_ENV))


def hash_seed() -> str:
    return os.environ.get("PYTHONHASHSEED") or HASH_SEED


def _invocation_plugins(config) -> list[str]:
    """The `-p NAME` options the session was started with (its plugins, or plugins it blocked)."""
    args, out = list(config.invocation_params.args), []
    for i, a in enumerate(args):
        if a == "-p" and i + 1 < len(args):
            out += ["-p", args[i + 1]]
        elif a.startswith("-p") and len(a) > 2:
            out.append(a)
    return out


def command(item) -> list[str]:
    """The child's command line: this test alone, as the session would run it."""
    config = item.config
    nodeid_rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
    target = str(item.path) + (f"::{nodeid_rest}" if nodeid_rest else "")
    cmd = [sys.executable, "-m", "pytest", target, "--rootdir", str(config.rootpath), "-p", "no:cacheprovider",
           "-p", "no:randomly"]
    if config.inipath:
        cmd += ["-c", str(config.inipath)]
    if config.pluginmanager.hasplugin("xdist"):
        cmd += ["-n", "0"]  # one test: no workers of its own (the ini's addopts may ask for some)
    if config.getoption("capture") == "no":
        cmd.append("-s")
    cmd += [f"--import-mode={config.getoption('importmode')}"]
    cmd += [flag for flag in FORWARDED if config.getoption(flag)]
    report = config.getoption("--gc-budget-report")
    if report:
        cmd.append(f"--gc-budget-report={os.path.abspath(report)}")
    return cmd + _invocation_plugins(config)


def run(item) -> None:
    """Run `item` in a fresh interpreter and report its outcome as the session's own."""
    config = item.config
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    fd, out_path = tempfile.mkstemp(prefix="gcbench-budget-", suffix=".json")
    os.close(fd)
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update({CHILD_ENV: out_path, "PYTHONHASHSEED": hash_seed()})
    shown = config.getoption("capture") == "no"
    try:
        proc = subprocess.run(command(item), cwd=config.invocation_params.dir, env=env, text=True,
                              stdout=None if shown else subprocess.PIPE, stderr=None if shown else subprocess.STDOUT,
                              errors="backslashreplace")
        try:
            with open(out_path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = None
    finally:
        os.unlink(out_path)
    reports = _reports(item, data, proc)
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    for message in (data or {}).get("warnings", []):
        _warn(message)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _reports(item, data: dict | None, proc: subprocess.CompletedProcess) -> list:
    from _pytest.reports import TestReport

    config = item.config
    got = []
    for raw in (data or {}).get("reports", []):
        report = config.hook.pytest_report_from_serializable(config=config, data=raw)
        if report is not None and report.nodeid.split("::", 1)[-1] == item.nodeid.split("::", 1)[-1]:
            report.nodeid, report.location = item.nodeid, item.location
            got.append(report)
    if {r.when for r in got} >= {"setup", "teardown"}:
        return got
    # the child ran nothing, or died: say why, as this test's failure
    why = (data or {}).get("errors") or []
    tail = (proc.stdout or "")[-3000:] if isinstance(proc.stdout, str) else ""
    if data is None:
        head = (f"gc_budget: the fresh interpreter that measures this test ended with status {proc.returncode} "
                "before reporting it")
    else:
        head = "gc_budget: the fresh interpreter that measures this test did not find it (" + \
               f"{data.get('collected', 0)} tests collected)"
    text = "\n".join([head, *why, *(["its output, last lines:", tail] if tail.strip() else [])])
    keywords: dict[str, Literal[1]] = dict.fromkeys(item.keywords, 1)
    done = {r.when for r in got}
    out = list(got)
    if "setup" not in done:
        out.append(TestReport(item.nodeid, item.location, keywords, "failed", text, "setup"))
    elif "call" not in done and all(r.passed for r in got):
        out.append(TestReport(item.nodeid, item.location, keywords, "failed", text, "call"))
    out.append(TestReport(item.nodeid, item.location, keywords, "passed", None, "teardown"))
    return out


def _warn(message: dict) -> None:
    from .budget_file import GCBudgetWarning

    category = GCBudgetWarning if message.get("category") == "GCBudgetWarning" else UserWarning
    text = message.get("message", "")
    if category is UserWarning:
        text = f"{message.get('category', 'Warning')}: {text}"
    try:
        warnings.warn_explicit(text, category, message.get("filename") or "<gc_budget>", message.get("lineno") or 0)
    except Warning:  # warnings are errors in this session: the child made its own an error already
        pass


# -- in the child ---------------------------------------------------------------------------------------

class ChildRecorder:
    """Collects the child's reports and warnings; writes them for the parent at the end."""

    def __init__(self, path: str, config=None):
        self.path = path
        self.config = config
        self.reports: list = []
        self.warnings: list = []
        self.errors: list = []

    def pytest_runtest_logreport(self, report) -> None:
        config = self.config
        self.reports.append(config.hook.pytest_report_to_serializable(config=config, report=report))

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(f"collecting {report.nodeid}: {str(report.longrepr)[-2000:]}")

    def pytest_warning_recorded(self, warning_message, when, nodeid, location) -> None:
        self.warnings.append({"category": warning_message.category.__name__, "message": str(warning_message.message),
                              "filename": warning_message.filename, "lineno": warning_message.lineno})

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        data = {"reports": self.reports, "warnings": self.warnings, "errors": self.errors,
                "collected": session.testscollected, "exitstatus": int(exitstatus)}
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(data, f, default=str)
