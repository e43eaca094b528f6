# Building a trainer by framework name, and the measured run.

"""
    build(framework, spec, weights, data, learning_rate)

A trainer of `size(weights, 2)` networks of the workload `spec` (see layers.jl) in
`framework` ("flux", "lux" or "simplechains"), loaded before by `load_framework`,
each with its own Adam at `learning_rate` (Python's `workloads.LEARNING_RATE`).
`weights` holds one column per network, in the framework's layout (see layers.jl).

The builder is called through `Base.invokelatest`: `load_framework` `include`s its file
at run time, and a caller compiled before that (a test, or code that loads and builds
in one call) would otherwise run in an older world, where the builder does not exist
yet (Julia manual, "Redefining Methods").
"""
function build(framework::AbstractString, spec, weights, data::Data, learning_rate::Real)
    haskey(FRAMEWORKS, framework) ||
        throw(ArgumentError("framework $framework is not loaded: call load_framework(\"$framework\") first"))
    return Base.invokelatest(FRAMEWORKS[framework], Matrix{Int}(spec), Matrix{Float32}(weights), data,
                             Float64(learning_rate))
end

"""
    logits(trainer, s) -> Array{Float32,3}

Every network's logits (10 x batch x networks) on step `s`'s batch, as the framework
computes its forward pass (`network_logits`, defined per framework), without training.
"""
function logits(t, s::Int)
    take_batch!(t.data, s)
    x = t.flat ? t.data.xflat : t.data.x
    return cat((network_logits(t, k, x) for k in eachindex(t.losses))...; dims=3)
end

"""Run `f(k)` for every network k, on Julia's threads when there are several."""
function foreach_network(f::F, n::Int) where {F}
    if Threads.nthreads() > 1
        Threads.@threads for k in 1:n
            f(k)
        end
    else
        for k in 1:n
            f(k)
        end
    end
    return nothing
end

"""
    step!(trainer, s)

One step of the step contract: take step `s`'s batch, then one update of every network
(`update_network!`, defined per framework) on Julia's threads when there are several.
"""
function step!(t, s::Int)
    take_batch!(t.data, s)
    # A function barrier: `update_all!` is compiled for the concrete input array type.
    t.flat ? update_all!(t, t.data.xflat) : update_all!(t, t.data.x)
    return nothing
end

update_all!(t, x::AbstractArray) = foreach_network(k -> update_network!(t, k, x, t.data.onehot), length(t.losses))

mean_loss(t) = Float64(mean(t.losses))

"""
The loop's own bookkeeping, `"metrics"`: after each step, one `Dict` per network (step,
network, loss) pushed onto a history kept for the whole run, as many training loops do.
"""
function keep_metrics!(history::Vector{Dict{String,Float64}}, t, i::Int)
    for (k, loss) in enumerate(t.losses)
        push!(history, Dict{String,Float64}("step" => i, "network" => k, "loss" => loss))
    end
    return nothing
end

"""
The package extensions loaded in this process, as module => "Parent/Extension". An
extension is a top-level module of its own whose name says nothing of its parent (Lux
and MLDataDevices both ship a `ZygoteExt` and an `MLUtilsExt`): the parents' own
Project.toml files name their extensions, and `Base.get_extension` finds the loaded ones.
"""
function extension_modules()
    out = Dict{Module,String}()
    for m in Base.loaded_modules_array()
        dir = pkgdir(m)
        dir === nothing && continue
        project = joinpath(dir, "Project.toml")
        isfile(project) || continue
        for ext in keys(get(TOML.parsefile(project), "extensions", Dict{String,Any}()))
            e = Base.get_extension(m, Symbol(ext))
            e === nothing || (out[e] = string(nameof(m), "/", ext))
        end
    end
    return out
end

"""Versions of the packages that are loaded in this process (for the result's metadata); extensions are not packages."""
function package_versions()
    exts = extension_modules()
    out = Dict{String,String}()
    for m in Base.loaded_modules_array()
        haskey(exts, m) && continue
        v = pkgversion(m)
        v === nothing || (out[string(nameof(m))] = string(v))
    end
    return out
