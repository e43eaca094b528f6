"""The Julia bridge: the only module that imports juliacall.

How it works, and why: docs/internals.md, `gcbench.measuring.backends.julia_bridge`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.resources
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from ..workloads import LEARNING_RATE
from . import julia_layout

FRAMEWORKS = ("flux", "lux", "simplechains")


def julia_dir() -> pathlib.Path:
    """Where GCBench.jl lives: $GCBENCH_JULIA_DIR, else the package's `gcbench.julia` (julia/
    of a checkout, or the copy a wheel installs; setup.py maps the folder)."""
    env = os.environ.get("GCBENCH_JULIA_DIR")
    if env:
        return pathlib.Path(env)
    try:
        # a folder on disk in every install setuptools makes (wheels are unzipped)
        return pathlib.Path(str(importlib.resources.files("gcbench.julia")))
    except ModuleNotFoundError:  # an install made before the Julia sources were packaged
        return pathlib.Path(__file__).resolve().parents[4] / "julia"


def juliapkg_meta() -> pathlib.Path | None:
    """juliapkg's record of a finished install (`<project>/pyjuliapkg/meta.json`), where
    juliapkg keeps it for this interpreter; None when juliapkg is not installed."""
    try:
        from juliapkg.state import STATE  # juliacall's own dependency, not juliacall
    except ImportError:
        return None
    return pathlib.Path(STATE["meta"])


def _juliapkg_julia() -> list[str]:
    """The Julia that juliapkg installed or chose for this interpreter: the `executable` its
    meta.json records, and its install folder's bin/julia (`STATE["install"]`: under the
    virtual environment's julia_env, or ~/.julia/environments/pyjuliapkg for a system
    Python; pyjuliapkg's state.py and deps.py)."""
    try:
        from juliapkg.state import STATE
    except ImportError:
        return []
    out = []
    try:
        with open(STATE["meta"]) as f:
            exe = json.load(f).get("executable")
        if isinstance(exe, str):
            out.append(exe)
    except (OSError, ValueError, AttributeError):
        pass
    name = "julia.exe" if os.name == "nt" else "julia"
    return [*out, str(pathlib.Path(STATE["install"], "bin", name))]


def _candidates() -> list[str]:
    found = [os.environ.get("PYTHON_JULIAPKG_EXE"), shutil.which("julia"),
             str(pathlib.Path("~/.juliaup/bin/julia").expanduser()), *_juliapkg_julia(),
             str(pathlib.Path(sys.prefix, "julia_env", "pyjuliapkg", "install", "bin", "julia"))]
    return [c for c in dict.fromkeys(found) if c and pathlib.Path(c).is_file() and os.access(c, os.X_OK)]


# What juliacall admits (its juliapkg.json, "julia": "^1.10.3" in 0.9.20-0.9.37), where it
# cannot be read: PythonCall needs 1.10.3 or newer, and no Julia 2 exists to admit
JULIACALL_JULIA = ((1, 10, 3), (2, 0, 0))


@functools.cache  # asked for every candidate Julia, and again in the refusal's words
def juliacall_bounds() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The Julia versions the installed juliacall admits: [lowest, below), read from its own
    juliapkg.json's caret bound ("^1.10.3": 1.10.3 up to 2.0), else JULIACALL_JULIA."""
    spec = importlib.util.find_spec("juliacall")
    try:
        text = (pathlib.Path(spec.origin).parent / "juliapkg.json").read_text() if spec and spec.origin else ""
        m = re.fullmatch(r"\^(\d+)\.(\d+)\.(\d+)", str(json.loads(text).get("julia", "")).strip()) if text else None
    except (OSError, ValueError, AttributeError):
        m = None
    if m is None:
        return JULIACALL_JULIA
    low = tuple(int(x) for x in m.groups())
    return low, ((low[0] + 1, 0, 0) if low[0] else (0, low[1] + 1, 0))


