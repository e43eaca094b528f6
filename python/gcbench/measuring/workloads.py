"""The workloads every backend trains, described once, framework-neutrally.

A workload is a list of layers with a canonical parameter layout (convolution kernels
HWIO, dense kernels (in, out), biases separate). Every backend builds its own model from
this description and loads the same initial weights (`init_params`), so parameter
counts and losses can be compared exactly across frameworks.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core.errors import UsageError, did_you_mean

IMAGE_SHAPE = (28, 28, 1)  # height, width, channels
NUM_CLASSES = 10
BATCH_SIZE = 128
LEARNING_RATE = 3e-4


@dataclasses.dataclass(frozen=True)
class Conv:
    """A 'valid' 2-D convolution with a square kernel, then relu, then 2x2 max-pool."""

    kernel: int
    cin: int
    cout: int

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {"w": (self.kernel, self.kernel, self.cin, self.cout), "b": (self.cout,)}


@dataclasses.dataclass(frozen=True)
class Dense:
    """A dense layer; `relu` says whether a relu follows it."""

    fan_in: int
    fan_out: int
    relu: bool

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {"w": (self.fan_in, self.fan_out), "b": (self.fan_out,)}


@dataclasses.dataclass(frozen=True)
class ViTConfig:
    """A small Vision Transformer (patch embedding, pre-norm blocks, MLP head)."""

    patch: int
    dim: int
    depth: int
    heads: int
    mlp_dim: int

    @property
    def num_patches(self) -> int:
        return (IMAGE_SHAPE[0] // self.patch) * (IMAGE_SHAPE[1] // self.patch)

    def shapes(self) -> dict[str, tuple[int, ...]]:
        d, p = self.dim, self.patch
        shapes: dict[str, tuple[int, ...]] = {
            "patch/w": (p * p * IMAGE_SHAPE[2], d),
            "patch/b": (d,),
            "cls": (1, d),
            "pos": (self.num_patches + 1, d),
        }
        for i in range(self.depth):
            shapes |= {
                f"block{i}/ln1/scale": (d,),
                f"block{i}/ln1/bias": (d,),
                f"block{i}/qkv/w": (d, 3 * d),
                f"block{i}/qkv/b": (3 * d,),
                f"block{i}/proj/w": (d, d),
                f"block{i}/proj/b": (d,),
                f"block{i}/ln2/scale": (d,),
                f"block{i}/ln2/bias": (d,),
                f"block{i}/mlp1/w": (d, self.mlp_dim),
                f"block{i}/mlp1/b": (self.mlp_dim,),
                f"block{i}/mlp2/w": (self.mlp_dim, d),
                f"block{i}/mlp2/b": (d,),
            }
        shapes |= {
            "head/ln/scale": (d,),
            "head/ln/bias": (d,),
            "head/w": (d, NUM_CLASSES),
            "head/b": (NUM_CLASSES,),
        }
        return shapes


@dataclasses.dataclass(frozen=True)
class Workload:
    """One workload: what is trained, how many copies, and what it stands for."""

    name: str
    description: str
    default_networks: int
    layers: tuple = ()
    vit: ViTConfig | None = None

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Canonical parameter names and shapes of one network, in a fixed order."""
        if self.vit is not None:
            return self.vit.shapes()
        shapes: dict[str, tuple[int, ...]] = {}
        for i, layer in enumerate(self.layers):
            for key, shape in layer.shapes().items():
                shapes[f"layer{i}/{key}"] = shape
        return shapes

    @property
    def params_per_network(self) -> int:
        return sum(math.prod(s) for s in self.param_shapes().values())


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            name="mlp",
            description="many small MLPs 784-6-16-10 (the Flux many-small-networks case)",
            default_networks=200,
            layers=(Dense(784, 6, True), Dense(6, 16, True), Dense(16, NUM_CLASSES, False)),
        ),
        Workload(
            name="lenet5",
            description="the Flux model-zoo LeNet-5 (conv5-pool-conv5-pool-256-120-84-10)",
            default_networks=5,
            layers=(
                Conv(5, 1, 6),
                Conv(5, 6, 16),
                Dense(256, 120, True),
                Dense(120, 84, True),
                Dense(84, NUM_CLASSES, False),
            ),
        ),
        Workload(
            name="vit",
            description="a small ViT, 12 blocks x 8 heads: one deep module tree (the Equinox case)",
            default_networks=1,
            vit=ViTConfig(patch=7, dim=16, depth=12, heads=8, mlp_dim=32),
        ),
    ]
}


def get_workload(name: str) -> Workload:
    """The workload called `name`, or a `UsageError` listing the valid ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise UsageError(
            f"unknown workload {name!r}{did_you_mean(name, WORKLOADS)}; valid workloads: {', '.join(WORKLOADS)}"
        ) from None


def init_params(workload: Workload, seed: int, networks: int) -> list[dict[str, np.ndarray]]:
    """Initial weights of `networks` networks, identical for every backend.

    Kernels are Glorot-uniform (Flux's default), biases zero, layer-norm scales one, the
    ViT's class and position embeddings normal with standard deviation 0.02. Network k
    of seed s is the same whatever `networks` is.
    """
    out = []
    for k in range(networks):
        rng = np.random.default_rng([seed, k])
        params = {}
        for name, shape in workload.param_shapes().items():
            leaf = name.rsplit("/", 1)[-1]
            if leaf == "scale":
                value = np.ones(shape)
            elif leaf in ("b", "bias"):
                value = np.zeros(shape)
            elif leaf == "w":
                fan_in = math.prod(shape[:-1])
                fan_out = shape[-1] * (math.prod(shape[:-2]) if len(shape) == 4 else 1)
                limit = math.sqrt(6.0 / (fan_in + fan_out))
                value = rng.uniform(-limit, limit, shape)
            else:  # embeddings
                value = rng.normal(0.0, 0.02, shape)
            params[name] = value.astype(np.float32)
        out.append(params)
    return out
