"""Short, automatically written findings for one workload's cells."""

from __future__ import annotations


NEGLIGIBLE_SHARE = 0.001  # below 0.1 % of step time the collector is not worth ranking


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def findings(docs: list[dict], summaries: dict) -> list[str]:
    """Sentences about `docs` (the ok cells of one workload, first repeat)."""
    if not docs:
        return ["No cell of this workload ran."]
    s = {d["cell"]: summaries[d["cell"]] for d in docs}
    out = []
    total_gc = sum(v["gc_ms_total"] for v in s.values())
    worst_share = max(v["gc_share"] for v in s.values())
    if total_gc == 0:
        out.append("No collection ran during the timed steps of any cell: on this workload the "
                   "collector costs nothing here (a finding, not a failure).")
    elif worst_share < NEGLIGIBLE_SHARE:
        colls = sum(sum(v["collections"]) for v in s.values())
        full = sum(v["full_per_1000"] * v["steps"] / 1000 for v in s.values())
        steps = sum(v["steps"] for v in s.values())
        out.append(f"The collector is negligible here: at most {_pct(worst_share)} of step time in any cell, "
                   f"{colls} collections in {steps:,} timed steps, {full:.0f} of them full.")
    else:
        worst = max(docs, key=lambda d: s[d["cell"]]["gc_share"])
        w = s[worst["cell"]]
        out.append(f"Highest GC share: `{worst['backend']}` under `{worst['gc_policy']}`, {_pct(w['gc_share'])} "
                   f"of step time, {w['full_per_1000']:.1f} full collections per 1,000 steps.")
    with_full = sorted((d for d in docs if s[d["cell"]]["full_gc_step_ratio"] is not None),
                       key=lambda d: -s[d["cell"]]["full_per_1000"])
    if with_full:
        out.append("Steps with a full collection, against the median step: " + "; ".join(
            f"`{d['backend']}` under `{d['gc_policy']}` {s[d['cell']]['full_gc_step_ratio']:.1f} x "
            f"({s[d['cell']]['full_per_1000']:.0f} per 1,000 steps)" for d in with_full) + ".")
    base = [d for d in docs if d["gc_policy"] == "default"] or docs
    policy = base[0]["gc_policy"]
    fastest = min(base, key=lambda d: s[d["cell"]]["median_ms"])
    slowest = max(base, key=lambda d: s[d["cell"]]["median_ms"])
    if fastest is not slowest:
        f, sl = s[fastest["cell"]]["median_ms"], s[slowest["cell"]]["median_ms"]
        out.append(f"Median step under `{policy}`: fastest `{fastest['backend']}` ({f:.3g} ms), slowest "
                   f"`{slowest['backend']}` ({sl:.3g} ms, {sl / f:.1f} x).")
    spiky = [d for d in base if s[d["cell"]]["spikes"]]
    if not spiky:
        factor = next(iter(s.values()))["spike_factor"]
        out.append(f"No step under `{policy}` was slower than {factor:g} x its cell's median.")
    for d in sorted(spiky, key=lambda d: -s[d["cell"]]["spikes"]):
        v = s[d["cell"]]
        period = f", about every {v['spike_period']:.0f} steps" if v["spike_period"] else ""
        at_full = f", {v['spikes_with_full_gc'] * 100:.0f} % of them at a full collection" \
            if v["spikes_with_full_gc"] is not None else ""
        sentence = f"`{d['backend']}` spikes {v['spikes']} times under `{policy}`{period}{at_full}"
        others = [o for o in docs if o["backend"] == d["backend"] and o["gc_policy"] != policy]
        if others:
            best = min(others, key=lambda o: (s[o["cell"]]["spikes"], s[o["cell"]]["max_over_median"]))
            b = s[best["cell"]]
            verb = "removes them" if b["spikes"] == 0 else f"leaves {b['spikes']}"
            sentence += (f"; `{best['gc_policy']}` {verb} (max/median {v['max_over_median']:.1f} -> "
                         f"{b['max_over_median']:.1f})")
        out.append(sentence + ".")
    return out
