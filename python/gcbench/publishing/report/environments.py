"""The report's sections for results from several environments (`run --env`) and for a
`gcbench bisect`: what differs between the environments."""

from __future__ import annotations

import dataclasses
import pathlib

from ...analysing import comparison, gitbisect, summary
from ...analysing.gitbisect import CommitTable, Culprit
from ...analysing.version_bisect import VersionTable
from ...measuring import results
from ...measuring.results import ResultDoc
from .. import bisect_text
from . import plots
from .document import Bullets, Heading, Image, Para, Table, code, escape, natural_key

KEY_PACKAGES = ("jax", "jaxlib", "equinox", "flax", "optax", "numpy")


@dataclasses.dataclass
class EnvInfo:
    """An environment the results ran in: its Python and its packages' versions."""

    python: str | None = None
    packages: dict[str, str] = dataclasses.field(default_factory=dict)


def environments(docs: list[ResultDoc]) -> dict[str, EnvInfo]:
    """Environment name -> its `EnvInfo`, in the order the results ran; `{}` when every
    result ran under gcbench's own interpreter."""
    out: dict[str, EnvInfo] = {}
    for d in docs:
        env, meta = results.part(d, "environment"), results.part(d, "metadata")
        python = env.get("python") or meta.get("python")
        if env and python:  # else none, or an environment that was never built: "Not run" says why
            _learn(out.setdefault(env.get("name", ""), EnvInfo()), python,
                   env.get("packages") or meta.get("packages") or {})
    return out


def _learn(info: EnvInfo, python: str, recorded: dict[str, str | None]) -> None:
    """An environment's interpreter and packages, from the first repeat that recorded them."""
    info.python = info.python or python
    info.packages = info.packages or {k: v for k, v in recorded.items() if v}


def differing(envs: dict[str, EnvInfo]) -> list[str]:
    """Packages whose version is not the same in every environment (missing counts as a version)."""
    names = sorted({p for info in envs.values() for p in info.packages})
    return [p for p in names if len({info.packages.get(p) for info in envs.values()}) > 1]


def section(docs: list[ResultDoc]) -> list:
    """The environments the results ran in: interpreter and the versions that differ."""
    envs = environments(docs)
    if not envs:
        return []
    diff = differing(envs)
    key = [p for p in KEY_PACKAGES if p in diff]
    blocks = [Heading("Environments"),
              Para("Each environment is a virtual environment gcbench built from an interpreter and pinned "
                   "packages; its cells carry its name in brackets. Columns show the interpreter and the "
                   "packages whose versions differ between the environments."),
              Table(["environment", "Python", *key],
                    [[escape(name), escape(info.python or "?")] +
                     [escape(info.packages.get(p, "-")) for p in key] for name, info in envs.items()])]
    notes = _environment_notes(envs, diff, key)
    if notes:
        blocks.append(Bullets(notes))
    return blocks


def _environment_notes(envs: dict, diff: list[str], key: list[str]) -> list[str]:
    """Under the environments' table: the key packages (and the interpreter) the same in
    every environment, and how many other packages differ."""
    others = [p for p in diff if p not in key and p not in ("pip", "setuptools", "wheel")]
    same = _the_same(envs, diff)
    return ([same] if same else []) + \
        ([f"{len(others)} other packages differ too: {escape(', '.join(others))}."] if others else [])


def _the_same(envs: dict, diff: list[str]) -> str | None:
    """The key packages the same in every environment, and the interpreter where it is."""
    same = sorted({p for p in KEY_PACKAGES if p not in diff and any(p in i.packages for i in envs.values())})
    if not same:
        return None
    versions = next(iter(envs.values())).packages
    pythons = {info.python for info in envs.values()}
    return ("The same in every environment: " + ", ".join(f"{p} {escape(versions[p])}" for p in same) +
            (f"; Python {escape(next(iter(pythons)))}" if len(pythons) == 1 else "") + ".")


