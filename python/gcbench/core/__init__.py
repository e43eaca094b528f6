"""The foundations every other part stands on: errors, files and folders, paths, the
terminal, the machine's metadata, gcbench's version, and the JSON Schemas of the documents.
Imports nothing of gcbench."""
