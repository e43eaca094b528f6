"""The Julia half of gcbench (GCBench.jl, its Project.toml and its tests), shipped inside the
Python package as `gcbench.julia` so that an installed wheel finds it as a checkout does
(setup.py maps this folder; julia_bridge.julia_dir reads it through importlib.resources)."""
