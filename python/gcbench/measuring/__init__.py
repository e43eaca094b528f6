"""What runs inside the measured process: the workloads and data, the backends' training
loops, the GC policies, the step probe, the worker (which `gcbench.child` hosts), the
diagnostic run, and the result document they write. Imports only `core`."""
