"""The long-term tier: Chroma, small namespaces in shared buckets, big ones on their own.

Layout, for a store with `key_prefix` P and embedding size D (0 without an index);
`chroma_layout` explains where a namespace lives and how it moves:

- records of a namespace, in its bucket `P-ns-bucket-<D>d-<i>` (ids prefixed with the
  namespace id, metadata `_ns`) or in its own collection `P-ns-<namespace id>`; cosine space,
  vectors of D + 1 dimensions:
  - `p:<key>` is the item's primary record. Its metadata `_d` holds the document
    (value, timestamps, TTL, number of vectors, write id) and `_e` its expiry time
    when it has a TTL. Its embedding is the item's first vector with a trailing 0,
    or `[0, ..., 0, 1]` when the item is not indexed: that vector is orthogonal to
    every query (queries also get a trailing 0), so unindexed items never outrank
    indexed ones.
  - `x:<i>:<write id>:<key>` holds the item's i-th extra vector (several fields or
    list values) of the write that made it.
- the namespace registry: in the tier's index (`Collections.use_index`), beside an
  embedded or in-memory Chroma the table `reg` of its SQLite file (`doc_mirror`),
  with a Chroma server Redis (`RedisIndex.registry`): per namespace its encoded
  labels, its bucket while it has one, a move in progress and its TTL flag. Earlier
  versions kept it in the collection `P-registry`, copied once.

An item's vectors and document are written in one Chroma upsert; vectors left by an
interrupted update carry an older write id and are ignored. Without a Chroma server,
the tier's index `DocMirror` keeps a SQLite copy of the primary records that answers
`get` (in memory with an in-memory Chroma); with an embedded Chroma, `VectorCopy` keeps
a float32 copy of the bucket records that answers exact searches.
`chroma_base` opens the tier and chooses those sources; `chroma_reads` and
`chroma_writes` hold the read and write paths, `long_erase` erasure.
"""

from __future__ import annotations

from langgraph_tiered_memory.store.tiers.chroma_reads import Candidate, ChromaReads
from langgraph_tiered_memory.store.tiers.long_erase import LongErase

__all__ = ["ChromaTier", "Candidate"]


class ChromaTier(ChromaReads, LongErase):
    """Stores namespaces routed to `"long"` in Chroma."""

    name = "long"
