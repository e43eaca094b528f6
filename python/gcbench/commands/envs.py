"""`gcbench envs list|clear`: the virtual environments gcbench built for --env."""

from __future__ import annotations


def register(sub) -> None:
    ev = sub.add_parser("envs", help="the virtual environments gcbench built for --env (list, or clear them)")
    ev.add_argument("action", choices=["list", "clear"])
    ev.set_defaults(main=main)


def main(args) -> int:
    from ..running import venvs

    if args.action == "clear":
        print(f"removed {venvs.remove_all()} environments from {venvs.envs_root()}")
        return 0
    rows = venvs.cached()
    if not rows:
        print(f"no environments in {venvs.envs_root()}")
        return 0
    for r in rows:
        m = r.marker
        what = f"{m.spec}  (Python {m.python}, built {m.built})" if m else "unfinished: rebuilt when next used"
        print(f"{r.folder.name:<28} {r.bytes / 2**20:>7.0f} MiB  {what}")
    print(f"{len(rows)} environments, {sum(r.bytes for r in rows) / 2**30:.1f} GiB in {venvs.envs_root()}")
    return 0
