"""What to run: suites (TOML), their validation, and the plan of cells they expand to.

A suite names backends, workloads, GC policies, repeats, step counts and batch sizes;
the plan is their product, one `Cell` per (backend, workload, policy, environment,
repeat). Repeats are the unit of inference, so the plan runs them interleaved: round
1 runs every cell once in a seeded shuffled order, then round 2, and so on, so that a
drift of the machine falls on every cell alike. Command-line flags override a suite's
values. Two suites ship with gcbench: `default` and `quick`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import math
import pathlib
import random
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from ..core import files
from ..core.checks import is_int, is_name
from ..core.errors import UsageError
from ..measuring import gcpolicy
from ..measuring.backends import BACKENDS, get_backend
from ..measuring.cell import Cell
from ..measuring.workloads import BATCH_SIZE, get_workload
from .cluster_options import SlurmOptions

SUITE_KEYS = {"name", "backends", "workloads", "gc", "steps", "warmup", "repeats", "networks", "batch_size",
              "seed", "timeout", "loss_every", "julia_threads", "envs", "bookkeeping", "alloc_blocks", "slurm", "also"}
BOOKKEEPING = ("none", "metrics")
MAX_STEPS = 10_000_000  # beyond this, per-step arrays alone outgrow any machine
MAX_NETWORKS = 100_000
MAX_BATCH = 65_536



def _int_in(what: str, value, low: int, high: int) -> None:
    if not is_int(value) or not low <= value <= high:
        raise UsageError(f"{what} must be an integer from {low:,} to {high:,}, got {value!r}")


def _names(what: str, value) -> list[str]:
    """A list of names: a list of strings, or one comma-separated string."""
    if isinstance(value, str):
        value = split_list(value, what)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{what} must be a list of names, like [\"a\", \"b\"], got {value!r}")
    return value


@dataclasses.dataclass
class Suite:
    name: str = "custom"
    backends: list[str] = dataclasses.field(default_factory=lambda: ["all"])
    workloads: list[str] = dataclasses.field(default_factory=lambda: ["mlp", "lenet5"])
    gc: list[str] = dataclasses.field(default_factory=lambda: ["default"])
    steps: int = 300
    warmup: int = 5
    repeats: int = 3
    networks: dict[str, int] = dataclasses.field(default_factory=dict)
    batch_size: int | dict[str, int] = BATCH_SIZE  # one for all workloads, or per workload
    seed: int = 0
    timeout: float = 900.0
    loss_every: int = 10
    julia_threads: int = 1
    envs: list[str] = dataclasses.field(default_factory=list)  # environment specs; none: this interpreter
    bookkeeping: str = "none"
    alloc_blocks: bool = False
    slurm: dict = dataclasses.field(default_factory=dict)  # `[slurm]`: see cluster_options.SlurmOptions
    # `[[also]]` tables: more cells, each table its own backends x workloads x gc (the quick
    # look's vit cells); dropped when the command line names backends, workloads or gc
    also: list = dataclasses.field(default_factory=list)

    def _check_switches(self) -> None:
        """The bookkeeping a loop keeps, and whether allocations are counted."""
        if self.bookkeeping not in BOOKKEEPING:
            raise UsageError(f"bookkeeping must be one of {', '.join(BOOKKEEPING)}, got {self.bookkeeping!r}")
        if not isinstance(self.alloc_blocks, bool):
            raise UsageError(f"alloc_blocks must be true or false, got {self.alloc_blocks!r}")

    def _resolve_names(self) -> None:
        """Every backend (`all`: each there is), workload and policy known; the policies
        named as they parse."""
        if self.backends == ["all"]:
            self.backends = list(BACKENDS)
        for name in self.backends:
            get_backend(name)
        for name in self.workloads:
            get_workload(name)
        self.gc = [gcpolicy.parse(text).name for text in self.gc]

    def _parse_envs(self) -> None:
        """The environments, each a spec that parses, kept as its text."""
        if not isinstance(self.envs, list) or not all(isinstance(e, str) for e in self.envs):
            raise UsageError("envs must be a list of environment strings like \"python=3.12 jax==0.8.0\"")
        from ..measuring.envspec import parse_all

        self.envs = [spec.text for spec in parse_all(self.envs)]

    def validate(self) -> Suite:
        if not is_name(self.name):
            raise UsageError(f"suite name must be letters, digits, '.', '_' or '-' (at most 80, not starting "
                             f"with '.'), got {self.name!r}")
        self.backends = _names("backends", self.backends)
        self.workloads = _names("workloads", self.workloads)
        self.gc = _names("gc", self.gc)
        self._check_numbers()
        self._check_switches()
        self._resolve_names()
        self._check_per_workload()
        self._parse_envs()
        self.slurm_options()  # a bad [slurm] table is refused when the suite is read
        self._check_lists()
        tables = self.also if isinstance(self.also, list) else [None]  # not a list: refused by _also
        self.also = [self._also(i, table) for i, table in enumerate(tables)]
        return self

    def _check_lists(self) -> None:
        """Backends, workloads and policies: each named, none twice."""
        for field in ("backends", "workloads", "gc"):
            values = getattr(self, field)
            if not values:
                raise UsageError(f"the suite names no {field}")
            if len(set(values)) != len(values):
                raise UsageError(f"{field} lists a name twice: {', '.join(values)}")

    def _check_numbers(self) -> None:
        """Steps, repeats, warm-up, timeout and the rest: integers (or seconds) in range."""
        _int_in("steps", self.steps, 1, MAX_STEPS)
        _int_in("repeats", self.repeats, 1, 1000)
        _int_in("loss_every", self.loss_every, 1, MAX_STEPS)
        _int_in("julia_threads", self.julia_threads, 1, 1024)
        if not is_int(self.warmup) or not 1 <= self.warmup <= 10_000:
            raise UsageError(f"warmup must be an integer from 1 to 10,000 (compilation happens there), "
                             f"got {self.warmup!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) \
                or not math.isfinite(self.timeout) or self.timeout <= 0:
            raise UsageError(f"timeout must be a positive, finite number of seconds, got {self.timeout!r}")
        _int_in("seed", self.seed, 0, 2**63 - 1)

    def _check_per_workload(self) -> None:
        """`networks` and (where it is a table) `batch_size`: a known workload each, in range."""
        if not isinstance(self.networks, dict):
            raise UsageError("networks must be a table of workload = count")
        for name, n in self.networks.items():
            get_workload(name)
            _int_in(f"networks for {name}", n, 1, MAX_NETWORKS)
        sizes = self.batch_size if isinstance(self.batch_size, dict) else None
        if sizes is not None:
            for name, b in sizes.items():
                get_workload(name)
                _int_in(f"batch_size for {name}", b, 1, MAX_BATCH)
        else:
            _int_in("batch_size", self.batch_size, 1, MAX_BATCH)

    def _also(self, i: int, table) -> dict:
        """One `[[also]]` table, checked: backends, workloads and gc, each a non-empty list."""
        where = f"also[{i}]"
        if not isinstance(table, dict) or set(table) != {"backends", "workloads", "gc"}:
            raise UsageError(f"{where} must be a table with backends, workloads and gc (lists of names)")
        out = {}
        for field in ("backends", "workloads", "gc"):
            values = _names(f"{where}.{field}", table[field])
            if not values:
                raise UsageError(f"{where} names no {field}")
            out[field] = values
        out["backends"] = list(BACKENDS) if out["backends"] == ["all"] else out["backends"]
        for name in out["backends"]:
            get_backend(name)
        for name in out["workloads"]:
            get_workload(name)
        out["gc"] = [gcpolicy.parse(text).name for text in out["gc"]]
        return out

    def all_backends(self) -> list[str]:
        return list(dict.fromkeys(b for b, _, _ in self.combinations()))

    def all_workloads(self) -> list[str]:
        return list(dict.fromkeys(w for _, w, _ in self.combinations()))

    def combinations(self) -> list[tuple[str, str, str]]:
        """(backend, workload, policy) of every cell of one round: the suite's product, then
        each `[[also]]` table's, each combination once."""
        combos = [(b, w, p) for b in self.backends for w in self.workloads for p in self.gc]
        for table in self.also:
            combos += [(b, w, p) for b in table["backends"] for w in table["workloads"] for p in table["gc"]]
        return list(dict.fromkeys(combos))

    def slurm_options(self) -> SlurmOptions:
        return SlurmOptions.from_table(self.slurm)

    def batch_for(self, workload: str) -> int:
        if isinstance(self.batch_size, dict):
            return self.batch_size.get(workload, BATCH_SIZE)
        return self.batch_size

    def cells(self, data_path: str | None = None) -> list[Cell]:
        """Every cell of the plan, in the order they run: round by round, each round in a
        seeded shuffled order (the same seed gives the same order)."""
        rounds = []
        for repeat in range(self.repeats):
            one = []
            envs: list[str | None] = [*self.envs] or [None]
            for env in envs:
                for backend, name, policy in self.combinations():
                    workload = get_workload(name)
                    one.append(Cell(
                        backend=backend, workload=name, policy=policy, repeat=repeat,
                        networks=self.networks.get(name, workload.default_networks),
                        params_per_network=workload.params_per_network, steps=self.steps,
                        warmup=self.warmup, seed=self.seed, loss_every=self.loss_every,
                        data_path=data_path, julia_threads=self.julia_threads, env=env,
                        batch_size=self.batch_for(name), bookkeeping=self.bookkeeping,
                        alloc_blocks=self.alloc_blocks,
                    ))
            random.Random(f"{self.seed}-round-{repeat}").shuffle(one)  # noqa: S311 - an order, not a secret
            rounds += one
        ids = [c.id for c in rounds]
        if len(set(ids)) != len(ids):  # two environments whose names map to one file name
            raise UsageError("two cells of the plan would share a result file; name the environments apart")
        return rounds


