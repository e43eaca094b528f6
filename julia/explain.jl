# Where a Julia trainer's allocations come from: Profile.Allocs, sampled over a few steps.

"""The package a stack frame's file belongs to, or "GCBench" (this code) / "Base" / "other".
GCBench's own folder is matched first and as a whole folder (`here` with its separator), so a
checkout under any `.../packages/X/` stays GCBench's and `/a/julia-old` is not `/a/julia`;
a depot's package is the last `packages/NAME/SLUG/` in the path, SLUG being Pkg's 4- or
5-character version slug (a depot can itself sit under a folder named packages)."""
function frame_package(file::AbstractString; here::AbstractString = @__DIR__)
    path = normpath(file)
    startswith(path, joinpath(normpath(here), "")) && return "GCBench"
    found = collect(eachmatch(r"[/\\]packages[/\\]([A-Za-z0-9_]+)[/\\][A-Za-z0-9]{4,5}[/\\]", path))
    isempty(found) || return String(last(found).captures[1])
    (startswith(file, "./") || occursin("/share/julia/base/", file) || !occursin('/', file)) && return "Base"
    return "other"
end

const NAMED_PACKAGES = ("Flux", "Lux", "LuxLib", "LuxCore", "SimpleChains", "Zygote", "NNlib", "Optimisers",
                        "MLUtils", "GCBench")

"""
    explain_allocs(trainer, first_step, steps, sample_rate, bookkeeping) -> Dict

Run `steps` steps (from schedule column `first_step`), with the loop's bookkeeping
("none" or "metrics", as `run!` measures them, so that the explanation is of the loop
that was measured), under `Profile.Allocs` with the given sample rate and count the sampled allocations by type and by their top frame in a
named package (the innermost frame inside Flux, Lux, LuxLib, SimpleChains, Zygote,
NNlib, Optimisers or MLUtils, else GCBench's own loop, else "other"), with bytes and the
file:line of that frame.
"""
function explain_allocs(t, first_step::Integer, steps::Integer, sample_rate::Real, bookkeeping::AbstractString)
    bookkeeping in ("none", "metrics") || throw(ArgumentError("bookkeeping $bookkeeping is not none or metrics"))
    keep = bookkeeping == "metrics"
    history = Dict{String,Float64}[]
    Profile.Allocs.clear()
    Profile.Allocs.@profile sample_rate = Float64(sample_rate) for s in first_step:(first_step + steps - 1)
        step!(t, s)
        keep && keep_metrics!(history, t, s - first_step)
    end
    allocs = Profile.Allocs.fetch().allocs
    Profile.Allocs.clear()
    by_type = Dict{String,Vector{Int}}()     # type => [count, bytes]
    by_package = Dict{String,Vector{Int}}()  # package => [count, bytes]
    by_site = Dict{String,Vector{Int}}()     # "package file:line" => [count, bytes]
    for a in allocs
        ty = string(a.type)
        package, site = "other", "?"
        for frame in a.stacktrace
            p = frame_package(string(frame.file))
            if p in NAMED_PACKAGES
                package, site = p, string(basename(string(frame.file)), ":", frame.line)
                break
            end
        end
        for (d, key) in ((by_type, ty), (by_package, package), (by_site, string(package, " ", site)))
            v = get!(d, key, [0, 0])
            v[1] += 1
            v[2] += a.size
        end
    end
    return Dict{String,Any}("samples" => length(allocs), "sample_rate" => Float64(sample_rate), "steps" => steps,
                            "by_type" => by_type, "by_package" => by_package, "by_site" => by_site)
end
