"""The environment spec: what a cell names as its interpreter and packages, written as on
the command line, `"python=3.12 jax==0.8.0 equinox==0.13.2"`, read as PEP 508 pins by
`packaging`. A pin may name a package's source (`equinox@git+URL@REF`, or the files of a
commit exported to a `file://` folder). `running.venvs` builds environments from specs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..core.errors import UsageError

NAMED_PINS = 6  # an environment with more pins is named by its source pins and a digest of the rest
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
# name@git+URL@REF or name@file:///.../NAME-SHA: a package built from a commit (PEP 508 direct references)
_SOURCE = re.compile(rf"^({_NAME})@((?:git\+|file://)\S+)$")
# python=3.12 or 3.12.4: a version to look up (anything else after python= is a command or a path)
VERSION_REQUEST = re.compile(r"^\d+\.\d+(\.\d+)?$")


def normalize(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): `Flax_NNX` -> `flax-nnx`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    """The normalized distribution name a requirement string is about (PEP 508, markers and
    direct references included)."""
    try:
        return canonicalize_name(Requirement(req.strip()).name)
    except InvalidRequirement:
        raise ValueError(f"not a requirement: {req!r}") from None


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What the user asked for: an interpreter (None: the running one) and pins."""

    python: str | None
    pins: tuple[str, ...]

    @property
    def text(self) -> str:
        """The canonical spelling, which cells and results carry."""
        return " ".join(([f"python={self.python}"] if self.python else []) + list(self.pins))

    @property
    def name(self) -> str:
        """Short, for labels: `py3.12 jax==0.8.0`; `this-python` is the interpreter running gcbench."""
        if self.python is None:
            head = "this-python"
        elif VERSION_REQUEST.match(self.python):
            head = f"py{self.python}"
        else:
            head = self.python
        pins = [short_pin(p) for p in self.pins]
        if len(pins) > NAMED_PINS:  # a bisect's environment pins everything: show what varies
            sources = [short_pin(p) for p in self.pins if _SOURCE.match(p)]
            rest = len(pins) - len(sources)
            digest = hashlib.sha256(" ".join(p for p in self.pins if not _SOURCE.match(p)).encode()).hexdigest()[:6]
            pins = [*sources, f"+{rest}-pinned-{digest}"]
        return " ".join([head, *pins])

    @property
    def slug(self) -> str:
        """The name as a file-name part, `py3.12-jax-eq-0.8.0-1a2b3c`: readable, with the
        operators spelled out, and a hash of the spec so that no two specs share one."""
        text = self.name
        for op, word in (("===", "-eqq-"), ("==", "-eq-"), ("~=", "-compat-"), ("!=", "-ne-"), (">=", "-ge-"),
                         ("<=", "-le-"), (">", "-gt-"), ("<", "-lt-")):
            text = text.replace(op, word)
        readable = re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:60]
        return f"{readable}-{hashlib.sha256(self.text.encode()).hexdigest()[:6]}"

    def pin_for(self, name: str) -> str | None:
        name = normalize(name)
        return next((p for p in self.pins if requirement_name(p) == name), None)


def short_pin(pin: str) -> str:
    """A pin for people: a source pin `equinox@git+file:///src/equinox@0277a30...` is
    `equinox@0277a30` (the commit, not where the clone lives)."""
    m = _SOURCE.match(pin)
    if m is None:
        return pin
    where = m.group(2)
    if where.startswith("file://"):  # an exported commit: .../NAME-SHA (any other folder is shown whole)
        sha = re.search(r"-([0-9a-f]{7,64})$", where.rstrip("/"))
        return f"{m.group(1)}@{sha.group(1)[:9]}" if sha else pin
    return f"{m.group(1)}@{where.rsplit('@', 1)[-1][:9]}" if "@" in where.split("://", 1)[-1] else pin


def _check_versions(req: Requirement, name: str, token: str, text: str) -> None:
    """A pin's versions: at least one, each a version (PEP 440's === takes any text)."""
    if not req.specifier:
        raise UsageError(f"environment {text!r}: {token!r} pins no version; write it as {name}==VERSION")
    for spec in req.specifier:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.*+!_-]*", spec.version):
            raise UsageError(
                f"environment {text!r}: {token!r}: {spec.version!r} after {spec.operator} is not a version"
            )


def _parse_pin(token: str, text: str) -> tuple[str, str]:
    """One pin of an environment, read as PEP 508 by `packaging`: (normalized name, the pin
    as the spec spells it). Versions need an operator; markers have no place in a pin; a
    direct reference must be git+URL or a file:// folder."""
    try:
        req = Requirement(token)
    except InvalidRequirement as e:
        raise UsageError(f"environment {text!r}: {token!r} is neither python=VERSION nor a pin like jax==0.8.0 "
                         f"({str(e).splitlines()[0]})") from None
    name = canonicalize_name(req.name)
    if req.marker is not None:
        raise UsageError(f"environment {text!r}: {token!r} has a marker; an environment's pins apply as they are")
    if req.url:
        if not _SOURCE.match(f"{name}@{req.url}"):
            raise UsageError(f"environment {text!r}: {token!r} names a source gcbench does not build from "
                             "(git+URL@REF, or a file:// folder)")
        return name, f"{name}@{req.url}"
    _check_versions(req, name, token, text)
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    as_given = re.match(rf"^{_NAME}\s*(?:\[[^\]]*\])?\s*(.*)$", token)
    written = as_given.group(1) if as_given else str(req.specifier)  # the operators as given
    return name, f"{name}{extras}{written}"


def parse(text: str) -> EnvSpec:
    """`"python=3.12 jax==0.8.0 equinox==0.13.2"` -> EnvSpec; a clear error for anything else."""
    python, pins, names = None, [], set()
    tokens = text.split()
    if not tokens:
        raise UsageError("an environment needs python=VERSION or PATH and/or pins like jax==0.8.0, got nothing")
    for token in tokens:
        if token.startswith("python="):
            if python is not None:
                raise UsageError(f"environment {text!r} names the interpreter twice")
            python = token.split("=", 1)[1]
            if not python:
                raise UsageError(f"environment {text!r}: python= needs a version (3.12) or a path")
            continue
        name, pin = _parse_pin(token, text)
        if name in names:
            raise UsageError(f"environment {text!r} pins {name} twice")
        names.add(name)
        pins.append(pin)
    return EnvSpec(python, tuple(sorted(pins, key=requirement_name)))


def parse_all(texts: list[str]) -> list[EnvSpec]:
    specs = [parse(t) for t in texts]
    seen: dict[str, str] = {}
    for spec, text in zip(specs, texts, strict=True):
        if spec.text in seen:
            raise UsageError(f"environments {seen[spec.text]!r} and {text!r} are the same")
        seen[spec.text] = text
    return specs
