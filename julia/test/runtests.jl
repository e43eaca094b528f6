# The Julia backends against the `jax` backend's reference (julia/test/fixture, written by
# make_fixture.py): for each framework and workload, the parameter count, the logits of
# every network on the first batch, the loss of every one of the first steps from the same
# initial weights and batches, that the loss falls, that nothing compiles after warm-up,
# and that SimpleChains allocates close to nothing.
#
#     julia --project=. -e 'using Pkg; Pkg.instantiate(); include("julia/test/runtests.jl")'
#
# (from the repository root; `-t 2` as well runs the multi-threaded checks).
#
# World age: `load_framework` `include`s the framework's file, which defines its methods in
# a newer world than code compiled before it. Every framework is therefore loaded here, at
# top level, each in a statement of its own, before any test runs; the tests are functions
# called through `Base.invokelatest`, and `GCBench.build` calls the builder the same way.

using Test
using TOML: TOML

include(joinpath(@__DIR__, "..", "GCBench.jl"))
using .GCBench

GCBench.load_framework("flux")
GCBench.load_framework("lux")
GCBench.load_framework("simplechains")

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

function test_framework(framework, workload)
    t = trainer_for(framework, workload, DATA)
    @test GCBench.param_count(t) == META[workload]["params"]

    # The forward pass of every network, before training, logit by logit: a kernel in the
    # wrong orientation changes them by far more than LOGIT_ATOL.
    nets = META[workload]["networks"]
    expected = read_array("$(workload)_logits.f32", Float32, 10, META["batch"], nets)
    got = GCBench.logits(t, 1)
    @test size(got) == size(expected)
    @test maximum(abs.(got .- expected)) <= LOGIT_ATOL

    reference = Float64.(META[workload]["losses"])
    losses = Float64[]
    for s in 1:META["steps"]
        GCBench.step!(t, s)
        push!(losses, GCBench.mean_loss(t))
    end
    for s in 1:COMPARED_STEPS  # each step, not the norm of the whole vector
        @test isapprox(losses[s], reference[s]; rtol=LOSS_RTOL)
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
    @test after == before

    if framework == "simplechains"
        # Each network has its own working memory, not SimpleChains' task-local default,
        # which `Threads.@threads` would re-create for every task in every step (about
        # 5 MB each). On one thread a step allocates next to nothing; on several, only
        # the tasks `@threads` makes: the two runs of the workflow (`-t 1`, `-t 2`) agree
        # within that bound.
        limit = Threads.nthreads() == 1 ? 1024 : 16 * 1024 * Threads.nthreads()
        GCBench.step!(t, 1)
        @test (@allocated GCBench.step!(t, 1)) <= limit
    end
    return nothing
end

@testset "GCBench.jl" begin
    for framework in ("flux", "lux", "simplechains"), workload in ("mlp", "lenet5")
        @testset "$framework $workload" begin
            Base.invokelatest(test_framework, framework, workload)
        end
    end

    @testset "a run returns the schema's vectors, and losses are batch means" begin
        t = trainer_for("simplechains", "mlp", DATA)
        raw = Base.invokelatest(GCBench.run!, t, 2, 10, "default", 1, 5, "metrics")
        @test length(raw["wall_ns"]) == 10 && length(raw["warmup_wall_ns"]) == 2
        @test raw["bookkeeping_entries"] == 10 * META["mlp"]["networks"]
        @test all(0 .< raw["loss_values"] .< 5 * log(10))
        @test "SimpleChains" in keys(raw["julia_packages"])
        @test raw["julia_optimize"] == Base.JLOptions().opt_level
        @test all(e -> occursin('/', e), raw["julia_extensions"])   # "Parent/Extension"
    end

    @testset "one framework per process" begin
        # A fresh process that loads Lux alone: LuxLib must not run its LoopVectorization
        # extension there (SimpleChains loads LoopVectorization and Polyester).
        code = """
            include($(repr(joinpath(@__DIR__, "..", "GCBench.jl"))))
            GCBench.load_framework("lux")
            print(join(GCBench.loaded_extensions(), ","), ";", isdefined(Main, :SimpleChains) ||
                  any(m -> nameof(m) == :LoopVectorization, Base.loaded_modules_array()))
        """
        out = read(`$(Base.julia_cmd()) --project=$(Base.active_project()) -e $code`, String)
        exts, lv = split(out, ";")
        @test !occursin("LoopVectorization", exts)
        @test lv == "false"
    end

    @testset "a disabled collector that would hold too much is refused" begin
        @test GCBench.memory_refusal("default", 1, 10^9, [10^9]) === nothing
        @test occursin("would keep about", GCBench.memory_refusal("disable", 1, 10^9, [10^12, 10^9]))
        @test GCBench.memory_refusal("manual", 10, 10^9, [10^12, 1024]) === nothing  # the compiling step is left out
        @test occursin("at least 2 warm-up steps", GCBench.memory_refusal("disable", 1, 10, [1024]))
        @test 0 < GCBench.available_memory() <= Sys.free_memory()
    end

    @testset "allocations by type and package" begin
        t = trainer_for("flux", "mlp", DATA)
        Base.invokelatest(GCBench.step!, t, 1)
        out = Base.invokelatest(GCBench.explain_allocs, t, 2, 3, 1.0, "none")
        @test out["samples"] > 0
        kept = Base.invokelatest(GCBench.explain_allocs, t, 2, 3, 1.0, "metrics")  # the loop that run! measures
        dicts = sum((v[1] for (k, v) in kept["by_type"] if startswith(k, "Dict")); init=0)
        @test dicts >= 3 * META["mlp"]["networks"]   # one record per network per step
        @test any(k -> k in ("Flux", "Zygote", "NNlib", "Optimisers"), keys(out["by_package"]))
    end
end
