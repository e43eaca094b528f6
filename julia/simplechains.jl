# SimpleChains: a statically sized chain per network, its own allocation-free
# `valgrad!`, and its own ADAM update applied in place. SimpleChains keeps parameters as
# one flat vector in its own layout and initialises them itself (Glorot), so these
# networks start from different weights than the other backends; sizes, data, batches
# and optimiser are the same.

struct SimpleChainsTrainer{C}
    chains::Vector{C}                     # with the loss attached, one per network
    params::Vector{Vector{Float32}}
    grads::Vector{Vector{Float32}}
    adam::Vector{Tuple{Vector{Float32},Vector{Float32},Vector{Float64}}}
    opt::SimpleChains.ADAM
    losses::Vector{Float32}
    data::Data
    flat::Bool
end

function simplechains_model(spec::AbstractMatrix{Int})
    input = flat_input(spec) ? SimpleChains.static(spec[1, 2]) :
            (SimpleChains.static(28), SimpleChains.static(28), SimpleChains.static(1))
    layers = Any[]
    for i in axes(spec, 1)
        kind, a, b, c, relu = spec[i, :]
        flatten_before(spec, i) && push!(layers, SimpleChains.Flatten(3))
        if kind == CONV
            push!(layers, SimpleChains.Conv(SimpleChains.relu, (a, a), c), SimpleChains.MaxPool(2, 2))
        else
            push!(layers, SimpleChains.TurboDense(relu == 1 ? SimpleChains.relu : identity, b))
        end
    end
    return SimpleChains.SimpleChain(input, layers...)
end

function build_simplechains(spec, weights::AbstractMatrix, data::Data)
    n = size(weights, 2)
    # One chain per network: each owns its scratch memory, so networks can run on threads.
    chains = [SimpleChains.add_loss(simplechains_model(spec), SimpleChains.LogitCrossEntropyLoss(data.labels32))
              for _ in 1:n]
    params = [SimpleChains.init_params(c) for c in chains]
    grads = [similar(p) for p in params]
    opt = SimpleChains.ADAM(3e-4)
    adam = [(zero(p), zero(p), Float64[opt.β[1], opt.β[2]]) for p in params]
    return SimpleChainsTrainer(chains, params, grads, adam, opt, zeros(Float32, n), data, flat_input(spec))
end

# The one-hot `y` is unused: the loss layer holds data.labels32, refilled by take_batch!.
function update_network!(t::SimpleChainsTrainer, k::Int, x, _y)
    loss = SimpleChains.valgrad!(t.grads[k], t.chains[k], x, t.params[k])
    SimpleChains.update!(t.opt, t.adam[k], t.params[k], t.grads[k])
    t.losses[k] = loss
    return nothing
end

param_count(t::SimpleChainsTrainer) = length(t.params[1])
