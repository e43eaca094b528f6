# Per-step measurement: the clock, the GC counters, and the GC policies.
#
# `Base.gc_num()` and `Base.GC_Diff` are Julia internals (stable since 1.6, but not
# public API): `gc_since` is the only place that touches them.

"""GC counters of this process now; pass to `gc_since`."""
gc_snapshot() = Base.gc_num()

"""
    gc_since(before) -> (gc_ns, full_sweeps, pauses, bytes)

GC time in ns, full collections, collections (pauses) and bytes allocated since
`before = gc_snapshot()`. Allocation-free.
"""
function gc_since(before)
    d = Base.GC_Diff(Base.gc_num(), before)
    return (d.total_time, d.full_sweep, d.pause, d.allocd)
end

"""Per-step vectors, allocated once before the loop."""
struct StepRecord
    wall_ns::Vector{Int64}
    gc_ns::Vector{Int64}
    gc_full::Vector{Int64}
    gc_pauses::Vector{Int64}
    alloc_bytes::Vector{Int64}
end
StepRecord(n::Integer) = StepRecord((zeros(Int64, n) for _ in 1:5)...)

"""
    measure_step!(f, rec, i)

Run `f()` as step `i`, recording its wall time and GC counters into `rec`
(use with a `do` block: `measure_step!(rec, i) do ... end`).
"""
@inline function measure_step!(f::F, rec::StepRecord, i::Int) where {F}
    before = gc_snapshot()
    t0 = time_ns()
    f()
    t1 = time_ns()
    gc_ns, full, pauses, bytes = gc_since(before)
    @inbounds begin
        rec.wall_ns[i] = Int64(t1 - t0)
        rec.gc_ns[i] = gc_ns
        rec.gc_full[i] = full
        rec.gc_pauses[i] = pauses
        rec.alloc_bytes[i] = bytes
    end
    return nothing
end

"""
The GC policies Julia understands: `default`, `disable` (`GC.enable(false)` for the
timed steps) and `manual` (disabled, one full `GC.gc()` every `every` steps, inside the
step it follows). A disabled collector skips `GC.gc()`, so a manual collection enables
it for the duration of the call.
"""
function policy_before_timed(policy::AbstractString)
    policy in ("default", "disable", "manual") ||
        throw(ArgumentError("GC policy $policy has no Julia meaning"))
    policy == "default" || GC.enable(false)
    return nothing
end

policy_after_timed() = (GC.enable(true); nothing)

@inline function manual_collect(policy::AbstractString, every::Int, i::Int)
    if policy == "manual" && i % every == 0
        GC.enable(true)
        GC.gc()
        GC.enable(false)
    end
    return nothing
end

"""
    read_limit(path) -> Int or nothing

An integer file of a control group; `nothing` where it is missing or says `max`.
"""
function read_limit(path::AbstractString)
    isfile(path) || return nothing
    return tryparse(Int, strip(read(path, String)))
end

"""
    cgroup_room(root="/sys/fs/cgroup", proc="/proc/self/cgroup") -> Int or nothing

What this process's control groups still let it take, in bytes (`nothing`: no limit
found). As libuv's `uv_get_constrained_memory`, it follows the process's own group named
in /proc/self/cgroup, not the root's files, which a SLURM `task/cgroup` job or
`systemd-run -p MemoryMax` leave unlimited:
- cgroup v2 (the `0::PATH` line): from the process's group up to the root, the smallest
  room of `memory.max` and `memory.high` less that group's `memory.current`;
- cgroup v1 (the `memory` controller's line): `memory.limit_in_bytes` less
  `memory.usage_in_bytes` in that group's folder, or the controller's root where the
  group is not visible (a container). gcbench's Python side (`footprint.cgroup_room`)
  does the same.
"""
function cgroup_room(root::AbstractString="/sys/fs/cgroup", proc::AbstractString="/proc/self/cgroup")
    isfile(proc) || return nothing
    rooms = Int[]
    v1 = nothing
    v2 = nothing
    for line in eachline(proc)
        parts = split(line, ':'; limit=3)
        length(parts) == 3 || continue
        hid, controllers, path = parts
        if "memory" in split(controllers, ',')
            v1 = path
        elseif hid == "0" && isempty(controllers)
            v2 = path
        end
    end
    if v1 !== nothing
        base = joinpath(root, "memory")
        for dir in (joinpath(base, lstrip(v1, '/')), base)
            lim = read_limit(joinpath(dir, "memory.limit_in_bytes"))
            use = read_limit(joinpath(dir, "memory.usage_in_bytes"))
            if lim !== nothing && use !== nothing
                lim < 2^60 && push!(rooms, max(lim - use, 0))  # v1 writes "no limit" as a huge number
                break
            end
        end
    end
    if v2 !== nothing && isfile(joinpath(root, "cgroup.controllers"))
        top = normpath(root)
        dir = normpath(joinpath(root, lstrip(v2, '/')))
        while true
            current = read_limit(joinpath(dir, "memory.current"))
            for name in ("memory.max", "memory.high")
                lim = read_limit(joinpath(dir, name))
                (lim !== nothing && current !== nothing) && push!(rooms, max(lim - current, 0))
            end
            (dir == top || !startswith(dir, top)) && break
            dir = dirname(dir)
        end
    end
    return isempty(rooms) ? nothing : minimum(rooms)
end

"""
    available_memory(free=Int(Sys.free_memory())) -> Int

The memory this process may still take: the machine's free memory `free`, or less where
its control groups leave less room (`cgroup_room`).
"""
function available_memory(free::Integer=Int(Sys.free_memory()))
    room = cgroup_room()
    return room === nothing ? Int(free) : min(Int(free), room)
end

"""
    memory_refusal(policy, every, steps, warmup_bytes) -> nothing or a reason

Julia frees nothing while its collector is disabled (`jl_gc_collect` returns at once),
unlike Python, whose reference counting goes on freeing. So under `disable` every
step's garbage stays until the end, and under `manual:K` for K steps. The bytes a step
allocates are known from the warm-up: its cheapest step after the first (the first
compiles), so these policies need at least two warm-up steps. When what the policy keeps
would not fit in 80 % of the memory available (`available_memory`), the cell is refused.
"""
function memory_refusal(policy::AbstractString, every::Int, steps::Int, warmup_bytes::AbstractVector)
    policy == "default" && return nothing
    length(warmup_bytes) >= 2 ||
        return string("GC policy ", policy, " needs at least 2 warm-up steps to know a step's garbage ",
                      "(the first one compiles); use --warmup 2 or more")
    per_step = minimum(view(warmup_bytes, 2:length(warmup_bytes)))
    held = per_step * (policy == "manual" ? min(every, steps) : steps)
    free = available_memory()
    held <= 0.8 * free && return nothing
    gib(b) = string(round(b / 2^30; digits=1), " GiB")
    return string("GC policy ", policy, " would keep about ", gib(held), " of garbage (",
                  round(Int, per_step / 2^10), " KiB per step, ", policy == "manual" ? min(every, steps) : steps,
                  " steps) with ", gib(free), " available; use fewer steps or a smaller K")
end
