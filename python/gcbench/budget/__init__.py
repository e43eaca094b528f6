"""GC budgets for pytest: the plugin (`plugin`: the `gc_budget` fixture and its options) and
its budget files (`baseline`: gc_budgets.toml). An entry point, beside the command line."""
