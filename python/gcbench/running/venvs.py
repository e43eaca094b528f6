"""Isolated environments: the same cells under other interpreters and package versions.

How it works, and why: docs/internals.md, `gcbench.running.venvs`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import filelock
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from ..core import files, records
from ..core.errors import UsageError
from ..core.paths import user_cache
from ..measuring.envspec import VERSION_REQUEST, EnvSpec, normalize, requirement_name
from . import installers

LAYOUT = 1  # bump when what goes into an environment folder changes: older ones get rebuilt
MARKER = "gcbench-env.json"
PIP_TIMEOUT_S = 1800
_PROBE = ("import importlib.util, json, platform, sys; print(json.dumps({'version': platform.python_version(), "
          "'executable': sys.executable, 'venv': importlib.util.find_spec('venv') is not None}))")


class EnvUnavailable(Exception):
    """An environment that cannot be built; `str()` is the one-line reason."""


# -- interpreters -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Interpreter:
    path: str  # what the venv is made from, as the interpreter reports itself
    version: str


@dataclasses.dataclass(frozen=True)
class _Probed:
    """What an interpreter says of itself (_PROBE)."""

    version: str
    executable: str
    venv: bool  # whether it has the venv module


def _probe(path: str) -> _Probed | None:
    try:
        out = subprocess.run([path, "-c", _PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        return records.from_json(json.loads(out.stdout.strip().splitlines()[-1]), _Probed, path)
    except (ValueError, IndexError, UsageError):
        return None


def version_key(version: str) -> tuple:
    """Release order of versions as PEP 440 has it (`0.13.10` after `0.13.9`, `0.4.30rc1`
    after `0.4.4` and before `0.4.30`); what is not a version sorts before every version,
    by its text."""
    try:
        return (1, Version(version), "")
    except InvalidVersion:
        return (0, Version("0"), version)


def _pyenv_candidates(minor: str) -> list[str]:
    root = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv") / "versions"
    found = [p for p in root.glob(f"{minor}*/bin/python{minor}") if p.is_file()]
    found.sort(key=lambda p: version_key(p.parent.parent.name), reverse=True)
    return [str(p) for p in found]


def find_interpreter(request: str | None) -> Interpreter:
    """The interpreter for `python=REQUEST`: a version (`3.12`, `3.12.1`) looked up as
    `python3.12` on PATH and under pyenv, a command name, or a path. None: this one."""
    if request is None:
        info = _probe(sys.executable)
        return Interpreter(info.executable, info.version) if info else \
            Interpreter(sys.executable, ".".join(map(str, sys.version_info[:3])))
    if VERSION_REQUEST.match(request):
        return _of_version(request)
    path = os.path.expanduser(request)  # noqa: PTH111 - as typed: "./python" keeps its separator
    if os.sep not in path:
        path = shutil.which(path) or path
    if not pathlib.Path(path).exists():
        raise EnvUnavailable(f"python={request}: no such interpreter")
    info = _probe(path)
    if info is None:
        raise EnvUnavailable(f"python={request}: does not run as a Python interpreter")
    return _usable(info, request)


def _of_version(request: str) -> Interpreter:
    """The interpreter of version `request` (`3.12`, `3.12.1`): `python3.12` on PATH, then
    under pyenv; else why none was found, with what was tried."""
    minor = ".".join(request.split(".")[:2])
    candidates = [c for c in [shutil.which(f"python{minor}")] if c] + _pyenv_candidates(minor)
    for candidate in candidates:
        info = _probe(candidate)
        if info and (info.version == request or info.version.startswith(request + ".")):
            return _usable(info, request)
    where = f"python{minor} on PATH and under {pathlib.Path(os.environ.get('PYENV_ROOT') or '~/.pyenv')}/versions"
    tried = f" (tried {', '.join(candidates)})" if candidates else ""
    raise EnvUnavailable(f"no Python {request} on this machine: looked for {where}{tried}")


def _usable(info: _Probed, request: str) -> Interpreter:
    if not info.venv:
        raise EnvUnavailable(f"python={request} ({info.executable}) has no venv module")
    if version_key(info.version) < version_key("3.10"):
        raise EnvUnavailable(f"python={request} is Python {info.version}; gcbench needs 3.10 or newer")
    return Interpreter(info.executable, info.version)


# -- what goes into an environment ----------------------------------------------------------


def _gcbench_requirements() -> list[tuple[str | None, str]]:
    """gcbench's declared requirements as (extra or None, requirement without the extra marker)."""
    try:
        declared = importlib.metadata.requires("gcbench") or []
    except importlib.metadata.PackageNotFoundError:
        raise UsageError("environments need gcbench installed (pip install -e .), to know its dependencies") from None
    out = []
    for req in declared:
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", req)
        if extra:
            req = re.sub(r"""\s*(and\s+)?extra\s*==\s*["'][^"']+["']""", "", req).rstrip().rstrip(";").rstrip()
            req = re.sub(r";\s*and\s+", "; ", req)
        out.append((extra.group(1) if extra else None, req))
    return out