def bisect_section(tab: VersionTable, out_dir: pathlib.Path) -> list:
    header, rows = bisect_text.release_rows(tab, " (first change)")
    first = tab.first_change
    verdict = (f"The first version whose {tab.metric_title.lower()} differs from the previous version's by "
               f"more than {tab.factor:g} x, where the repeats show it (exactly when both versions' full "
               f"collections follow a fixed schedule, else by a test corrected by Benjamini-Hochberg): "
               f"{code(tab.package + ' ' + first)}." if first else
               f"No version's {tab.metric_title.lower()} differs from the previous version's by more than "
               f"{tab.factor:g} x where the repeats show it.")
    if tab.floor:
        verdict += f" Values below {tab.floor:g} ({tab.unit}) count as {tab.floor:g} when compared."
    return [Heading(f"Bisect: {escape(tab.package)} on {code(tab.cell)}"), Para(verdict),
            Table([escape(tab.package), *header[1:]], [[escape(c) for c in row] for row in rows],
                  align_right=tuple(range(4, len(header) - 1))),
            Image(plots.bisect_figure(tab, out_dir / "bisect.png"),
                  f"{tab.metric_title} per {tab.package} version",
                  "Each dot is one repeat (a fresh process), the line their median; the lower panel is the "
                  "median step. The dashed line marks the first version with a tested change.")]


def bisect_headline(tab: VersionTable) -> Table:
    """A release bisect at a glance, for the report's first screen: each version's value of
    the bisected metric and its change from the one before (as the full table words it)."""
    unit = f" ({tab.unit})" if tab.unit and tab.unit != "x" else ""
    _, full = bisect_text.release_rows(tab, " (first change)")
    rows = [[code(r.version), "-" if r.value is None else f"{r.value:.3g}", escape(row[-1])]
            for r, row in zip(tab.rows, full, strict=True)]
    return Table([escape(tab.package), escape(tab.metric_title) + escape(unit), "change from the version before"],
                 rows, align_right=(1,))


def gitbisect_headline(tab: CommitTable) -> Table:
    """A commit bisect at a glance: each tested commit, its value and the decision."""
    unit = f" ({tab.unit})" if tab.unit else ""
    rows = [[code(r.short), escape(r.subject[:48]), "-" if r.value is None else f"{r.value:.3g}",
             escape(bisect_text.decision_text(tab, r))]
            for r in tab.rows]
    return Table(["commit", "subject", escape(tab.metric_title) + escape(unit), "decision"], rows, align_right=(2,))


def _commit_row(tab: CommitTable, r) -> list[str]:
    """A tested commit's row: its value and per-repeat values (or why it has none), and its
    decision."""
    value, per = bisect_text.commit_values(r, 120)
    return [code(r.sha[:9]), escape(r.date), escape(r.subject[:80]), value, escape(per),
            escape(bisect_text.decision_text(tab, r))]


def gitbisect_section(tab: CommitTable, culprit: Culprit | None, out_dir: pathlib.Path) -> list:
    """A commit bisect: the rule, the tested commits in history order, and the first bad one."""
    unit = f" ({tab.unit})" if tab.unit else ""
    rows = [_commit_row(tab, r) for r in tab.rows]
    found = (f"{_first(tab)}: {code(tab.first_bad[:9])}, after {tab.builds} builds for "
             f"{tab.commits_between} commits (at most {tab.max_builds})." if tab.first_bad else
             escape(tab.unresolved or "No first bad commit: " + (tab.endpoints or "")))
    likeness = ("Blue behaves like the older endpoint, orange like the newer one; the dashed line falls before the "
                f"first commit with {escape(gitbisect.change(tab))}." if tab.better else
                "Blue behaves like the good endpoint, orange like the bad one; the dashed line falls before the "
                "first bad commit.")
    blocks = [Heading(f"Commit bisect: {escape(tab.package)} on {code(tab.cell)}"),
              Para(f"{escape(tab.rule)} Endpoints: {escape(tab.endpoints or '-')}. Every environment "
                   "but the good endpoint's pins each other package to the version the good endpoint's resolved, "
                   "so only the package changes. A commit is built from its source into an environment that also "
                   "holds what its build and gcbench's harness install (the dependencies of the gcbench that ran it), "
                   "whose objects enlarge the oldest generation: counts are exact within this bisect, and may differ "
                   "by a collection or two from a release bisect of the same code's wheel (compare directions across "
                   "the two). " + found),
              Table(["commit", "date", "subject", f"{escape(tab.metric_title)}{escape(unit)}", "per repeat",
                     "decision"], rows, align_right=(3,)),
              Image(plots.gitbisect_figure(tab, out_dir / "gitbisect.png"),
                    f"{tab.metric_title} per tested {tab.package} commit",
                    "Commits in history order, oldest first; only the tested ones carry a value (dots: repeats; "
                    "line: the cell's value). " + likeness)]
    if culprit and tab.first_bad:  # a culprit recorded without a first bad commit has nothing to name
        blocks += _culprit_blocks(tab, tab.first_bad, culprit)
    return blocks


