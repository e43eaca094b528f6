"""What leaves gcbench for people and tools: the report, the texts commands print (verdict,
comparison, bisect, explanation), CSV and pandas rows, the raw results a report carries.
Imports `core`, `measuring`, `running` and `analysing`; only `publishing.report` imports matplotlib."""
