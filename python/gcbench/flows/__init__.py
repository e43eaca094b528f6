"""What each command runs, end to end: `pipeline` (a plan: environments, workers or a
scheduler, summary, report) and the flows built on it, `bisection`, `reproduction` and
`explanation`. Imports `core`, `measuring`, `running`, `analysing` and `publishing`."""