end

"""The loaded package extensions, by parent and name, e.g. "LuxLib/LoopVectorizationExt" (LuxLib 1.15's name;
LuxLib up to 1.14 called it "LuxLib/LuxLibLoopVectorizationExt", as in LuxLib 1.12.0's registry entry)."""
loaded_extensions() = sort!(collect(values(extension_modules())))

const PROGRESS_EVERY_NS = 200_000_000

function progress(phase, done, total)
    println(stdout, "gcbench-progress ", phase, " ", done, " ", total)
    flush(stdout)
end

"""
    run!(trainer, warmup, steps, policy, every, loss_every, bookkeeping) -> Dict

Warm-up steps (compilation), then `steps` timed steps under the GC `policy`
("default", "disable" or "manual" with a collection every `every` steps). Returns the
per-step vectors of both phases, sampled losses (every `loss_every` steps and the last)
and facts about this Julia; or, when the policy would hold more garbage than the
machine has free memory, a Dict with only `"refused"` and the reason.
"""
function run!(t, warmup::Integer, steps::Integer, policy::AbstractString, every::Integer, loss_every::Integer,
              bookkeeping::AbstractString)
    bookkeeping in ("none", "metrics") || throw(ArgumentError("bookkeeping $bookkeeping is not none or metrics"))
    warm = StepRecord(warmup)
    for i in 1:warmup
        measure_step!(() -> step!(t, i), warm, i)
        progress("warmup", i, warmup)
    end
    warm_loss = mean_loss(t)
    refused = memory_refusal(policy, Int(every), Int(steps), warm.alloc_bytes)
    refused === nothing || return Dict{String,Any}("refused" => refused)

    rec = StepRecord(steps)
    history = Dict{String,Float64}[]
    keep = bookkeeping == "metrics"
    loss_steps = Int[]
    loss_values = Float64[]
    sizehint!(loss_steps, cld(steps, loss_every) + 1)
    sizehint!(loss_values, cld(steps, loss_every) + 1)
    next_report = time_ns()
    policy_before_timed(policy)
    try
        for i in 1:steps
            s = warmup + i
            measure_step!(rec, i) do
                step!(t, s)
                keep && keep_metrics!(history, t, i - 1)
                manual_collect(policy, Int(every), i)
            end
            if (i - 1) % loss_every == 0 || i == steps
                push!(loss_steps, i - 1)
                push!(loss_values, mean_loss(t))
            end
            if time_ns() >= next_report
                progress("timed", i, steps)
                next_report = time_ns() + PROGRESS_EVERY_NS
            end
        end
    finally
        policy_after_timed()
    end
    progress("timed", steps, steps)
    return Dict{String,Any}(
        "warmup_wall_ns" => warm.wall_ns, "warmup_gc_ns" => warm.gc_ns,
        "warmup_gc_full" => warm.gc_full, "warmup_gc_pauses" => warm.gc_pauses,
        "warmup_alloc_bytes" => warm.alloc_bytes, "warmup_loss" => warm_loss,
        "wall_ns" => rec.wall_ns, "gc_ns" => rec.gc_ns, "gc_full" => rec.gc_full,
        "gc_pauses" => rec.gc_pauses, "alloc_bytes" => rec.alloc_bytes,
        "loss_steps" => loss_steps, "loss_values" => loss_values,
        "bookkeeping_entries" => length(history),
        # the thread pools, as Python started Julia (`-t N,0`): N default, none interactive;
        # since 1.12 a bare `-t N` would add an interactive thread (NEWS, #57087)
        "julia_version" => string(VERSION), "julia_threads" => Threads.nthreads(:default),
        "julia_threads_interactive" => Threads.nthreads(:interactive),
        "julia_maxthreadid" => Threads.maxthreadid(),
        "julia_optimize" => Int(Base.JLOptions().opt_level),
        "julia_packages" => package_versions(), "julia_extensions" => loaded_extensions(),
    )
end
