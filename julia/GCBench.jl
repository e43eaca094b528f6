"""
    GCBench

The Julia half of gcbench: trains the `mlp` and `lenet5` workloads in Flux, Lux and
SimpleChains with the timed loop inside Julia, and returns per-step vectors (wall ns,
GC ns, full sweeps, GC pauses, bytes allocated) for the Python side to store.

Python calls exactly these functions (see `python/gcbench/backends/julia_bridge.py`):

  - `GCBench.setup_data(images, labels, schedule)`: the dataset and batch schedule, once;
  - `GCBench.build(framework, workload, weights, data)`: one trainer of N networks;
  - `GCBench.run!(trainer, warmup, steps, policy, every, loss_every)`: the measurement;
  - `GCBench.param_count(trainer)`: parameters of one network, counted by the framework.
"""
module GCBench

using Random: Random
using Statistics: mean
using Flux: Flux
using Lux: Lux
using MLUtils: MLUtils
using NNlib: NNlib
using Optimisers: Optimisers
using SimpleChains: SimpleChains
using Zygote: Zygote

include("measure.jl")
include("layers.jl")
include("data.jl")
include("flux.jl")
include("lux.jl")
include("simplechains.jl")
include("run.jl")

export setup_data, build, run!, param_count

end # module
