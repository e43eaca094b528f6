# What runtests.jl and lux_cases.jl share: GCBench itself, the fixture (written by
# make_fixture.py from the `jax` backend) and the per-framework checks. It loads no
# framework: each file loads the ones it tests, at top level (see runtests.jl on world age).

using Test
using TOML: TOML

include(joinpath(@__DIR__, "..", "GCBench.jl"))
using .GCBench

const FIXTURE = joinpath(@__DIR__, "fixture")
const META = TOML.parsefile(joinpath(FIXTURE, "fixture.toml"))
const COMPARED_STEPS = 6     # steps whose losses must match the reference, each of them
const LOSS_RTOL = 1e-3       # per step: float32 in another framework, other summation orders
const LOGIT_ATOL = 1e-4      # per logit, on the first batch before any update (logits are O(1))

function read_array(name, T, dims...)
    a = Vector{T}(undef, prod(dims))
    open(io -> read!(io, a), joinpath(FIXTURE, name))
    return reshape(a, dims...)
end

function fixture_data()
    n, batch, steps = META["samples"], META["batch"], META["steps"]
    images = read_array("images.f32", Float32, 28, 28, 1, n)
    labels = vec(read_array("labels.i64", Int64, n))
    schedule = read_array("schedule.i64", Int64, batch, steps)
    return GCBench.setup_data(images, labels, schedule)
end

spec_of(w) = permutedims(reduce(hcat, META[w]["spec"]))

"""A trainer of the fixture's networks; its framework was loaded at top level."""
function trainer_for(framework, workload, data)
    layout = framework == "simplechains" ? "simplechains" : "flux"
    nets, params = META[workload]["networks"], META[workload]["params"]
    weights = read_array("$(workload)_$(layout).f32", Float32, params, nets)
    return GCBench.build(framework, spec_of(workload), weights, data, META["learning_rate"])
end

const DATA = fixture_data()

"""
    strict(what, measured, bound, held) -> held

Log one strict check as `measured` against `bound` before `@test` judges it, so that a first
run's failure reads as a tolerance (a "strict check" line with both numbers and `held =
false`), apart from a crash (an `Error` in the test set, with its stack trace) and a missing
package (a `LoadError` before any test set runs)."""
function strict(what::AbstractString, measured, bound, held::Bool)
    @info "strict check: $what" measured bound held
    return held
end

function test_framework(framework, workload)
    t = trainer_for(framework, workload, DATA)
    @test GCBench.param_count(t) == META[workload]["params"]

    # The forward pass of every network, before training, logit by logit: a kernel in the
    # wrong orientation changes them by far more than LOGIT_ATOL.
    nets = META[workload]["networks"]
    expected = read_array("$(workload)_logits.f32", Float32, 10, META["batch"], nets)
    got = GCBench.logits(t, 1)
    @test size(got) == size(expected)
    worst = size(got) == size(expected) ? maximum(abs.(got .- expected)) : Inf
    @test strict("$framework $workload: largest logit difference from jax", worst, LOGIT_ATOL, worst <= LOGIT_ATOL)

    reference = Float64.(META[workload]["losses"])
    losses = Float64[]
    for s in 1:META["steps"]
        GCBench.step!(t, s)
        push!(losses, GCBench.mean_loss(t))
    end
    for s in 1:COMPARED_STEPS  # each step, not the norm of the whole vector
        off = abs(losses[s] - reference[s]) / abs(reference[s])
        @test strict("$framework $workload: step $s loss relative to jax's", off, LOSS_RTOL,
                     isapprox(losses[s], reference[s]; rtol=LOSS_RTOL))
    end
    @test sum(losses[end-4:end]) < sum(losses[1:5])   # it learns

    # Nothing compiles once the steps have run: time spent compiling stays zero.
    Base.cumulative_compile_timing(true)
    before = sum(Base.cumulative_compile_time_ns())
    for s in 1:5
        GCBench.step!(t, s)
    end
    after = sum(Base.cumulative_compile_time_ns())
    Base.cumulative_compile_timing(false)
    @test strict("$framework $workload: ns compiling after warm-up", after - before, 0, after == before)

    return t
end


# Bytes a simplechains step may allocate, per Julia release (major.minor), on one thread:
# next to nothing, each network having its own working memory (not SimpleChains' task-local
# default, which `Threads.@threads` would re-create in every task, about 5 MB each). On
# several threads, the tasks `@threads` makes as well: 16 KiB a thread.
const STEP_BYTES = Dict(v"1.10" => 1024, v"1.11" => 1024, v"1.12" => 1024, v"1.13" => 1024)

step_bytes_limit(threads::Int) =
    (threads == 1 ? get(STEP_BYTES, VersionNumber(VERSION.major, VERSION.minor), 1024) : 16 * 1024 * threads)

"""
    @step_bytes(t, s)

Bytes one `GCBench.step!(t, s)` allocates, after one step to compile it, measured as
SimpleChains measures its own `valgrad!` since Julia 1.12 (SimpleChains 30cf46f, "call
`@allocated` at top level instead of inside a function to avoid detecting spurious
allocations with Julia 1.12"): expanded where it is written (runtests.jl's top level), the
trainer bound by `let`, so that `@allocated`'s own closure sees a concrete type.
"""
macro step_bytes(t, s)
    return quote
        let t = $(esc(t)), s = $(esc(s))
            $(GCBench.step!)(t, s)
            @allocated $(GCBench.step!)(t, s)
        end
    end
end
