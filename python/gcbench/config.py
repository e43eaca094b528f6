"""What to run: suites (TOML), their validation, and the cells they expand to.

A suite names backends, workloads, GC policies, repeats and step counts; the plan is
their product, one `Cell` per (backend, workload, policy, repeat). Command-line flags
override a suite's values. Two suites ship with gcbench: `default` and `quick`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import pathlib
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from . import gcpolicy
from .backends import BACKENDS, get_backend
from .errors import UsageError
from .workloads import get_workload

SUITE_KEYS = {"name", "backends", "workloads", "gc", "steps", "warmup", "repeats",
              "networks", "seed", "timeout", "loss_every", "julia_threads", "envs"}


def cell_label(backend: str, workload: str, policy: str, repeat: int = 0, env: str | None = None) -> str:
    """How a cell is named to people: backend/workload/policy, with #repeat after the first
    and the environment's name in brackets when it runs in one."""
    return f"{backend}/{workload}/{policy}" + (f" #{repeat}" if repeat else "") + (f" [{env}]" if env else "")


@dataclasses.dataclass(frozen=True)
class Cell:
    """One measurement: a backend training a workload under a GC policy, once."""

    backend: str
    workload: str
    policy: str
    repeat: int
    networks: int
    params_per_network: int
    steps: int
    warmup: int
    seed: int
    loss_every: int
    data_path: str | None = None
    julia_threads: int = 1
    env: str | None = None  # an environment's spec (envs.EnvSpec.text); None: gcbench's own interpreter

    @property
    def env_spec(self):
        from .envs import parse

        return None if self.env is None else parse(self.env)

    @property
    def id(self) -> str:
        base = f"{self.backend}__{self.workload}__{self.policy.replace(':', '-')}__r{self.repeat}"
        return base if self.env is None else f"{base}__{self.env_spec.slug}"

    @property
    def label(self) -> str:
        return cell_label(self.backend, self.workload, self.policy, self.repeat,
                          None if self.env is None else self.env_spec.name)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Suite:
    name: str = "custom"
    backends: list[str] = dataclasses.field(default_factory=lambda: ["all"])
    workloads: list[str] = dataclasses.field(default_factory=lambda: ["mlp", "lenet5"])
    gc: list[str] = dataclasses.field(default_factory=lambda: ["default"])
    steps: int = 300
    warmup: int = 5
    repeats: int = 1
    networks: dict[str, int] = dataclasses.field(default_factory=dict)
    seed: int = 0
    timeout: float = 900.0
    loss_every: int = 10
    julia_threads: int = 1
    envs: list[str] = dataclasses.field(default_factory=list)  # environment specs; none: this interpreter

    def validate(self) -> Suite:
        for key in ("steps", "repeats", "loss_every", "julia_threads"):
            _positive_int(key, getattr(self, key))
        if not isinstance(self.warmup, int) or self.warmup < 1:
            raise UsageError(f"warmup must be an integer >= 1 (compilation happens there), got {self.warmup!r}")
        if not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            raise UsageError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise UsageError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.backends == ["all"]:
            self.backends = list(BACKENDS)
        for name in self.backends:
            get_backend(name)
        for name in self.workloads:
            get_workload(name)
        for text in self.gc:
            gcpolicy.parse(text)
        for name, n in self.networks.items():
            get_workload(name)
            _positive_int(f"networks for {name}", n)
        if not isinstance(self.envs, list) or not all(isinstance(e, str) for e in self.envs):
            raise UsageError("envs must be a list of environment strings like \"python=3.12 jax==0.8.0\"")
        from .envs import parse_all

        self.envs = [spec.text for spec in parse_all(self.envs)]
        for field in ("backends", "workloads", "gc"):
            values = getattr(self, field)
            if not values:
                raise UsageError(f"the suite names no {field}")
            if len(set(values)) != len(values):
                raise UsageError(f"{field} lists a name twice: {', '.join(values)}")
        return self

    def cells(self, data_path: str | None = None) -> list[Cell]:
        out = []
        for env in self.envs or [None]:
            for backend in self.backends:
                for name in self.workloads:
                    workload = get_workload(name)
                    for policy in self.gc:
                        for repeat in range(self.repeats):
                            out.append(Cell(
                                backend=backend, workload=name, policy=gcpolicy.parse(policy).name,
                                repeat=repeat, networks=self.networks.get(name, workload.default_networks),
                                params_per_network=workload.params_per_network, steps=self.steps,
                                warmup=self.warmup, seed=self.seed, loss_every=self.loss_every,
                                data_path=data_path, julia_threads=self.julia_threads, env=env,
                            ))
        return out


def _positive_int(what: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UsageError(f"{what} must be a positive integer, got {value!r}")


def user_cache(*parts: str) -> pathlib.Path:
    """A folder in the user cache: `$XDG_CACHE_HOME/gcbench/...` (default `~/.cache/gcbench/...`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base, "gcbench", *parts)


def split_list(text: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c']"""
    return [part.strip() for part in text.split(",") if part.strip()]


def load_suite(name_or_path: str) -> Suite:
    """A shipped suite by name (`default`, `quick`) or a TOML file by path."""
    shipped = importlib.resources.files("gcbench") / "suites" / f"{name_or_path}.toml"
    if shipped.is_file():
        text, where = shipped.read_text(), f"suite {name_or_path!r}"
    else:
        path = pathlib.Path(name_or_path)
        if not path.is_file():
            names = sorted(p.name.removesuffix(".toml") for p in (importlib.resources.files("gcbench") / "suites").iterdir()
                           if p.name.endswith(".toml"))
            raise UsageError(f"no suite {name_or_path!r}: not a shipped suite ({', '.join(names)}) nor a file")
        text, where = path.read_text(), str(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{where}: invalid TOML: {e}") from None
    unknown = set(raw) - SUITE_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown keys {', '.join(sorted(unknown))}; valid keys: {', '.join(sorted(SUITE_KEYS))}")
    if isinstance(raw.get("backends"), str):
        raw["backends"] = split_list(raw["backends"])
    suite = Suite(**raw)
    if not isinstance(suite.networks, dict):
        raise UsageError(f"{where}: networks must be a table of workload = count")
    return suite


def check_out_dir(path: str | os.PathLike) -> pathlib.Path:
    """The output folder, created; a clear error when it cannot be one."""
    path = pathlib.Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"output folder {path} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create output folder {path}: {e.strerror}") from None
    return path
