"""Plans and where they run: suites and their cells, environments (and their installers),
the local runner and its worker processes, schedulers (SLURM, submitit), and the memory a
plan needs. Imports only `core` and `measuring`."""