def split_list(text: str, what: str = "the list") -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c']; an empty list is a mistake (it never means "all")."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise UsageError(f"{what} is empty: name at least one (an empty list does not mean all)")
    return parts


def shipped_suites() -> list[str]:
    folder = importlib.resources.files("gcbench") / "suites"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def load_suite(name_or_path: str) -> Suite:
    """A shipped suite by name (`default`, `quick`) or a TOML file by path."""
    shipped = importlib.resources.files("gcbench") / "suites" / f"{name_or_path}.toml"
    if is_name(name_or_path) and shipped.is_file():
        text, where = shipped.read_text(encoding="utf-8"), f"suite {name_or_path!r}"
    else:
        path = pathlib.Path(name_or_path)
        if not path.is_file():
            raise UsageError(f"no suite {name_or_path!r}: not a shipped suite ({', '.join(shipped_suites())}) "
                             "nor a file")
        text, where = files.read_text(path, "suite file"), str(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{where}: invalid TOML: {e}") from None
    except RecursionError:
        raise UsageError(f"{where}: invalid TOML: nested too deeply") from None
    if not raw:
        raise UsageError(f"{where}: an empty suite file; name at least its backends and workloads (see "
                         "python/gcbench/suites/default.toml)")
    unknown = set(raw) - SUITE_KEYS
    if unknown:
        raise UsageError(
            f"{where}: unknown keys {', '.join(sorted(unknown))}; valid keys: {', '.join(sorted(SUITE_KEYS))}"
        )
    try:
        return Suite(**raw).validate()
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None


def default_out(kind: str) -> str:
    """`results/<kind>-<date>-<time>`."""
    import datetime

    stamp = datetime.datetime.now().astimezone().strftime("%Y%m%d-%H%M%S")  # the user's local time
    return str(pathlib.Path("results", f"{kind}-{stamp}"))