def _wanted(extra: str | None, name: str, wanted: set[str]) -> bool:
    """A requirement an environment gets: gcbench's own (no extra), or a backend's package
    from an extra that installs backends (not the toolchain's, the report's, CUDA's)."""
    return extra is None or (name in wanted and extra not in ("test", "report", "all", "envs")
                             and not extra.startswith("cuda"))


def requirements(spec: EnvSpec, distributions: list[str]) -> list[str]:
    """What pip installs: gcbench's own dependencies, the requirement gcbench declares for each
    of `distributions` (the backends' packages), and the pins, which replace any of those."""
    declared = _gcbench_requirements()
    pinned = {requirement_name(p) for p in spec.pins}
    wanted = {normalize(d) for d in distributions}
    out: list[str] = []
    for extra, req in declared:
        name = requirement_name(req)
        if name not in pinned and name != "gcbench" and _wanted(extra, name, wanted) and req not in out:
            out.append(req)
    missing = wanted - {requirement_name(r) for r in out} - pinned
    out += sorted(missing)  # a package gcbench does not declare: whatever pip finds
    return sorted(out, key=requirement_name) + list(spec.pins)


def pinned_version(pin: str) -> str | None:
    """V when `pin` is `name==V` (or `name[extras]==V`) with one exact version, else None."""
    try:
        specs = list(Requirement(pin).specifier)
    except InvalidRequirement:
        return None
    return specs[0].version if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version else None


def exact_pin(spec: EnvSpec, name: str) -> str | None:
    """V when the environment pins `name==V`."""
    pin = spec.pin_for(name)
    return None if pin is None else pinned_version(pin)


def matching_jaxlib(jax_version: str, available: list[str]) -> str:
    """The jaxlib release jax `jax_version` goes with: the same version when it exists, else
    the newest release before it (jax 0.5.2 shipped without a jaxlib 0.5.2: it uses 0.5.1)."""
    if jax_version in available:
        return jax_version
    older = [v for v in available if version_key(v) <= version_key(jax_version)]
    return max(older, key=version_key) if older else jax_version


# -- building -------------------------------------------------------------------------------


@dataclasses.dataclass
class Environment:
    """A built environment, ready for workers."""

    spec: EnvSpec
    path: pathlib.Path
    python: str  # the environment's interpreter
    python_version: str
    requirements: list[str]
    packages: dict[str, str]  # every installed distribution: name -> version
    reused: bool = False

    def describe(self) -> dict:
        """What results record as their `environment`."""
        return {"spec": self.spec.text, "name": self.spec.name, "key": self.path.name, "python": self.python_version,
                "pins": list(self.spec.pins), "requirements": self.requirements, "packages": self.packages}


def envs_root() -> pathlib.Path:
    return user_cache("envs")


