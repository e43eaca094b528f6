"""Who installs packages into gcbench's environments: uv where it is installed, else pip.

How it works, and why: docs/internals.md, `gcbench.running.installers`.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request

from ..core.errors import UsageError
from ..core.paths import user_cache

CHOICE_VAR = "GCBENCH_INSTALLER"


@dataclasses.dataclass(frozen=True)
class Installer:
    name: str  # "uv" or "pip"
    uv: str | None = None  # the uv executable
    pip_settings: dict = dataclasses.field(default_factory=dict, compare=False)  # pip_config(), read once, for uv

    def venv(self, interpreter: str, folder: pathlib.Path) -> list[str]:
        """The command that makes a virtual environment (with pip in it: gcbench asks pip
        for the jaxlib releases of a pinned jax)."""
        if self.uv:
            return [self.uv, "venv", "--seed", "--python", interpreter, str(folder)]
        return [interpreter, "-m", "venv", str(folder)]

    def install(self, python: str, requirements: list[str]) -> list[str]:
        if self.uv:
            return [self.uv, "pip", "install", "--python", python, *uv_options(self.pip_settings), *requirements]
        return [python, "-m", "pip", "install", "--no-input", "--progress-bar", "off", *requirements]

    def environ(self, base: dict) -> dict:
        """The variables the commands run with."""
        env = dict(base, PIP_DISABLE_PIP_VERSION_CHECK="1")
        if self.uv:
            env["UV_CACHE_DIR"] = str(user_cache("uv"))
            env.update(uv_environ(self.pip_settings))
        return env

    def reason(self, output: str) -> str:
        return uv_reason(output) if self.uv else pip_reason(output)


def choose() -> Installer:
    """uv where it is installed (on PATH, or the `uv` package's own binary), unless
    GCBENCH_INSTALLER says pip; a one-line error when it says uv and there is none."""
    choice = os.environ.get(CHOICE_VAR, "").strip().lower()
    if choice not in ("", "uv", "pip"):
        raise UsageError(f"{CHOICE_VAR} must be uv or pip, got {choice!r}")
    if choice == "pip":
        return Installer("pip")
    found = shutil.which("uv")
    if found is None:
        try:
            import uv  # the uv wheel ships its binary

            found = uv.find_uv_bin()
        except (ImportError, FileNotFoundError):
            found = None
    if found is None:
        if choice == "uv":
            raise UsageError(f"{CHOICE_VAR}=uv, but uv is not installed (pip install uv)")
        return Installer("pip")
    return Installer("uv", found, pip_config())


# -- pip's configuration, for uv --------------------------------------------------------------

_LIST_KEYS = ("extra-index-url", "find-links", "constraint")


def pip_config() -> dict[str, list[str]]:
    """pip's effective settings that say where packages come from: {key: values}. Later
    scopes win for single values (site < user < environment), lists are merged."""
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^[^.]*\.([a-z-]+)='(.*)'$", line.strip())
        if not m:
            continue
        key, value = m.group(1), m.group(2)
        values = value.split()
        if key in _LIST_KEYS:
            out[key] = list(dict.fromkeys(out.get(key, []) + values))
        elif key in ("index-url", "no-index", "cert", "default-timeout"):
            out[key] = values[:1] or [""]
    return out


def _present(location: str) -> bool:
    """False for a local folder or file:// index that does not exist (pip skips those)."""
    if "://" not in location:
        return pathlib.Path(location).exists()
    parsed = urllib.parse.urlparse(location)
    return parsed.scheme != "file" or pathlib.Path(urllib.request.url2pathname(parsed.path)).exists()


def uv_options(config: dict[str, list[str]]) -> list[str]:
    """pip's index settings as `uv pip install` options."""
    opts: list[str] = []
    if config.get("no-index", [""])[0].lower() in ("1", "true", "yes", "on"):
        opts.append("--no-index")
    for key in ("index-url", "extra-index-url", "find-links", "constraint"):
        opts += [x for value in config.get(key, []) if value and _present(value) for x in (f"--{key}", value)]
    if any(o == "--extra-index-url" for o in opts):
        # pip takes the best version from all its indexes; uv by default only looks at the
        # first index that has a package at all
        opts += ["--index-strategy", "unsafe-best-match"]
    return opts


def uv_environ(config: dict[str, list[str]]) -> dict[str, str]:
    """pip's certificate and timeout as uv's variables."""
    env = {}
    cert = config.get("cert", [""])[0]
    if cert:
        env["SSL_CERT_FILE"] = cert
    timeout = config.get("default-timeout", [""])[0]
    if timeout:
        env["UV_HTTP_TIMEOUT"] = timeout
    return env


# -- one-line reasons ---------------------------------------------------------------------------

def pip_reason(output: str) -> str:
    """pip's one-line reason for a failed install."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ").strip() for line in lines if line.startswith("ERROR:")]
    reason = _pip_error(errors) or (lines[-1] if lines else "pip failed without a message")
    if reason.startswith("Cannot install") and "because these package versions have conflicting" in reason:
        reason = reason.split(" because ")[0] + ": conflicting dependencies"
    if _offline(output) and "network" not in reason.lower():
        reason += " (no network: the package index could not be reached)"
    return reason


def _offline(output: str) -> bool:
    """pip's output says the package index could not be reached."""
    return any(s in output for s in ("NewConnectionError", "Network is unreachable", "Temporary failure in name",
                                     "Failed to establish a new connection", "ProxyError"))


_PIP_REASONS = ("No matching distribution found for", "Cannot install", "Could not find a version",
                "ResolutionImpossible", "Failed to build", "Could not build wheels", "Invalid requirement")


def _pip_error(errors: list[str]) -> str | None:
    """The `ERROR:` line that says why, by the kinds that do in that order; else the first."""
    for wanted in _PIP_REASONS:
        reason = next((e for e in errors if e.startswith(wanted)), None)
        if reason:
            return reason
    return errors[0] if errors else None


def uv_reason(output: str) -> str:
    """uv's one-line reason: its `error:` or `×` line with the explanation under it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith(("×", "error:")):
            return _uv_error(line.lstrip("×").removeprefix("error:").strip(), lines[i + 1:i + 4])
    return lines[-1] if lines else "uv failed without a message"


def _uv_error(head: str, after: list[str]) -> str:
    """uv's error line with its cause (the lines after it, drawn as a tree), a missing
    version said plainly."""
    detail = next((x.lstrip("╰─▶│ ").removeprefix("cause:").strip() for x in after
                   if x.startswith(("╰─▶", "│", "Caused by", "cause:"))), "")
    missing = re.search(r"there is no version of (\S+?)(?: and |,|$)", detail)
    if missing:
        return f"{head}: no version of {missing.group(1)} is available"
    return f"{head}: {detail}" if detail and detail not in head else head
