"""What the result documents mean: statistics, each cell's summary, comparisons and their
tests, the verdict, explanations, the reproductions' checks, and the bisections' decisions.
Imports only `core`, `measuring` and `running`."""
