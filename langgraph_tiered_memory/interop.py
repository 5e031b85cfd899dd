"""Bring an existing LangChain vector store into a memory namespace.

`import_langchain_chroma(store, vectorstore, namespace)` reads a
`langchain_chroma.Chroma` page by page (its ids, documents, metadata and, when they
can be used, its vectors) and writes each document as a long-term memory:

- `content` is the document's text, `memory_type` the type given (default `"fact"`),
  `source` is `"langchain_chroma"`, `chroma_id` the original id and
  `chroma_metadata` the document's metadata;
- the key is the original id when it is a valid store key, else `"lc-"` and a hash
  of the id, so a second run writes the same keys; an id that itself looks like such a
  hash is hashed too, so two ids never share a key (`memory_key`);
- a memory already stored with the same value is not written again (counted as
  `unchanged`), so re-running an import is cheap and changes nothing; in a store with a
  redactor, the incoming value is redacted the store's way before the comparison;
- documents without text are skipped (a memory needs content).

Vectors: Chroma's stored vectors are reused when the store's index has the same
number of dimensions and (with `vectors="auto"`) the store's embedding model gives
the same vector for a sample document, i.e. both were made by the same model.
Otherwise the store embeds the texts itself. Context and sentence keys of memory
ranking are always embedded by the store.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.store.base import GetOp, PutOp

from langgraph_tiered_memory._redis_client import redis_call
from langgraph_tiered_memory.errors import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.privacy.redaction import REDACTIONS_FIELD, redact_value
from langgraph_tiered_memory.store._validate import validate_key, validate_namespace

__all__ = ["ImportCounts", "import_langchain_chroma", "memory_key"]

_log = logging.getLogger("langgraph_tiered_memory.interop")

SOURCE = "langchain_chroma"
SAME_MODEL_COSINE = 0.99
"""Least cosine between a stored and a re-embedded sample vector to reuse vectors."""

VectorPolicy = Literal["auto", "reuse", "reembed"]


@dataclass(frozen=True, slots=True)
class ImportCounts:
    """What an import did.

    Attributes:
        read: Documents read from the vector store.
        written: Memories written (new or changed).
        unchanged: Memories already stored with the same value (not written again).
        skipped: Documents without text (not imported).
        reused_vectors: Whether the vector store's own vectors were used.
    """

    read: int = 0
    written: int = 0
    unchanged: int = 0
    skipped: int = 0
    reused_vectors: bool = False


_HASHED_KEY = re.compile(r"lc-[0-9a-f]{32}")
"""The form of a hashed key (`memory_key`); an id of that form is hashed too."""


def memory_key(chroma_id: str) -> str:
    """The memory key of a Chroma id: the id itself when it can be one, else a stable hash.

    An id that is not a valid store key (over 1,024 bytes, holding a NUL or a surrogate,
    empty) becomes `"lc-"` and 32 hex digits of its SHA-256. So that no id can take the
    key of another, an id that already has that form is hashed as well: distinct ids
    always get distinct keys (short of a SHA-256 collision).

    Example:
        >>> from langgraph_tiered_memory.interop import memory_key
        >>> memory_key("doc-1")
        'doc-1'
        >>> hashed = memory_key("x" * 2000)
        >>> memory_key(hashed) != hashed
        True
    """
    try:
        if (
            chroma_id
            and validate_key(chroma_id) == chroma_id
            and "\x00" not in chroma_id
            and not _HASHED_KEY.fullmatch(chroma_id)
        ):
            return chroma_id
    except InvalidItemError:
        pass  # not a valid key: hashed below
    digest = hashlib.sha256(chroma_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"lc-{digest[:32]}"


def _check_args(
    store: Any, vectorstore: Any, namespace: tuple[str, ...], batch_size: int, memory_type: str
) -> None:
    from langchain_chroma import Chroma

    if not isinstance(vectorstore, Chroma):
        raise TypeError(
            f"import_langchain_chroma reads a langchain_chroma.Chroma, got"
            f" {type(vectorstore).__name__}."
        )
    if not callable(getattr(store, "tier_for", None)) or not callable(
        getattr(store, "batch", None)
    ):
        raise TypeError(
            f"import_langchain_chroma writes to a TieredMemoryStore or"
            f" AsyncTieredMemoryStore, got {type(store).__name__}."
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
    validate_namespace(namespace)
    if store.tier_for(namespace) != "long":
        raise ConfigurationError(
            f"Namespace {namespace} is routed to the short-term tier; imported memories"
            " belong on the long-term tier. Pick another namespace or route it with tiers=."
        )
    MemoryEntry(id="probe", content="probe", memory_type=memory_type)  # InvalidItemError


def _as_stored(store: Any, value: dict[str, Any]) -> dict[str, Any]:
    """`value` as the store keeps it: redacted, with its `redactions` counts, if it redacts.

    What an import compares with the stored value, so that a re-run into a redacting
    store finds its documents unchanged rather than rewriting every one with personal
    data in it.
    """
    if store.redactor is None:
        return value
    redacted, counts = redact_value(value, store.redactor)
    if counts:
        redacted[REDACTIONS_FIELD] = counts
    return redacted


def _text_of(value: Mapping[str, Any]) -> str:
    """The text an imported memory is embedded from."""
    return str(value["content"])


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _as_vectors(raw: Any, n: int) -> list[list[float]] | None:
    """Chroma's page embeddings as lists, or None when it returned none."""
    if raw is None or len(raw) != n:
        return None
    return [[float(x) for x in v] for v in raw]


