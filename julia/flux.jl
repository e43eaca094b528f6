# Flux, explicit style: `Flux.setup` + `Flux.withgradient` + `Flux.update!`, Adam from
# Optimisers.jl, one model and one optimiser state per network (the seed case's loop).
# Included into GCBench by `load_framework("flux")`.

using Flux: Flux
using MLUtils: MLUtils
using Optimisers: Optimisers

struct FluxTrainer{M,S}
    models::Vector{M}
    states::Vector{S}
    losses::Vector{Float32}
    data::Data
    flat::Bool
end

function flux_model(spec::AbstractMatrix{Int}, weights::AbstractVector)
    r = WeightReader(weights)
    layers = Any[]
    for i in axes(spec, 1)
        kind, a, b, c, relu = spec[i, :]
        flatten_before(spec, i) && push!(layers, MLUtils.flatten)
        if kind == CONV
            push!(layers, Flux.Conv(next_array!(r, a, a, b, c), next_array!(r, c), Flux.relu))
            push!(layers, Flux.MaxPool((2, 2)))
        else
            push!(layers, Flux.Dense(next_array!(r, b, a), next_array!(r, b), relu == 1 ? Flux.relu : identity))
        end
    end
    check_consumed(r)
    return Flux.Chain(layers...)
end

function build_flux(spec, weights::AbstractMatrix, data::Data, learning_rate::Float64)
    models = [flux_model(spec, view(weights, :, k)) for k in axes(weights, 2)]
    states = [Flux.setup(Optimisers.Adam(Float32(learning_rate)), m) for m in models]
    return FluxTrainer(models, states, zeros(Float32, length(models)), data, flat_input(spec))
end

function update_network!(t::FluxTrainer, k::Int, x, y)
    loss, grads = Flux.withgradient(m -> Flux.logitcrossentropy(m(x), y), t.models[k])
    Flux.update!(t.states[k], t.models[k], grads[1])
    t.losses[k] = loss
    return nothing
end

network_logits(t::FluxTrainer, k::Int, x) = Array{Float32}(t.models[k](x))

param_count(t::FluxTrainer) = length(Flux.destructure(t.models[1])[1])

FRAMEWORKS["flux"] = build_flux
