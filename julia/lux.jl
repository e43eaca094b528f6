# Lux with its training API: `Training.TrainState` and `Training.single_train_step!`
# on Zygote, the loss `CrossEntropyLoss(; logits=Val(true))`, one train state per network.
# Included into GCBench by `load_framework("lux")`: without SimpleChains in the process,
# LuxLib runs its own kernels, not its LoopVectorization extension.

using Lux: Lux
using NNlib: NNlib
using Optimisers: Optimisers
using Zygote: Zygote

const LUX_LOSS = Lux.CrossEntropyLoss(; logits=Val(true))

struct LuxTrainer{S}
    # On the Zygote path `single_train_step!` returns a TrainState of the type it was given
    # (it sets the states and the step count with `@set!`, Lux ext/ZygoteExt/training.jl),
    # so the vector is concrete: no dynamic dispatch or boxing per network per step.
    states::Vector{S}
    losses::Vector{Float32}
    data::Data
    flat::Bool
end

function lux_model(spec::AbstractMatrix{Int})
    layers = Any[]
    for i in axes(spec, 1)
        kind, a, b, c, relu = spec[i, :]
        flatten_before(spec, i) && push!(layers, Lux.FlattenLayer())
        if kind == CONV
            push!(layers, Lux.Conv((a, a), b => c, NNlib.relu), Lux.MaxPool((2, 2)))
        else
            push!(layers, Lux.Dense(a => b, relu == 1 ? NNlib.relu : identity))
        end
    end
    return Lux.Chain(layers...)
end

"""Lux's own parameters of `model`, overwritten with `weights` (same layout as Flux's)."""
function lux_parameters(model, weights::AbstractVector, rng)
    ps, st = Lux.setup(rng, model)
    r = WeightReader(weights)
    for layer in ps  # layers in order; pooling and flatten layers hold no parameters
        for key in (:weight, :bias)
            haskey(layer, key) || continue
            target = layer[key]
            copyto!(target, next_array!(r, length(target)))
        end
    end
    check_consumed(r)
    return ps, st
end

function build_lux(spec, weights::AbstractMatrix, data::Data, learning_rate::Float64)
    model = lux_model(spec)
    rng = Random.Xoshiro(0)
    states = map(axes(weights, 2)) do k
        ps, st = lux_parameters(model, view(weights, :, k), rng)
        Lux.Training.TrainState(model, ps, st, Optimisers.Adam(Float32(learning_rate)))
    end
    return LuxTrainer(states, zeros(Float32, length(states)), data, flat_input(spec))
end

function update_network!(t::LuxTrainer, k::Int, x, y)
    _, loss, _, ts = Lux.Training.single_train_step!(Lux.AutoZygote(), LUX_LOSS, (x, y), t.states[k])
    t.states[k] = ts
    t.losses[k] = loss
    return nothing
end

function network_logits(t::LuxTrainer, k::Int, x)
    ts = t.states[k]
    return Array{Float32}(first(Lux.apply(ts.model, x, ts.parameters, ts.states)))
end

param_count(t::LuxTrainer) = Lux.parameterlength(t.states[1].parameters)

FRAMEWORKS["lux"] = build_lux
