"""`gcbench data info|download`: where MNIST is found; download it."""

from __future__ import annotations

import pathlib


def register(sub) -> None:
    d = sub.add_parser("data", help="where MNIST is found; download it")
    d.add_argument("action", choices=["info", "download"])
    d.add_argument("--data", help="folder to look in or download to")
    d.set_defaults(main=main)


def main(args) -> int:
    from ..measuring import mnist

    if args.action == "download":
        folder = mnist.download(pathlib.Path(args.data) if args.data else None)
        print(f"MNIST training files in {folder}")
        return 0
    found = mnist.locate(args.data)
    if found is None:
        print(f"no MNIST found (looked in ${mnist.ENV_VAR} and {mnist.cache_dir()}); "
              "runs use synthetic data. `gcbench data download` fetches it.")
    else:
        ds = mnist.load_mnist(found)
        print(f"real MNIST: {len(ds)} samples in {found}")
    return 0
