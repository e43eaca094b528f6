"""`gcbench julia-setup`: let juliacall install Julia and the Julia packages (online, once)."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("julia-setup", help="let juliacall install Julia and the Julia packages (online, once)")
    p.set_defaults(main=main)


def main(args) -> int:
    import importlib.util

    from ..core.errors import UsageError
    from ..measuring.backends import julia_bridge

    if importlib.util.find_spec("juliacall") is None:
        raise UsageError("juliacall is not installed: pip install 'gcbench[julia]'")
    print("gcbench: starting Julia through juliacall; the first time it downloads Julia and the packages "
          "in gcbench/juliapkg.json (needs the internet, takes minutes)", flush=True)
    ok, reason = julia_bridge.setup(lambda line: print(line, flush=True))
    if not ok:
        raise UsageError(f"Julia setup failed: {reason}")
    print("Julia ready: the flux, lux and simplechains backends can run, each loaded in a process of its own")
    return 0