def _reuse_decision(
    store: Any, policy: VectorPolicy, text: str, vector: Sequence[float] | None
) -> bool:
    """Whether Chroma's vectors can stand in for the store's own embeddings."""
    embeddings = getattr(store, "embeddings", None)
    if policy == "reembed" or embeddings is None:
        return False
    if vector is None:
        if policy == "reuse":
            raise ConfigurationError("vectors='reuse', but the Chroma collection has no vectors.")
        return False
    if len(vector) != store.dims:
        if policy == "reuse":
            raise ConfigurationError(
                f"vectors='reuse', but the collection's vectors have {len(vector)} dimensions"
                f" and the store's index has {store.dims}."
            )
        _log.info(
            "re-embedding: Chroma vectors have %d dims, the store's index %d",
            len(vector),
            store.dims,
        )
        return False
    if policy == "reuse":
        return True
    own = embeddings.embed_documents([text])[0]
    similarity = _cosine(own, vector)
    if similarity < SAME_MODEL_COSINE:
        _log.info(
            "re-embedding: the store's model gives a different vector for a sample"
            " document (cosine %.3f), so the collection used another model",
            similarity,
        )
        return False
    return True


def _put_with_vectors(store: Any, ops: list[PutOp], known: Mapping[str, Sequence[float]]) -> None:
    """Write `ops` like `store.batch`, taking the vectors of known texts from `known`.

    The store's own write path (plan, checks, graph triples, memory keys, execute);
    only the embedding step looks texts up before calling the model.
    """
    with redis_call():
        plan = store._plan(ops)
        store._prepare(plan, store._graph_jobs(plan, None, None))
        missing = [t for t in dict.fromkeys(plan.texts) if t not in known]
        embedded = store.embeddings.embed_documents(missing) if missing else []
        store._check_vectors(embedded, "imported documents", count=len(missing))
        fresh = dict(zip(missing, embedded, strict=True))
        vectors = [known[t] if t in known else fresh[t] for t in plan.texts]
        store._execute(plan, vectors, {})  # checks every vector before the first write


