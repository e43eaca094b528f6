# The dataset, resident in Julia, and the step's batch taken into preallocated buffers.

"""
The training set (WHCN images, 1-based labels), the batch schedule (one column of
1-based sample indices per step) and the buffers every step's batch is copied into.
The batch size is the schedule's column length.
"""
struct Data
    images::Array{Float32,4}      # 28 x 28 x 1 x n
    labels::Vector{Int}           # 1..10
    schedule::Matrix{Int}         # batch x steps
    x::Array{Float32,4}           # 28 x 28 x 1 x batch
    xflat::Matrix{Float32}        # 784 x batch, sharing memory with `x`
    onehot::Matrix{Float32}       # 10 x batch
    labels32::Vector{UInt32}      # batch, for SimpleChains
end

batch_size(d::Data) = size(d.schedule, 1)

"""
    setup_data(images, labels, schedule) -> Data

Copy the dataset into Julia arrays once, outside the timed steps. `images` arrive as
28 x 28 x 1 x n (WHCN), `labels` 0-based, `schedule` as batch x steps of 0-based
indices.
"""
function setup_data(images, labels, schedule)
    imgs = Array{Float32,4}(images)
    labs = Vector{Int}(labels) .+ 1
    sched = Matrix{Int}(schedule) .+ 1
    n = size(imgs, 4)
    # checked once here, so that `take_batch!` may index without checks in the timed steps
    length(labs) == n || throw(ArgumentError("$(length(labs)) labels for $n images"))
    all(in(1:10), labs) || throw(ArgumentError("labels must be 0-9"))
    all(in(1:n), sched) || throw(ArgumentError("the schedule's indices must be 0-$(n - 1), the images there are"))
    batch = size(sched, 1)
    x = zeros(Float32, size(imgs, 1), size(imgs, 2), size(imgs, 3), batch)
    return Data(imgs, labs, sched, x, reshape(x, :, batch), zeros(Float32, 10, batch),
                zeros(UInt32, batch))
end

"""Copy step `s`'s batch into the data's buffers (no allocation). The step's column is
bounds-checked (a bad step index throws); the indices in it were checked by `setup_data`."""
function take_batch!(d::Data, s::Int)
    checkbounds(d.schedule, :, s)
    fill!(d.onehot, 0f0)
    @inbounds for (k, j) in enumerate(view(d.schedule, :, s))
        copyto!(view(d.x, :, :, :, k), view(d.images, :, :, :, j))
        label = d.labels[j]
        d.onehot[label, k] = 1f0
        d.labels32[k] = UInt32(label)
    end
    return nothing
end
