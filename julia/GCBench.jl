"""
    GCBench

The Julia half of gcbench: trains the `mlp` and `lenet5` workloads in Flux, Lux or
SimpleChains with the timed loop inside Julia, and returns per-step vectors (wall ns,
GC ns, full sweeps, GC pauses, bytes allocated) for the Python side to store.

The core (this file and the files it includes) needs nothing but Julia's standard
library. A framework is loaded on demand, one per process, by `load_framework`: a
worker that measures Lux never loads SimpleChains, whose LoopVectorization and
Polyester would otherwise switch on LuxLib's LoopVectorization extension and change
the Lux being measured.

Python calls exactly these functions (see `python/gcbench/measuring/backends/julia_layout.py`):

  - `GCBench.load_framework(name)`: `include` the framework's file ("flux", "lux", "simplechains");
  - `GCBench.setup_data(images, labels, schedule)`: the dataset and batch schedule, once;
  - `GCBench.build(framework, workload, weights, data, learning_rate)`: one trainer of N networks;
  - `GCBench.run!(trainer, warmup, steps, policy, every, loss_every, bookkeeping)`: the measurement;
  - `GCBench.param_count(trainer)`: parameters of one network, counted by the framework;
  - `GCBench.explain_allocs(trainer, first_step, steps, sample_rate, bookkeeping)`: where allocations come from.
"""
module GCBench

using Random: Random
using Statistics: mean
using Profile: Profile
using TOML: TOML

include("measure.jl")
include("layers.jl")
include("data.jl")
include("run.jl")
include("explain.jl")

"""Framework name => its file in this folder, which registers its builder in `FRAMEWORKS`."""
const FRAMEWORK_FILES = Dict("flux" => "flux.jl", "lux" => "lux.jl", "simplechains" => "simplechains.jl")

"""Builders of the frameworks loaded so far: name => function (spec, weights, data) -> trainer."""
const FRAMEWORKS = Dict{String,Function}()

"""
    load_framework(name)

Load one framework into this process (its packages and its trainer), once. Call it
from the top level (Python does), before `build`.
"""
function load_framework(name::AbstractString)
    haskey(FRAMEWORK_FILES, name) || throw(ArgumentError("unknown framework $name"))
    haskey(FRAMEWORKS, name) || Base.include(@__MODULE__, joinpath(@__DIR__, FRAMEWORK_FILES[name]))
    return nothing
end

export load_framework, setup_data, build, run!, param_count, explain_allocs

end # module