def import_langchain_chroma(
    store: Any,
    vectorstore: Any,
    namespace: Sequence[str],
    *,
    batch_size: int = 500,
    memory_type: str = "fact",
    vectors: VectorPolicy = "auto",
    progress: Callable[[int, int], None] | None = None,
) -> ImportCounts:
    """Import every document of a `langchain_chroma.Chroma` into `namespace` as memories.

    Call it outside a running event loop (it uses the store's synchronous API; with
    an `AsyncTieredMemoryStore`, from a worker thread).

    Args:
        store: A `TieredMemoryStore` or `AsyncTieredMemoryStore`.
        vectorstore: The `langchain_chroma.Chroma` to read (it is not changed).
        namespace: The memory namespace, routed to the long-term tier.
        batch_size: Documents per page read and per store batch.
        memory_type: The imported memories' type (`"fact"`, `"experience"`, ...).
        vectors: `"auto"` reuses the collection's vectors when the store's model makes
            the same ones, `"reuse"` always (dimensions must match), `"reembed"` never.
        progress: Called after each page with (documents read, documents in total).

    Returns:
        `ImportCounts` with the documents read, written, unchanged and skipped.

    Raises:
        TypeError: `vectorstore` is not a `Chroma` or `store` not a tiered store.
        ValueError: `batch_size` is not a positive integer.
        ConfigurationError: the namespace is on the short-term tier, or `vectors=
            "reuse"` and the vectors cannot be used.
        InvalidItemError: `memory_type` is not a valid memory type.

    Example:
        ```python
        import tempfile

        from langchain_chroma import Chroma

        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.embeddings import LocalE5Embeddings
        from langgraph_tiered_memory.interop import import_langchain_chroma

        model = LocalE5Embeddings()
        folder = tempfile.TemporaryDirectory()  # your own directories in an application
        knowledge = Chroma(
            collection_name="docs",
            embedding_function=model,
            persist_directory=f"{folder.name}/lc",
        )
        knowledge.add_texts(["Our office is in Lisbon."], ids=["office"])
        with TieredMemoryStore.from_conn_string(
            chroma_path=f"{folder.name}/store",
            tiers={"default": "long"},
            index={"dims": 384, "embed": model, "fields": ["content"]},
        ) as store:
            counts = import_langchain_chroma(store, knowledge, ("knowledge",))
            assert counts.read == 1 and counts.reused_vectors  # same model: no re-embedding
            assert store.get(("knowledge",), "office").value["content"].endswith("Lisbon.")
        folder.cleanup()
        ```
    """
    if vectors not in ("auto", "reuse", "reembed"):
        raise ValueError(f"vectors must be 'auto', 'reuse' or 'reembed', got {vectors!r}.")
    target = tuple(namespace)
    _check_args(store, vectorstore, target, batch_size, memory_type)
    total = int(vectorstore._collection.count())
    include = ["documents", "metadatas"]
    if vectors != "reembed" and getattr(store, "embeddings", None) is not None:
        include.append("embeddings")
    read = written = unchanged = skipped = 0
    reuse: bool | None = None
    offset = 0
    while True:
        page = vectorstore.get(limit=batch_size, offset=offset, include=include)
        ids: list[str] = list(page.get("ids") or [])
        if not ids:
            break
        offset += len(ids)
        read += len(ids)
        texts = list(page.get("documents") or [None] * len(ids))
        metas = list(page.get("metadatas") or [None] * len(ids))
        page_vectors = _as_vectors(page.get("embeddings"), len(ids))
        wanted: dict[str, tuple[dict[str, Any], Sequence[float] | None]] = {}
        for i, chroma_id in enumerate(ids):
            text = texts[i]
            if not isinstance(text, str) or not text.strip():
                skipped += 1
                continue
            value: dict[str, Any] = {
                "content": text,
                "memory_type": memory_type,
                "source": SOURCE,
                "chroma_id": chroma_id,
                "chroma_metadata": dict(metas[i] or {}),
            }
            stored_vector = page_vectors[i] if page_vectors is not None else None
            wanted[memory_key(chroma_id)] = (value, stored_vector)
        if wanted and reuse is None:
            first_value, first_vector = next(iter(wanted.values()))
            reuse = _reuse_decision(store, vectors, first_value["content"], first_vector)
        keys = list(wanted)
        stored = store.batch([GetOp(target, key, refresh_ttl=False) for key in keys])
        ops: list[PutOp] = []
        known: dict[str, Sequence[float]] = {}
        for key, item in zip(keys, stored, strict=True):
            value, vector = wanted[key]
            if item is not None and item.value == _as_stored(store, value):
                unchanged += 1
                continue
            ops.append(PutOp(target, key, value))
            if vector is not None:
                known[_text_of(value)] = vector
        if ops:
            if reuse and known:
                _put_with_vectors(store, ops, known)
            else:
                store.batch(ops)
            written += len(ops)
        _log.debug("imported %d of %d documents into %s", read, total, target)
        if progress is not None:
            progress(read, max(total, read))
        if len(ids) < batch_size:
            break
    return ImportCounts(read, written, unchanged, skipped, bool(reuse))
