"""The `tiered-memory` command line: `app` wires the commands, one module per command."""
