"""The stored item document: one encoder and one decoder for every tier.

A document is a JSON object with short field names, value last:

    {"c": created, "u": updated, "t": ttl minutes or null,
     "n": vectors, "w": write id, "k": key vectors, "value": ...}

`n` and `w` are written by the long-term tier only (how many vectors the write made,
and the id that names them); `k` only when some of those vectors are index keys. The
expiry is not part of the document: each tier keeps it where its TTLs live (Chroma
metadata `_e`, the score of the Redis key set), so refreshing a TTL never rewrites a
document. Documents written before that by the Redis tier also hold `"e"` (their
expiry then, epoch seconds); `decode_document` reads them and ignores that field.

The value arrives already encoded as compact JSON (`ItemWrite.encoded`) and is spliced
in as is, never serialised again.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from langgraph_tiered_memory.store.tiers._items import Namespace, StoredItem, loads


class Document(NamedTuple):
    """A decoded item document."""

    value: Any
    created_at: float
    updated_at: float
    ttl: float | None
    vectors: int = 0
    """How many vectors the write made (long-term tier), 0 when not recorded."""
    write_id: str = ""
    """Id of the write that made the vectors (long-term tier), "" when not recorded."""
    key_vectors: int = 0
    """How many of the vectors (the last ones) are index keys."""

    def item(self, namespace: Namespace, key: str, expires_at: float | None) -> StoredItem:
        """The stored item, with the expiry the tier keeps outside the document."""
        return StoredItem(
            namespace=namespace,
            key=key,
            value=self.value,
            created_at=self.created_at,
            updated_at=self.updated_at,
            ttl=self.ttl,
            expires_at=expires_at,
        )


def _number(x: float) -> str:
    f = float(x)
    if not math.isfinite(f):
        raise ValueError(f"document field must be a finite number, got {x!r}")
    return repr(f)


def encode_document(
    encoded_value: str,
    *,
    created_at: float,
    updated_at: float,
    ttl: float | None,
    vectors: int | None = None,
    write_id: str | None = None,
    key_vectors: int = 0,
) -> str:
    """The document of one item version, as JSON text.

    Args:
        encoded_value: The value as compact JSON (`ItemWrite.encoded`), spliced in as is.
        created_at: First write time (epoch seconds).
        updated_at: This write's time (epoch seconds).
        ttl: TTL in minutes, or None.
        vectors: How many vectors the write made (long-term tier; None: not recorded).
        write_id: Id of the write naming those vectors (with `vectors`).
        key_vectors: How many of them are index keys (written when not 0).
    """
    head = (
        f'{{"c":{_number(created_at)},"u":{_number(updated_at)},'
        f'"t":{"null" if ttl is None else _number(ttl)},'
    )
    if vectors is not None:
        head += f'"n":{int(vectors)},"w":{json.dumps(write_id or "")},'
    if key_vectors:
        head += f'"k":{int(key_vectors)},'
    return f'{head}"value":{encoded_value}}}'


def decode_document(raw: str | bytes) -> Document:
    """Parse a document written by `encode_document` (or by the older Redis format)."""
    doc = loads(raw)
    return Document(
        value=doc["value"],
        created_at=doc["c"],
        updated_at=doc["u"],
        ttl=doc.get("t"),
        vectors=int(doc.get("n", 0)),
        write_id=str(doc.get("w", "")),
        key_vectors=int(doc.get("k", 0)),
    )


_HEAD = re.compile(r'^\{"c":[^,]*,"u":([^,]*),"t":([^,]*),')
"""The head `encode_document` writes: update time and TTL, each as its own text."""
VERSION_PATTERN = '^{"c":[^,]*,"u":([^,]*),"t":([^,]*),'
"""`_HEAD` as a Lua pattern (no escapes needed: Lua's magic characters are absent)."""


def item_version(item: StoredItem) -> tuple[str, str]:
    """What `encode_document` wrote for the item's version: (update time, TTL) texts."""
    return _number(item.updated_at), "null" if item.ttl is None else _number(item.ttl)


def document_version(raw: str | bytes) -> tuple[str, str] | None:
    """(update time, TTL) as written in a document's head; None for an older format."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    found = _HEAD.match(text[:256])
    return None if found is None else (found.group(1), found.group(2))


def same_version(raw: str | bytes, item: StoredItem) -> bool:
    """Whether the document `raw` is still the version `item` was read from.

    A write since the read (another value, another TTL or none) changes the head;
    documents of an older format carry no comparable head and count as the same.
    """
    found = document_version(raw)
    return found is None or found == item_version(item)
