"""What the result documents mean, as records: statistics, each cell's summary, comparisons
and their tests, explanations, the reproductions' checks, and the bisections' decisions
(`publishing` words them for people). Imports only `core`, `measuring` and `running`."""
