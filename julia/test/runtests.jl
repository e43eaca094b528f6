# The Julia backends against the `jax` backend's reference (julia/test/fixture, written by
# make_fixture.py; common.jl reads it): for each framework and workload, the parameter count, the logits of
# every network on the first batch, the loss of every one of the first steps from the same
# initial weights and batches, that the loss falls, that nothing compiles after warm-up,
# and that SimpleChains allocates close to nothing.
#
#     julia --project=. -e 'using Pkg; Pkg.instantiate(); include("julia/test/runtests.jl")'
#
# (from the repository root; `-t 2` as well runs the multi-threaded checks).
#
# World age: `load_framework` `include`s the framework's file, which defines its methods in
# a newer world than code compiled before it. The frameworks this file tests are loaded here, at
# top level, each in a statement of its own, before any test runs; the tests are functions
# called through `Base.invokelatest`, and `GCBench.build` calls the builder the same way.

include(joinpath(@__DIR__, "common.jl"))

# Lux is tested in a process of its own (lux_cases.jl), as a measured Lux cell runs: with
# Flux and SimpleChains loaded beside it, LuxLib would run its LoopVectorization extension
# (SimpleChains loads LoopVectorization) and other packages' extensions, which a Lux cell
# never has.
GCBench.load_framework("flux")
GCBench.load_framework("simplechains")

@testset "GCBench.jl" begin
    for framework in ("flux", "simplechains"), workload in ("mlp", "lenet5")
        @testset "$framework $workload" begin
            t = Base.invokelatest(test_framework, framework, workload)
            if framework == "simplechains"  # its allocations, measured here at top level (`@step_bytes`)
                bytes = @step_bytes(t, 1)
                limit = step_bytes_limit(Threads.nthreads())
                @test strict("simplechains $workload: bytes a step on $(Threads.nthreads()) threads, Julia $VERSION",
                             bytes, limit, bytes <= limit)
            end
        end
    end

    @testset "lux, alone in its own process" begin
        cmd = `$(Base.julia_cmd()) -t $(Threads.nthreads()) --project=$(Base.active_project()) $(joinpath(@__DIR__, "lux_cases.jl"))`
        @test success(pipeline(cmd; stdout=stdout, stderr=stderr))
    end

    @testset "the SimpleChains internals simplechains.jl relies on" begin
        # Unexported, so not covered by semver: `scratch_bytes` calls
        # `maybe_static_size_arg(inputdim, x)` (src/simple_chain.jl) and
        # `required_bytes(Val{T}(), layers, size, additional)` (src/memory.jl) of SimpleChains 0.4.8.
        SC = GCBench.SimpleChains
        @test isdefined(SC, :maybe_static_size_arg) && isdefined(SC, :required_bytes)
        @test hasmethod(SC.required_bytes, Tuple{Val{Float32},Any,Any,Any})
        t = trainer_for("simplechains", "mlp", DATA)
        x = t.flat ? t.data.xflat : t.data.x
        bytes = Base.invokelatest(GCBench.scratch_bytes, t.chain, x)
        @test bytes isa Int && bytes > 0 && bytes == length(t.scratch[1])
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
        free = Int(Sys.free_memory())  # read once: two reads of free memory race each other
        @test 0 < GCBench.available_memory(free) <= free
    end

    @testset "the memory limit follows this process's control group" begin
        mktempdir() do dir
            root = joinpath(dir, "cgroup")
            put(path, text) = (mkpath(dirname(path)); write(path, text))
            put(joinpath(root, "cgroup.controllers"), "cpu memory\n")
            job = joinpath(root, "system.slice", "slurm", "job_7")
            put(joinpath(job, "memory.max"), string(4 * 2^30))
            put(joinpath(job, "memory.current"), string(3 * 2^30))
            put(joinpath(job, "step_0", "memory.max"), "max\n")
            put(joinpath(job, "step_0", "memory.current"), string(2^30))
            proc = joinpath(dir, "self")
            put(proc, "0::/system.slice/slurm/job_7/step_0\n")
            @test GCBench.cgroup_room(root, proc) == 2^30        # the job's room, from the step up
            put(proc, "4:memory:/process_api/abc\n")             # cgroup v1, the controller's path
            put(joinpath(root, "memory", "process_api", "abc", "memory.limit_in_bytes"), string(8 * 2^30))
            put(joinpath(root, "memory", "process_api", "abc", "memory.usage_in_bytes"), string(2 * 2^30))
            @test GCBench.cgroup_room(root, proc) == 6 * 2^30
            @test GCBench.cgroup_room(root, joinpath(dir, "missing")) === nothing
        end
    end

    @testset "a frame's package, wherever the checkout and the depot are" begin
        here = "/home/u/packages/X/gcbench/julia"  # a checkout under a folder named packages
        @test GCBench.frame_package("$here/run.jl"; here) == "GCBench"
        @test GCBench.frame_package("/home/u/packages/X/gcbench/julia-old/run.jl"; here) == "other"
        @test GCBench.frame_package("/a/julia-old/run.jl"; here = "/a/julia") == "other"
        @test GCBench.frame_package("/a/julia/sub/../run.jl"; here = "/a/julia") == "GCBench"
        depot = "/home/u/packages/proj/.julia/packages"  # a depot under a folder named packages
        @test GCBench.frame_package("$depot/Flux/Ab3dE/src/train.jl"; here) == "Flux"
        @test GCBench.frame_package("/root/.julia/packages/LuxLib/x1Y2z/src/api/dense.jl"; here) == "LuxLib"
        @test GCBench.frame_package("./boot.jl"; here) == "Base"
        @test GCBench.frame_package("/opt/julia/share/julia/base/array.jl"; here) == "Base"
        @test GCBench.frame_package(joinpath(@__DIR__, "..", "run.jl")) == "GCBench"  # the default: this checkout
    end

    @testset "allocations by type and package" begin
        t = trainer_for("flux", "mlp", DATA)
        Base.invokelatest(GCBench.step!, t, 1)
        out = Base.invokelatest(GCBench.explain_allocs, t, 2, 3, 1.0, "none")
        @test out["samples"] > 0
        kept = Base.invokelatest(GCBench.explain_allocs, t, 2, 3, 1.0, "metrics")  # the loop that run! measures
        # Counted by package, not by type: on Julia 1.10, objects that compiled code allocates
        # (the Dict of keep_metrics!, run.jl) are recorded without a type: 1.10's
        # src/llvm-final-gc-lowering.cpp calls the pool allocator untyped and jl_gc_pool_alloc
        # records jl_gc_unknown_type_tag (Profile's Allocs.jl: "Since Julia 1.11, all
        # allocations should have a type reported"). The same steps with and without the
        # loop's records: GCBench's own allocations grow by at least one per network per step.
        own(out) = get(out["by_package"], "GCBench", [0, 0])[1]
        @test own(kept) - own(out) >= 3 * META["mlp"]["networks"]
        @test any(k -> k in ("Flux", "Zygote", "NNlib", "Optimisers"), keys(out["by_package"]))
    end
end
