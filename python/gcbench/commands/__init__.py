"""One module per `gcbench` command: `register(sub)` adds its parser and sets `main`."""
