"""What leaves gcbench for people and other tools: the report (Markdown, HTML, plots), rows
for CSV and pandas, and the archive of raw results a report carries. Imports `core`,
`measuring`, `running` and `analysing`; only `publishing.report` imports matplotlib."""
