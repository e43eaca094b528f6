# The workload's layers as Python describes them, and the weights that go with them.
#
# Python sends a layer table (one row per layer, see `gcbench.measuring.backends.julia_layout`):
#   [1, kernel, cin, cout, 1]   a convolution (relu, then 2x2 max-pool)
#   [2, fan_in, fan_out, 0, r]  a dense layer, relu if r == 1
# and, per network, one Float32 vector of all weights in Flux/Lux layout (conv kernels
# kw x kh x cin x cout for a true convolution, dense weights out x in), layer by layer,
# kernel before bias, each array in column-major order.

const CONV = 1
const DENSE = 2

"""Iterate the weight vector `w` as arrays of the given sizes, in order."""
mutable struct WeightReader
    w::Vector{Float32}
    offset::Int
end
WeightReader(w::AbstractVector) = WeightReader(Vector{Float32}(w), 0)

function next_array!(r::WeightReader, dims::Int...)
    n = prod(dims)
    a = reshape(r.w[(r.offset + 1):(r.offset + n)], dims)
    r.offset += n
    return a
end

function check_consumed(r::WeightReader)
    r.offset == length(r.w) ||
        throw(ArgumentError("weights: used $(r.offset) of $(length(r.w)) values"))
end

"""True when the first layer is dense: the model takes 784 x batch, not 28 x 28 x 1 x batch."""
flat_input(spec::AbstractMatrix) = spec[1, 1] == DENSE

"""Whether a flatten goes before layer `i` (a dense layer right after a convolution)."""
flatten_before(spec::AbstractMatrix, i::Int) = i > 1 && spec[i, 1] == DENSE && spec[i - 1, 1] == CONV
