"""Pure helpers shared by the store and its tiers: validation, filters, namespaces.

Nothing here does I/O. The store plans a batch with these helpers before it touches
Redis or Chroma, so a bad op fails the batch before anything is written.

This module only re-exports; each job has its own module:

- `_items`: the records (`Namespace`, `StoredItem`, `ItemWrite`) and stored JSON (`loads`);
- `_validate`: checking namespaces, keys, values, TTLs and search text, encoding values;
- `_filters`: checking search filters and matching values against them;
- `_namespaces`: namespace ids and encoding, `list_namespaces` matching;
- `_vectors`: cosine similarity and the order of scored hits.
"""

from langgraph_tiered_memory.store._filters import (
    FILTER_OPERATORS,
    matches_filter,
    validate_filter,
)
from langgraph_tiered_memory.store._items import (
    ItemWrite,
    Namespace,
    StoredItem,
    loads,
    to_datetime,
)
from langgraph_tiered_memory.store._namespaces import (
    decode_namespace,
    encode_namespace,
    has_prefix,
    literal_prefix,
    namespace_id,
    select_namespaces,
)
from langgraph_tiered_memory.store._validate import (
    MAX_KEY_BYTES,
    MAX_LABEL_BYTES,
    MAX_VALUE_DEPTH,
    SURROGATE_FIX,
    check_labels,
    check_search_text,
    check_value,
    encode_value,
    find_bad_text,
    validate_key,
    validate_namespace,
    validate_ttl,
)
from langgraph_tiered_memory.store._vectors import cosine_similarities, rank_key

__all__ = [
    "FILTER_OPERATORS",
    "MAX_KEY_BYTES",
    "MAX_LABEL_BYTES",
    "MAX_VALUE_DEPTH",
    "SURROGATE_FIX",
    "ItemWrite",
    "Namespace",
    "StoredItem",
    "check_labels",
    "check_search_text",
    "check_value",
    "cosine_similarities",
    "decode_namespace",
    "encode_namespace",
    "encode_value",
    "find_bad_text",
    "has_prefix",
    "literal_prefix",
    "loads",
    "matches_filter",
    "namespace_id",
    "rank_key",
    "select_namespaces",
    "to_datetime",
    "validate_filter",
    "validate_key",
    "validate_namespace",
    "validate_ttl",
]