def _culprit_blocks(tab: CommitTable, first: str, culprit: Culprit) -> list:
    """The first commit found: its message, and the files it changed."""
    lines = culprit.message.splitlines() if culprit.message else []
    return [Heading(f"{_first(tab)}, {escape(first[:9])}", 3), Para(escape(lines[0] if lines else "")),
            Bullets([*[escape(line) for line in lines[1:] if line.strip()][:12],
                     "files changed: " + ", ".join(code(f) for f in culprit.files[:30])])]


def _first(tab: CommitTable) -> str:
    """"The first bad commit" for a regression; for an improvement "The first commit with
    fewer full collections"."""
    return f"The first commit with {escape(gitbisect.change(tab))}" if tab.better else "The first bad commit"


def _first_bad_change(tab: CommitTable, bad) -> str:
    """The bisected figure at the last good commit tested and at the first bad one; empty
    where either was not measured."""
    rows = [r for r in tab.rows if r.value is not None]
    before = [r for r in rows[:rows.index(bad)] if r.decision.startswith("good")] if bad in rows else []
    if not before or bad.value is None:
        return ""
    unit = f" {tab.unit}" if tab.unit else ""
    last = "the last one tested before it" if tab.better else "the last good one tested"
    return (f": {tab.metric_title.lower()} {before[-1].value:.3g} at {code(before[-1].sha[:9])} ({last}), "
            f"{bad.value:.3g}{unit} at it")


def gitbisect_answer(tab: CommitTable) -> str:
    """A commit bisect's answer, for the top of its report: the first bad commit, what it
    changed in the bisected figure, and what it took to find."""
    if not tab.first_bad:
        return escape(tab.unresolved or "No first bad commit: " + (tab.endpoints or ""))
    bad = next(r for r in tab.rows if r.sha == tab.first_bad)
    change = _first_bad_change(tab, bad)
    return (f"{_first(tab)} of {escape(tab.package)} for {code(tab.cell)} is {code(tab.first_bad[:9])} "
            f"({escape(bad.date)}, \"{escape(bad.subject[:80])}\"){change}; found after {tab.builds} builds "
            f"for {tab.commits_between} commits.")


def bisect_answer(tab: VersionTable) -> str:
    """A version bisect's answer: the first version whose figure changed."""
    first = tab.first_change
    if not first:
        return (f"No version of {escape(tab.package)} changes {tab.metric_title.lower()} of {code(tab.cell)} "
                f"by more than {tab.factor:g} x where the repeats show it.")
    return (f"The first version of {escape(tab.package)} that changes {tab.metric_title.lower()} of "
            f"{code(tab.cell)} by more than {tab.factor:g} x is {code(first)}.")


INSTALLERS = {"pip", "setuptools", "wheel"}  # what the installer puts into every environment itself


def _counts_differ(a, b) -> bool | None:
    """True when two cells' full collections per repeat differ by more than the phase of
    their schedules moves them (no one rate gives both sides' counts: comparison.within_phase),
    False when they are within it, None when a side's own repeats are beyond it (cannot tell)."""
    sa, sb = a.measured.full.schedule, b.measured.full.schedule
    if not (comparison.within_phase(sa, sa) and comparison.within_phase(sb, sb)):
        return None
    return not comparison.within_phase(sa, sb)


def _setting(envs: dict[str, EnvInfo], factors: list[str], env: str) -> dict[str, str]:
    """An environment's value of each factor: its Python (major.minor) and key packages."""
    info = envs[env]
    py = ".".join(str(info.python or "?").split(".")[:2])
    return {"Python": py, **{p: str(info.packages.get(p, "-")) for p in factors[1:]}}


def _panel_sentence(panel: tuple, mine: list, envs: dict[str, EnvInfo], factors: list[str]) -> str:
    """One backend and policy over its environments: how far its full collections move, and
    with which single change."""
    lo = min(mine, key=lambda cs: min(cs.measured.full.schedule.counts))
    hi = max(mine, key=lambda cs: max(cs.measured.full.schedule.counts))
    counts = [cs.measured.full.schedule.counts for cs in (lo, hi)]
    if _counts_differ(lo, hi) is False and counts[0] == counts[1]:
        return (f"{code('/'.join(panel))} makes {summary.full_per_repeat(lo)} full collections per repeat in "
                f"every one of its {len(mine)} environments.")
    head = (f"Over {len(mine)} environments {code('/'.join(panel))} makes {summary.full_per_repeat(lo)} "
            f"[{escape(lo.key[3])}] to {summary.full_per_repeat(hi)} [{escape(hi.key[3])}] full collections "
            "per repeat")
    found = _single_changes(mine, envs, factors)

    def told(verdict: bool) -> str:
        by_size = sorted(found[verdict].items(), key=lambda kv: -max(kv[1].values()))
        return ", ".join(f"{escape(f)} ({escape('; '.join(ch))})" for f, ch in by_size)
    said = []
    if found[True]:
        said.append("it moves with " + told(True))
    if found[False]:
        said.append("not with " + told(False))
    return head + (": " + "; ".join(said) if said else
                   " (no two environments differ in one of them only: which moves it cannot be told apart)") + "."


