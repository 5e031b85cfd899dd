"""The offline demo of `tiered-memory demo` and the Studio graphs: its model, run and views."""
