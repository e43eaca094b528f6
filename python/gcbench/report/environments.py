"""The report's sections for results from several environments (`run --env`) and for a
`gcbench bisect`: what differs between the environments, next to the numbers."""

from __future__ import annotations

import pathlib

from .. import results
from . import plots
from .document import Bullets, Heading, Image, Para, Table

KEY_PACKAGES = ("jax", "jaxlib", "equinox", "flax", "optax", "numpy")


def environments(docs: list[dict]) -> dict[str, dict]:
    """Environment name -> {"python", "packages"} in the order the results ran; `{}` when
    every result ran under gcbench's own interpreter."""
    out: dict[str, dict] = {}
    for d in docs:
        env = d.get("environment")
        if not env or not (env.get("python") or (d.get("metadata") or {}).get("python")):
            continue  # none, or an environment that was never built: "Not run" says why
        info = out.setdefault(env["name"], {"python": None, "packages": {}})
        meta = d.get("metadata") or {}
        info["python"] = info["python"] or env.get("python") or meta.get("python")
        info["packages"] = info["packages"] or env.get("packages") or \
            {k: v for k, v in (meta.get("packages") or {}).items() if v}
    return out


def differing(envs: dict[str, dict]) -> list[str]:
    """Packages whose version is not the same in every environment (missing counts as a version)."""
    names = sorted({p for info in envs.values() for p in info["packages"]})
    return [p for p in names if len({info["packages"].get(p) for info in envs.values()}) > 1]


def as_series(docs: list[dict]) -> list[dict]:
    """Plots and findings tell cells apart by backend; in a matrix one backend runs in several
    environments, so each (backend, environment) becomes a series of its own."""
    return [{**d, "backend": f"{d['backend']} [{results.env_name(d)}]"} if d.get("environment") else d for d in docs]


def section(docs: list[dict], ok: list[dict], summaries: dict, out_dir: pathlib.Path) -> list:
    envs = environments(docs)
    if not envs:
        return []
    diff = differing(envs)
    key = [p for p in KEY_PACKAGES if p in diff]
    others = [p for p in diff if p not in key and p not in ("pip", "setuptools", "wheel")]
    same = sorted({p for p in KEY_PACKAGES if p not in diff and any(p in i["packages"] for i in envs.values())})
    versions = next(iter(envs.values()))["packages"]
    pythons = {info["python"] for info in envs.values()}
    blocks = [Heading("Environments"),
              Para("Each environment is a virtual environment gcbench built from an interpreter and pinned "
                   "packages. Columns show the interpreter and the packages whose versions differ between them."),
              Table(["environment", "Python"] + key,
                    [[name, info["python"] or "?"] + [info["packages"].get(p, "-") for p in key]
                     for name, info in envs.items()])]
    notes = []
    if same:
        notes.append("The same in every environment: " + ", ".join(f"{p} {versions[p]}" for p in same) +
                     (f"; Python {next(iter(pythons))}" if len(pythons) == 1 else "") + ".")
    if others:
        notes.append(f"{len(others)} other packages differ too: {', '.join(others)}.")
    if notes:
        blocks.append(Bullets(notes))
    if ok:
        rows = []
        for d in sorted(ok, key=lambda d: (d["workload"], d["backend"], d["gc_policy"], d["repeat"])):
            s, info = summaries[d["cell"]], envs.get(results.env_name(d) or "", {"python": None, "packages": {}})
            py = info["python"] or (d.get("metadata") or {}).get("python") or "?"
            rows.append([f"{d['backend']}/{d['workload']}/{d['gc_policy']}" + (f" #{d['repeat']}" if d["repeat"] else ""),
                         results.env_name(d) or "(gcbench's own)", py] +
                        [info["packages"].get(p, "-") for p in key] +
                        [f"{s['median_ms']:.3g}", f"{100 * s['gc_share']:.2f}", f"{s['full_per_1000']:.1f}",
                         f"{s['max_over_median']:.1f}"])
        n = 3 + len(key)
        blocks += [Heading("By environment", 3),
                   Table(["cell", "environment", "Python"] + key +
                         ["median ms", "GC %", "full GC /1000 steps", "max/median"], rows,
                         align_right=tuple(range(n, n + 4))),
                   Image(plots.by_environment(ok, summaries, list(envs), out_dir / "environments.png"),
                         "median step, GC share and full collections per environment")]
    return blocks


def bisect_section(tab: dict, out_dir: pathlib.Path) -> list:
    from ..bisect import table_rows

    header, rows = table_rows(tab, " **first change**")
    first = tab["first_change"]
    verdict = (f"The first version whose {tab['metric_title'].lower()} differs from the previous version's by "
               f"more than {tab['factor']:g} x: **{tab['package']} {first}**." if first else
               f"No version's {tab['metric_title'].lower()} differs from the previous version's by more than "
               f"{tab['factor']:g} x.")
    if tab["floor"]:
        verdict += f" Values below {tab['floor']:g} ({tab['unit']}) count as {tab['floor']:g} when compared."
    return [Heading(f"Bisect: {tab['package']} on {tab['cell']}"), Para(verdict),
            Table([tab["package"]] + header[1:], rows, align_right=tuple(range(4, len(header) - 1))),
            Image(plots.bisect(tab, out_dir / "bisect.png"), f"{tab['metric']} per {tab['package']} version")]
