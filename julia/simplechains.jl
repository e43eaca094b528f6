# SimpleChains: one statically sized chain, `valgrad!` into each network's own working
# memory, and SimpleChains' own ADAM update applied in place. Included into GCBench by
# `load_framework("simplechains")`.
#
# Three facts of SimpleChains' source decide how this file looks:
# - `valgrad!` with a `LogitCrossEntropyLoss` returns the loss *summed* over the batch and
#   the gradient of that sum (src/loss.jl); SimpleChains' own training scales the update
#   by 1/N (src/optimize.jl, `loss_multiplier`). So the update is scaled by 1/batch and
#   the loss recorded divided by the batch, as every other backend's is a batch mean.
# - Without a memory pointer, `valgrad!` takes its working memory from
#   `task_local_storage()`, keyed by the chain's type (src/memory.jl); `Threads.@threads`
#   starts new tasks every step, so each step would allocate it afresh. Each network gets
#   its own buffer instead, passed to `valgrad!(memory::Ptr{UInt8}, g, c, x, p)`.
# - `init_params` may return a `StaticStrideArray`; the parameters here are plain
#   `Vector{Float32}` holding the canonical weights in SimpleChains' layout (conv kernels
#   K[kw, kh, cin, cout] then biases, src/conv.jl; dense `vec([W b])`, src/dense.jl),
#   converted in Python (`julia_layout.simplechains_weights`).

using SimpleChains: SimpleChains

struct SimpleChainsTrainer{C}
    chain::C                                # with the loss attached; stateless, shared by the networks
    params::Vector{Vector{Float32}}
    grads::Vector{Vector{Float32}}
    scratch::Vector{Vector{UInt8}}          # each network's own working memory for valgrad!
    adam::Vector{Tuple{Vector{Float32},Vector{Float32},Vector{Float64}}}
    opt::SimpleChains.ADAM
    losses::Vector{Float32}
    data::Data
    flat::Bool
    scale::Float32                          # 1 / batch size
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

"""Bytes of working memory `valgrad!` needs for `chain` on inputs shaped like `x`."""
function scratch_bytes(chain, x)
    parg = SimpleChains.maybe_static_size_arg(chain.inputdim, x)
    return Int(SimpleChains.required_bytes(Val{Float32}(), chain.layers, size(parg), SimpleChains.static(0)))
end

function build_simplechains(spec, weights::AbstractMatrix, data::Data, learning_rate::Float64)
    chain = SimpleChains.add_loss(simplechains_model(spec), SimpleChains.LogitCrossEntropyLoss(data.labels32))
    n = size(weights, 2)
    expected = Int(SimpleChains.numparam(chain))
    size(weights, 1) == expected ||
        throw(ArgumentError("SimpleChains expects $expected parameters per network, got $(size(weights, 1))"))
    params = [Vector{Float32}(weights[:, k]) for k in 1:n]
    grads = [zeros(Float32, expected) for _ in 1:n]
    x = flat_input(spec) ? data.xflat : data.x
    nbytes = scratch_bytes(chain, x)
    scratch = [Vector{UInt8}(undef, nbytes) for _ in 1:n]
    opt = SimpleChains.ADAM(learning_rate)
    adam = [(zeros(Float32, expected), zeros(Float32, expected), Float64[opt.β[1], opt.β[2]]) for _ in 1:n]
    return SimpleChainsTrainer(chain, params, grads, scratch, adam, opt, zeros(Float32, n), data, flat_input(spec),
                               inv(Float32(batch_size(data))))
end

# The one-hot `y` is unused: the loss layer holds data.labels32, refilled by take_batch!.
function update_network!(t::SimpleChainsTrainer, k::Int, x, _y)
    buf = t.scratch[k]
    summed = GC.@preserve buf SimpleChains.valgrad!(SimpleChains.align(pointer(buf)), t.grads[k], t.chain, x,
                                                     t.params[k])
    SimpleChains.update!(t.opt, t.adam[k], t.params[k], t.grads[k], t.scale)
    t.losses[k] = summed * t.scale
    return nothing
end

# The chain without its loss layer gives the logits (src/loss.jl, `remove_loss`).
network_logits(t::SimpleChainsTrainer, k::Int, x) = Array{Float32}(SimpleChains.remove_loss(t.chain)(x, t.params[k]))

param_count(t::SimpleChainsTrainer) = length(t.params[1])

FRAMEWORKS["simplechains"] = build_simplechains