def env_key(interpreter: Interpreter, reqs: list[str]) -> str:
    blob = json.dumps({"layout": LAYOUT, "interpreter": os.path.realpath(interpreter.path),
                       "version": interpreter.version, "requirements": reqs}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _venv_python(folder: pathlib.Path) -> pathlib.Path:
    return folder / "bin" / "python"


def _gcbench_package_dir() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parents[1]


def _link_gcbench(folder: pathlib.Path, site_packages: str) -> None:
    """Make the running gcbench importable in the environment, and nothing else of ours."""
    holder = folder / "gcbench-link"
    holder.mkdir(exist_ok=True)
    link = holder / "gcbench"
    tmp = holder / f".gcbench-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(_gcbench_package_dir(), target_is_directory=True)
    pathlib.Path(tmp).replace(link)
    pth = pathlib.Path(site_packages) / "gcbench-link.pth"
    pth.write_text(str(holder) + "\n")


def isolated_environ(base=None) -> dict:
    """Environment variables for a process in one of our environments: nothing of the
    caller's PYTHONPATH, PYTHONHOME or user site-packages reaches it."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_USER")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(cmd: list[str], log_file, on_line=None, timeout: float = PIP_TIMEOUT_S,
         installer: installers.Installer | None = None) -> tuple[int, str]:
    """Run `cmd`, teeing its output into `log_file`; return (exit code, output). The
    command is stopped after `timeout` seconds whether or not it prints anything."""
    env = isolated_environ()
    env = installer.environ(env) if installer is not None else dict(env, PIP_DISABLE_PIP_VERSION_CHECK="1")
    # a temporary folder of the command's own, removed after it: what it leaves there (uv's
    # uv-setuptools-*.lock) never piles up in the user's
    scratch = tempfile.mkdtemp(prefix="gcbench-install-")
    env.update(TMPDIR=scratch, TMP=scratch, TEMP=scratch)
    try:
        return _run_in(cmd, log_file, env, on_line, timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_in(cmd: list[str], log_file, env: dict, on_line, timeout: float) -> tuple[int, str]:
    import threading

    log_file.write(f"$ {' '.join(cmd)}\n")
    try:  # an installer may print bytes that are not UTF-8 (a path, a locale): shown replaced, never a crash
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                env=env)
    except OSError as e:  # not there any more, not executable, built for another machine ("Exec format error")
        raise UsageError(f"cannot run {cmd[0]}: {files.describe_os_error(e)}") from None
    out: list[str] = []

    def read() -> None:
        for line in proc.stdout or ():
            out.append(line)
            log_file.write(line)
            if on_line is not None:
                on_line(line.rstrip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        reader.join(timeout=5)
        out.append(f"ERROR: gave up after {timeout:g} s\n")
        log_file.flush()
        return proc.returncode, "".join(out)
    reader.join()
    log_file.flush()
    return proc.returncode, "".join(out)


@dataclasses.dataclass(frozen=True)
class Marker:
    """An environment folder's MARKER, written last: what was built there, and when."""

    layout: int
    spec: str
    python: str  # its version
    requirements: list[str]
    packages: dict[str, str]
    site_packages: str
    built: str
    interpreter: str = ""  # what it was made from
    installer: str = ""


def _read_marker(folder: pathlib.Path) -> Marker | None:
    """The folder's marker, or None where the environment is unfinished, of an older layout
    or unreadable: then it is rebuilt."""
    try:
        marker = records.from_json(json.loads((folder / MARKER).read_text()), Marker, str(folder / MARKER))
    except (OSError, ValueError, UsageError):
        return None
    if marker.layout != LAYOUT or not _venv_python(folder).exists():
        return None
    return marker


def ensure(spec: EnvSpec, distributions: list[str], rebuild: bool = False, status=None) -> Environment:
    """The built environment for `spec` with `distributions` installed: from the cache, or
    built now. `status(text)` is told what is happening. Raises `EnvUnavailable`."""
    status = status or (lambda text: None)
    status("finding the interpreter")
    interpreter = find_interpreter(spec.python)
    reqs = requirements(spec, distributions)
    folder = envs_root() / f"py{interpreter.version}-{env_key(interpreter, reqs)}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(folder.parent / (folder.name + ".lock")):  # another gcbench building it: wait
        marker = None if rebuild else _read_marker(folder)
        if marker is not None:
            _link_gcbench(folder, marker.site_packages)  # the running gcbench, wherever it lives now
            return Environment(spec, folder, str(_venv_python(folder)), marker.python, marker.requirements,
                               marker.packages, reused=True)
        return _build(spec, interpreter, reqs, folder, status)


def _jaxlib_pin(spec: EnvSpec, python: str, log, status) -> list[str]:
    """The jaxlib that goes with an exact jax pin (where jaxlib is not pinned itself), from
    the versions the index lists."""
    jax_version = exact_pin(spec, "jax")
    if jax_version is None or spec.pin_for("jaxlib") is not None:
        return []
    status(f"looking up the jaxlib of jax {jax_version}")
    code, out = _run([python, "-m", "pip", "index", "versions", "jaxlib"], log, timeout=300)
    listed = re.search(r"Available versions:\s*(.+)", out) if code == 0 else None
    available = [v.strip() for v in listed.group(1).split(",")] if listed else []
    return [f"jaxlib=={matching_jaxlib(jax_version, available)}"]


def _build(spec: EnvSpec, interpreter: Interpreter, reqs: list[str], folder: pathlib.Path, status) -> Environment:
    if folder.exists():  # half-built, stale or to be rebuilt: never reused
        shutil.rmtree(folder)
    log_path = folder.parent / (folder.name + ".log")
    installer = installers.choose()
    with open(log_path, "w") as log:
        try:
            status(f"creating a virtual environment with Python {interpreter.version} ({installer.name})")
            code, out = _run(installer.venv(interpreter.path, folder), log, installer=installer)
            if code != 0:
                raise EnvUnavailable(f"{installer.name} could not make the environment: {installer.reason(out)}")
            python = str(_venv_python(folder))
            reqs = reqs + _jaxlib_pin(spec, python, log, status)
            status(f"installing {len(reqs)} requirements")
            code, out = _run(installer.install(python, reqs), log, on_line=lambda line: _pip_status(line, status),
                             installer=installer)
            if code != 0:
                raise EnvUnavailable(f"{installer.reason(out)} ({installer.name}'s log: {log_path})")
            status("checking the environment")
            code, out = _run(
                [python, "-c", "import json, sysconfig; print(json.dumps(sysconfig.get_paths()['purelib']))"], log
            )
            site_packages = json.loads(out.strip().splitlines()[-1])
            _link_gcbench(folder, site_packages)
            code, out = _run([python, "-c", _INVENTORY], log)
            if code != 0:
                raise EnvUnavailable(f"gcbench does not import in the new environment: {out.strip().splitlines()[-1]}")
            inventory = records.from_json(json.loads(out.strip().splitlines()[-1]), _Inventory, "the new environment")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    packages = {normalize(k): v for k, v in sorted(inventory.packages.items())}
    marker = Marker(LAYOUT, spec.text, inventory.python, reqs, packages, site_packages,
                    time.strftime("%Y-%m-%dT%H:%M:%S%z"), interpreter.path, installer.name)
    tmp = folder / (MARKER + ".tmp")
    tmp.write_text(json.dumps(records.to_json(marker), indent=1))
    pathlib.Path(tmp).replace(folder / MARKER)  # last: from now on the environment counts as built
    return Environment(spec, folder, str(_venv_python(folder)), inventory.python, reqs, packages)


@dataclasses.dataclass(frozen=True)
class _Inventory:
    """What the new environment says it holds (_INVENTORY)."""

    python: str
    packages: dict[str, str]


_INVENTORY = ("import importlib.metadata as m, json, platform, gcbench; "
              "print(json.dumps({'python': platform.python_version(), 'packages': "
              "{d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}}))")


def _pip_status(line: str, status) -> None:
    for prefix in ("Collecting ", "Downloading ", "Installing collected packages", "Successfully installed",
                   "Building wheel", "Using cached ", "Resolved ", "Prepared ", "Installed ", "Updating "):
        if line.lstrip().startswith(prefix):
            status(line.strip()[:100])
            return


def _built(spec: EnvSpec, env: Environment, seconds: float) -> str:
    """An environment ready: its Python and key packages' versions, reused or built."""
    how = "reused from the cache" if env.reused else f"built in {seconds:.0f} s"
    shown = list(_SHOWN) + [requirement_name(p) for p in spec.pins]
    versions = ", ".join(f"{d} {env.packages[d]}" for d in dict.fromkeys(shown) if d in env.packages)
    return f"Python {env.python_version}{', ' + versions if versions else ''}; {how}"


def build_all(specs: list[EnvSpec], distributions: list[str], rebuild: bool = False, log=print,
              progress: bool | None = None) -> dict[str, Environment | EnvUnavailable]:
    """Every environment of `specs`, built or from the cache; a failure is kept as its
    `EnvUnavailable` and the others go on. Keys are `spec.text`."""
    from tqdm import tqdm

    show_bar = sys.stderr.isatty() if progress is None else progress
    out: dict[str, Environment | EnvUnavailable] = {}
    for n, spec in enumerate(specs, 1):
        desc = f"[env {n}/{len(specs)}] {spec.name}"
        bar = tqdm(total=None, desc=desc, bar_format="{desc}: {elapsed} {postfix}", dynamic_ncols=True) \
            if show_bar else None

        def status(text, bar=bar):
            if bar is not None:
                bar.set_postfix_str(text)

        t0 = time.monotonic()
        try:
            env = ensure(spec, distributions, rebuild, status)
            out[spec.text] = env
            message = f"{desc}: {_built(spec, env, time.monotonic() - t0)}"
        except EnvUnavailable as e:
            out[spec.text] = e
            message = f"{desc}: unavailable: {e}"
        finally:
            if bar is not None:
                bar.close()
        log(message)
    return out


_SHOWN = ("jax", "jaxlib", "equinox", "flax", "optax")


@dataclasses.dataclass(frozen=True)
class Cached:
    """An environment folder in the cache; `marker` None: unfinished (rebuilt when next used)."""

    folder: pathlib.Path
    bytes: int
    marker: Marker | None


def cached() -> list[Cached]:
    """The environment folders in the cache, with their size and what was built there."""
    root = envs_root()
    return [Cached(folder, sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_symlink()),
                   _read_marker(folder))
            for folder in (sorted(root.iterdir()) if root.is_dir() else []) if folder.is_dir()]


def remove_all() -> int:
    """Delete every cached environment (and their logs); return how many folders went."""
    root = envs_root()
    if not root.is_dir():
        return 0
    count = 0
    try:  # what is inside, one entry at a time: the folder itself may be a link to a larger disk, and stays
        for entry in list(root.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
                count += 1
            else:
                entry.unlink()
    except OSError as e:
        raise UsageError(f"cannot remove the environments in {root}: {files.describe_os_error(e)}") from None
    return count