def _single_changes(mine: list, envs: dict[str, EnvInfo], factors: list[str]) -> dict[bool, dict[str, dict[str, int]]]:
    """From the pairs of environments that differ in one factor only: whether the count
    moves (True) or stays (False), by factor, each change with its size."""
    found: dict[bool, dict[str, dict[str, int]]] = {True: {}, False: {}}  # moves/stays -> factor -> change: size
    for i, a in enumerate(mine):
        for b in mine[i + 1:]:
            sa, sb = _setting(envs, factors, a.key[3]), _setting(envs, factors, b.key[3])
            changed = [f for f in factors if sa[f] != sb[f]]
            if len(changed) != 1 and set(changed) != {"Python", "numpy"}:
                continue  # a pair that changes more than one thing says nothing of either
            (x, sx), (y, sy) = sorted(((a, sa), (b, sb)), key=lambda p: tuple(natural_key(p[1][f])
                                                                                for f in changed))
            verdict = _counts_differ(x, y)
            if verdict is not None:  # None: repeats beyond their own phase: cannot tell, not said
                change = f"{sx[changed[0]]} -> {sy[changed[0]]}: " + _count_change(x, y, envs, changed)
                size = abs(min(y.measured.full.schedule.counts) - min(x.measured.full.schedule.counts))
                found[verdict].setdefault(changed[0], {})[change] = size
    return found


def _count_change(x, y, envs: dict[str, EnvInfo], changed: list[str]) -> str:
    """`3 -> 5, with flax changed too`: the full collections of two environments that differ
    in `changed`, and the other packages that differ between them (installers aside)."""
    px, py = envs[x.key[3]].packages, envs[y.key[3]].packages
    also = sorted(p for p in set(px) | set(py) if px.get(p) != py.get(p) and p not in changed
                  and p not in INSTALLERS and not (changed == ["jax"] and p == "jaxlib"))
    return f"{summary.full_per_repeat(x)} -> {summary.full_per_repeat(y)}" + \
        (f", with {', '.join(also)} changed too" if also else "")


def _panel_sentences(ok: list, envs: dict[str, EnvInfo], factors: list[str]) -> list[str]:
    """A sentence per backend, workload and policy measured in two environments or more."""
    panels: dict[tuple, list] = {}
    for cs in ok:
        panels.setdefault(cs.key[:3], []).append(cs)
    return [_panel_sentence(panel, mine, envs, factors) for panel, mine in panels.items() if len(mine) >= 2]


def env_matrix_answer(cells, docs: list[ResultDoc]) -> str | None:
    """The answer of a run over several environments (`run --env ... --env ...`): per backend
    and policy, how far the full collections per repeat move across the environments, then
    what changing one thing at a time did, from the pairs of environments that differ in
    one package (jaxlib with jax) or in Python alone: counts, which are exact where every
    repeat made the same number. None when the cells ran in fewer than two environments."""
    envs = environments(docs)
    if len(envs) < 2:
        return None
    ok = [cs for cs in cells if cs.ok and cs.key[3] in envs]
    diff = plots.without_paired_jaxlib(differing(envs), [i.packages for i in envs.values()])
    # judged on the interpreter and the key packages; the rest is whatever their resolver chose
    factors = ["Python"] + [p for p in KEY_PACKAGES if p in diff]
    parts = _panel_sentences(ok, envs, factors)
    if not parts:
        return None
    return (f"Which versions move the full collections (a count, which load does not move; one a repeat more or "
            f"less is what the phase of a schedule makes, and does not count as a move), from the pairs of "
            f"environments that differ in one of {', '.join(factors)} only (Python counts as one with the numpy that "
            f"comes with it; every other package that changed in a pair, installers aside, is named with it), largest "
            f"change first. "
            + " ".join(parts))
