# The Lux cases of runtests.jl, in a process of their own: Lux loaded alone, as a measured
# Lux cell runs (no LoopVectorization, SimpleChains or Flux extension active). runtests.jl
# runs this file and fails when it does; on its own:
#
#     julia --project=. julia/test/lux_cases.jl

include(joinpath(@__DIR__, "common.jl"))

GCBench.load_framework("lux")

@testset "lux, loaded alone" begin
    @test !any(m -> nameof(m) in (:SimpleChains, :Flux, :LoopVectorization), Base.loaded_modules_array())
    for workload in ("mlp", "lenet5")
        @testset "lux $workload" begin
            Base.invokelatest(test_framework, "lux", workload)
        end
    end
end