def admits(version: tuple[int, ...] | None) -> bool:
    """Whether juliacall admits a Julia of `version` with this Python: within its own bounds
    and, where this Python's OpenSSL is older than 3.5, no newer than pyjuliapkg's cap
    (`openssl_cap`). A Julia whose version cannot be read is left to juliacall."""
    if version is None:
        return True
    low, below = juliacall_bounds()
    cap = openssl_cap()
    return low <= version < below and (cap is None or version[:2] <= cap)


def find_julia() -> str | None:
    """A Julia executable juliacall would use without downloading one, or None: the first one
    found that juliacall admits with this Python (`admits`)."""
    return next((c for c in _candidates() if admits(julia_version(c))), None)


def rejected() -> list[str]:
    """The Julia executables found here that juliacall would refuse, each with its version."""
    return [f"{c} ({'.'.join(map(str, v or ()))})" for c in _candidates() if not admits(v := julia_version(c))]


def openssl_cap() -> tuple[int, int] | None:
    """The newest Julia (major, minor) juliacall admits with this Python, or None for no cap:
    Julia 1.12 needs OpenSSL 3.5, so pyjuliapkg bounds Julia ("1 - 1.11") where Python's ssl
    module links an older OpenSSL. Asked of the installed pyjuliapkg itself (deps.py,
    `openssl_compat`): since 0.1.21 it returns (OpenSSL's bound, Julia's bound or None);
    0.1.17-0.1.20 returned OpenSSL's bound alone, a string, and set no Julia bound; a
    pyjuliapkg without the function sets none either."""
    try:
        from juliapkg.deps import openssl_compat  # juliacall's own dependency, not juliacall
    except ImportError:
        return None
    compat = openssl_compat()
    bound = compat[1] if isinstance(compat, tuple) and len(compat) > 1 else None
    m = re.search(r"- *(\d+)\.(\d+)$", bound or "") if isinstance(bound, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


@functools.cache  # find_julia asks for every candidate, status() again
def julia_version(exe: str) -> tuple[int, ...] | None:
    """`julia --version` of an executable ("julia version 1.13.1"), or None if it does not say."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"version (\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else None


@functools.lru_cache(maxsize=1)
def status() -> tuple[bool, str]:
    """(True, "") when the Julia backends can start here, else (False, one-line reason). Fast."""
    if importlib.util.find_spec("juliacall") is None:
        return False, "juliacall is not installed (pip install 'gcbench[julia]')"
    if not (julia_dir() / "GCBench.jl").is_file():
        return False, (f"the Julia sources are not at {julia_dir()} "
                       "(reinstall gcbench, or set GCBENCH_JULIA_DIR to a folder holding GCBench.jl)")
    if find_julia() is None:
        if _candidates():  # every Julia here is one juliacall refuses with this Python
            return False, _refused()
        return False, ("no Julia installed, and gcbench does not download one during a run "
                       "(run `gcbench julia-setup` online, or set PYTHON_JULIAPKG_EXE to a julia executable)")
    meta = juliapkg_meta()
    if meta is not None and not meta.is_file():
        return (
            False,
            f"the Julia packages are not installed yet ({meta} is missing): run `gcbench julia-setup` (online, once)",
        )
    return True, ""


def _refused() -> str:
    """Why no Julia found here will do: which ones, their versions, and what juliacall admits."""
    import ssl

    low, below = juliacall_bounds()
    cap = openssl_cap()
    newest = f"{cap[0]}.{cap[1]}" if cap else f"below {below[0]}.0"
    admitted = f"Julia {'.'.join(map(str, low))} to {newest}"
    why = f" (this Python's {ssl.OPENSSL_VERSION}; Julia 1.12 and newer need OpenSSL 3.5)" if cap else ""
    return (f"juliacall admits {admitted} with this Python{why}, and refuses {', '.join(rejected())}: set "
            f"PYTHON_JULIAPKG_EXE to a Julia it admits, or run `gcbench julia-setup` online to install one")


def configure(threads: int = 1, offline: bool = True) -> None:
    """juliacall's settings; they must be in the environment before juliacall is imported.

    Julia keeps its own defaults otherwise (optimization level 2, as `julia` itself and
    the seed's runs): a user's PYTHON_JULIACALL_OPTIMIZE is honoured and recorded."""
    # N threads in the default pool and none interactive, on every release: since Julia 1.12
    # `-t N` means `-t N,1` (NEWS, #57087), an interactive thread more and the main task in the
    # interactive pool; `N,0` (valid since 1.9) keeps 1.10 and 1.13 cells like for like
    os.environ["PYTHON_JULIACALL_THREADS"] = thread_layout(threads)
    # Julia's GC uses signals at safepoints: with several threads Julia must handle them
    # (PythonCall's documented setting), else the process segfaults.
    os.environ["PYTHON_JULIACALL_HANDLE_SIGNALS"] = "yes"
    # A run never resolves or installs anything (julia-setup did that); julia-setup must.
    if offline:
        os.environ["PYTHON_JULIAPKG_OFFLINE"] = "yes"
    else:
        os.environ.pop("PYTHON_JULIAPKG_OFFLINE", None)
    # pyjuliapkg reads that variable once, when juliapkg.state is first imported, which
    # `status()` may already have done: tell its state directly too, either way
    # (`juliapkg.offline(value)` sets STATE["offline"]; juliapkg/deps.py).
    try:
        import juliapkg
    except ImportError:
        return
    juliapkg.offline(offline)


def thread_layout(threads: int) -> str:
    """Julia's `--threads` for `threads` worker threads: the default pool's, the interactive
    pool empty."""
    return f"{threads},0"


@functools.lru_cache(maxsize=1)
def gcbench_module():
    """Start Julia (once per process) and load julia/GCBench.jl; returns the module."""
    configure(int(os.environ.get("GCBENCH_JULIA_THREADS", "1")), os.environ.get("GCBENCH_JULIA_SETUP") != "1")
    import juliacall  # the one import of juliacall in gcbench

    main = juliacall.Main
    main.include(str(julia_dir() / "GCBench.jl"))
    return main.GCBench


def flush_streams() -> None:
    """Flush Julia's own stdout and stderr, where Julia was started in this process: a worker
    leaves with os._exit (child.leave), which skips Julia's exit hooks and would drop what
    Julia buffered (its warnings among it)."""
    juliacall = sys.modules.get("juliacall")  # imported by gcbench_module, if Julia started here
    if juliacall is None:  # flushed too where GCBench.jl failed to load: Julia's output says why
        return
    with contextlib.suppress(Exception):  # leaving anyway; nothing to report it to
        juliacall.Main.seval("(flush(stdout); flush(stderr); nothing)")


def start(threads: int = 1) -> tuple[bool, str]:
    """Start Julia with `threads` threads and load GCBench.jl: (True, "") or (False, reason)."""
    os.environ["GCBENCH_JULIA_THREADS"] = str(threads)
    try:
        gcbench_module()
    except Exception as e:  # juliacall reports install, resolve and load failures as exceptions
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return False, f"Julia could not start: {first}"
    return True, ""


def setup(say=print) -> tuple[bool, str]:
    """`gcbench julia-setup`: start Julia online, so that juliacall installs what is missing,
    then load each framework in a process of its own (which precompiles it), as a cell
    loads it: one framework's failing extension fails that framework alone (Lux's FluxExt
    and LuxLib's LoopVectorizationExt ran when all three loaded in one process, and no cell
    loads them). `say` hears one line per framework."""
    os.environ["GCBENCH_JULIA_SETUP"] = "1"
    configure(offline=False)  # the environment variable and juliapkg's own state, both online
    ok, reason = start()
    if not ok:
        return ok, reason
    failed = []
    for name in FRAMEWORKS:
        why = load_in_own_process(name)
        say(f"  {name}: {'loaded' if not why else 'failed: ' + why}")
        if why:
            failed.append(f"{name} ({why})")
    status.cache_clear()
    return (False, f"{len(failed)} of {len(FRAMEWORKS)} frameworks failed to load: {'; '.join(failed)}") if failed \
        else (True, "")


def load_in_own_process(framework: str) -> str:
    """Load (and so precompile) `framework` in a fresh Python process that starts Julia as a
    cell does: "" when it loaded, else the last line it printed."""
    code = ("import sys\nfrom gcbench.measuring.backends import julia_bridge as j\n"
            "ok, why = j.start()\n"
            "if ok:\n    j.call('load_framework', sys.argv[1])\n"
            "else:\n    sys.exit(why)\n")
    env = {k: v for k, v in os.environ.items() if k != "GCBENCH_JULIA_SETUP"}  # installed now: offline
    try:
        proc = subprocess.run([sys.executable, "-c", code, framework], capture_output=True, text=True, env=env,
                              timeout=3600)
    except subprocess.TimeoutExpired:
        return "took more than an hour"
    if proc.returncode == 0:
        return ""
    said = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    return said[-1] if said else f"exit status {proc.returncode}"


def call(name: str, *args):
    """Call `GCBench.<name>` with exactly the arity `julia_layout.JULIA_API` declares."""
    expected = julia_layout.JULIA_API[name]
    if len(args) != expected:
        raise TypeError(f"GCBench.{name} takes {expected} arguments, got {len(args)}")
    return getattr(gcbench_module(), name.replace("!", "_b"))(*args)


class JuliaTrainer:
    """A Julia trainer: the whole measurement runs in Julia (`measure`)."""

    measures_itself = True

    def __init__(self, framework: str, workload, params, data):
        self.framework = framework
        self.workload = workload
        self.params = params
        self.data = data
        self._trainer = None
        self.julia_facts: dict = {}

    def prepare(self, schedule: np.ndarray) -> int:
        """Load the framework, hand over the data and build the trainer; return the build's ns."""
        call("load_framework", self.framework)
        jdata = call("setup_data", julia_layout.images_whcn(self.data.images),
                     self.data.labels.astype(np.int64), julia_layout.schedule_columns(schedule))
        t0 = time.perf_counter_ns()
        self._trainer = call("build", self.framework, julia_layout.layer_table(self.workload),
                             julia_layout.stacked_weights(self.workload, self.params, self.framework), jdata,
                             LEARNING_RATE)
        return time.perf_counter_ns() - t0

    def measure(self, schedule: np.ndarray, cell, policy) -> dict:
        """The cell's warm-up and timed steps, run in Julia; `{"refused": reason}` when the
        policy would keep more garbage than the machine has free memory."""
        build_ns = self.prepare(schedule)
        raw = call("run!", self._trainer, cell.warmup, cell.steps, policy.kind, max(policy.every, 1),
                   cell.loss_every, cell.bookkeeping)
        if "refused" in raw:
            return {"refused": str(raw["refused"])}
        run = julia_layout.JuliaRun.read(raw)
        fields = julia_layout.result_fields(run)
        fields["warmup"].update(traces={}, build_ns=build_ns)
        self.julia_facts = run.facts()
        return fields

    def explain_allocs(self, first_step: int, steps: int, sample_rate: float, bookkeeping: str = "none") -> dict:
        """Sampled allocations of `steps` steps by type, package and site (Profile.Allocs)."""
        raw = call("explain_allocs", self._trainer, first_step, steps, sample_rate, bookkeeping)
        return dataclasses.asdict(julia_layout.JuliaAllocTables.read(raw))

    def param_count(self) -> int:
        return int(call("param_count", self._trainer))

    def trace_counts(self) -> dict[str, int]:
        return {}

    def metadata(self) -> dict:
        return {"julia_framework": self.framework, **self.julia_facts}


def build(workload, params, data, framework: str) -> JuliaTrainer:
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown Julia framework {framework!r}")
    return JuliaTrainer(framework, workload, params, data)
