"""Storage tiers: each executes planned operations against one backend."""
