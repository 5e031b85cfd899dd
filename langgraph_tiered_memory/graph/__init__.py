"""The knowledge graph beside the long-term tier: triples, their storage and queries."""
