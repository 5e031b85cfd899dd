"""Raw scans for the erase tests: every byte a store, a saver and Chroma keep.

`Needles` are what must not survive an erasure: a user's id and a marker the user
said, each in the encodings a backend may store them in (UTF-8, UTF-16, hex, base64
at all three alignments), matched case-insensitively. Each scan returns `Trace`s
naming the place (Redis key, Chroma collection record, SQLite table row, file
offset) and the bytes around the hit, so a failing assertion says where data
survived:

- `scan_redis`: every key of the server (SCAN), its name and its value read by type
  (strings, hashes, lists, sets, sorted sets, streams, RedisJSON documents), plus
  every RediSearch index (its definition, the values of its TAG fields and a full
  text query for each needle).
- `scan_chroma`: every collection through the Chroma API (name, metadata, ids,
  documents, record metadata), paged.
- `scan_sqlite`: every table of a SQLite file (FTS5 shadow tables included) through
  SQL on a copy, plus the terms of each FTS5 table (`fts5vocab`), which its segment
  blobs store prefix-compressed, beyond a raw byte search.
- `scan_files`: the raw bytes of every file under a directory (SQLite pages, free
  pages and WAL included, HNSW segments, pickles, logs).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import redis

__all__ = [
    "Needles",
    "Trace",
    "scan_chroma",
    "scan_files",
    "scan_redis",
    "scan_sqlite",
    "sqlite_files",
]


@dataclass(frozen=True)
class Trace:
    """One place where a needle survived."""

    where: str
    needle: str
    context: str

    def __str__(self) -> str:
        return f"{self.where}: {self.needle!r} in {self.context!r}"


class Needles:
    """Byte patterns of the strings that must be gone, in every encoding scanned."""

    def __init__(self, **named: str) -> None:
        self.named = {name: value for name, value in named.items()}
        self.patterns: list[tuple[str, bytes]] = []
        for name, value in self.named.items():
            low = value.lower().encode("utf-8")
            self.patterns.append((name, low))
            self.patterns.append((f"{name} (utf-16)", value.lower().encode("utf-16-le")))
            self.patterns.append((f"{name} (hex)", binascii.hexlify(value.encode("utf-8"))))
            escaped = json.dumps(value.lower())[1:-1]  # \u00f1 for ñ, as JSON writers may store it
            for level in range(2):  # JSON text, and JSON text inside a JSON string
                if escaped.encode() != low:
                    self.patterns.append((f"{name} (json-escaped/{level})", escaped.encode()))
                escaped = json.dumps(escaped)[1:-1]
            for shift in range(3):
                core = _b64_core(("\0" * shift + value).encode("utf-8"), shift)
                if len(core) >= 8:
                    self.patterns.append((f"{name} (base64/{shift})", core.lower()))

    def find_bytes(self, data: bytes) -> Iterator[tuple[str, str]]:
        """(needle name, context) of each needle in `data`, case-insensitively."""
        low = data.lower()
        for name, pattern in self.patterns:
            at = low.find(pattern)
            if at >= 0:
                lo, hi = max(0, at - 60), min(len(data), at + len(pattern) + 60)
                yield name, data[lo:hi].decode("utf-8", "replace")

    def find_text(self, value: Any) -> Iterator[tuple[str, str]]:
        """Needles in a value of any type (decoded text, bytes, JSON-ready data)."""
        seen: set[tuple[str, str]] = set()
        for leaf in _leaves(value):
            for hit in self.find_bytes(leaf):
                if hit not in seen:
                    seen.add(hit)
                    yield hit


def _leaves(value: Any) -> Iterator[bytes]:
    """The bytes of every string-like leaf of nested data (dict keys included)."""
    if value is None or isinstance(value, (bool, int, float)):
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        yield bytes(value)
    elif isinstance(value, str):
        yield value.encode("utf-8")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(k)
            yield from _leaves(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _leaves(v)
    else:
        yield str(value).encode("utf-8")


def _b64_core(raw: bytes, shift: int) -> bytes:
    """The base64 characters of `raw[shift:]` that do not depend on neighbouring bytes."""
    enc = base64.b64encode(raw)
    start = (shift * 8 + 5) // 6
    body = raw[shift:]
    end = ((shift + len(body)) * 8) // 6
    return enc[start:end]


def _traces(needles: Needles, where: str, value: Any) -> list[Trace]:
    return [Trace(where, name, ctx) for name, ctx in needles.find_text(value)]


# --------------------------------------------------------------------------- Redis


def scan_redis(url: str, needles: Needles) -> list[Trace]:
    """Every key of the server (name and value) and every RediSearch index."""
    client = redis.Redis.from_url(url)
    found: list[Trace] = []
    try:
        for key in client.scan_iter(count=1000):
            name = key.decode("utf-8", "replace")
            found += _traces(needles, f"redis key name {name}", key)
            try:
                value = _read_key(client, key)
            except redis.ResponseError as e:  # pragma: no cover - a type we cannot read
                found.append(Trace(f"redis key {name}", "unreadable", str(e)))
                continue
            found += _traces(needles, f"redis key {name}", value)
        found += _scan_indexes(client, needles)
    finally:
        client.close()
    return found


def _read_key(client: redis.Redis, key: bytes) -> Any:
    kind = client.type(key).decode()
    if kind == "string":
        return client.get(key)
    if kind == "hash":
        return [b for kv in client.hgetall(key).items() for b in kv]
    if kind == "list":
        return client.lrange(key, 0, -1)
    if kind == "set":
        return list(client.smembers(key))
    if kind == "zset":
        return [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
    if kind == "stream":
        return [(i, list(f.items())) for i, f in client.xrange(key)]
    if kind == "ReJSON-RL":
        return client.execute_command("JSON.GET", key, "$")
    if kind == "none":  # expired between SCAN and TYPE
        return None
    if kind == "graphdata":  # a FalkorDB graph: every node and edge with its properties
        return [
            _flat(client.execute_command("GRAPH.RO_QUERY", key, query))
            for query in (
                "MATCH (n) RETURN labels(n), properties(n)",
                "MATCH ()-[r]->() RETURN type(r), properties(r)",
            )
        ]
    return client.dump(key)


def _scan_indexes(client: redis.Redis, needles: Needles) -> list[Trace]:
    found: list[Trace] = []
    try:
        indexes = client.execute_command("FT._LIST")
    except redis.ResponseError:
        return found
    for raw in indexes:
        index = raw.decode("utf-8", "replace")
        found += _traces(needles, f"redis search index name {index}", raw)
        info = client.execute_command("FT.INFO", raw)
        found += _traces(needles, f"redis search index {index} FT.INFO", _flat(info))
        for field in _tag_fields(info):
            try:
                vals = client.execute_command("FT.TAGVALS", raw, field)
            except redis.ResponseError:
                continue
            found += _traces(needles, f"redis search index {index} TAGVALS {field}", vals)
        for name, value in needles.named.items():
            try:
                hits = client.execute_command(
                    "FT.SEARCH", raw, _escape(value), "LIMIT", "0", "5", "NOCONTENT"
                )
            except redis.ResponseError:
                continue
            total = _total(hits)
            if total:
                found.append(Trace(f"redis search index {index} FT.SEARCH", name, repr(hits)[:300]))
    return found


def _total(hits: Any) -> int:
    """The hit count of an FT.SEARCH answer (a list, or a dict with RESP3 parsing)."""
    if isinstance(hits, dict):
        return int(hits.get("total_results", hits.get(b"total_results", 0)) or 0)
    return int(hits[0]) if hits else 0


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _tag_fields(info: Any) -> list[bytes]:
    """Names of the TAG fields of an FT.INFO answer (a dict or a flat list)."""
    if isinstance(info, dict):
        attrs = info.get(b"attributes", info.get("attributes", []))
        out = []
        for attr in attrs:
            if isinstance(attr, dict):
                kind = attr.get(b"type", attr.get("type"))
                name = attr.get(b"attribute", attr.get("attribute"))
                if kind in (b"TAG", "TAG") and name is not None:
                    out.append(name if isinstance(name, bytes) else str(name).encode())
            else:
                out += _tag_fields(list(attr))
        return out
    items = list(info)
    if b"TAG" in items and b"attribute" in items:  # one attribute as a flat list
        return [items[items.index(b"attribute") + 1]]
    found: list[bytes] = []
    for i in range(0, len(items) - 1, 2):
        if items[i] in (b"attributes", b"fields"):
            for attr in items[i + 1]:
                found += _tag_fields(list(attr))
    return found


def _escape(value: str) -> str:
    return "".join(c if c.isalnum() else f"\\{c}" for c in value)


# --------------------------------------------------------------------------- Chroma


def scan_chroma(client: Any, needles: Needles, page: int = 500) -> list[Trace]:
    """Every collection's name and metadata and every record's id, document, metadata."""
    found: list[Trace] = []
    for col in _collections(client):
        where = f"chroma collection {col.name}"
        found += _traces(needles, where + " (name)", col.name)
        found += _traces(needles, where + " (metadata)", col.metadata)
        offset = 0
        while True:
            got = col.get(include=["documents", "metadatas"], limit=page, offset=offset)
            ids = got["ids"]
            if not ids:
                break
            docs = got.get("documents") or [None] * len(ids)
            metas = got.get("metadatas") or [None] * len(ids)
            for rid, doc, meta in zip(ids, docs, metas, strict=True):
                found += _traces(needles, f"{where} record {rid} (id)", rid)
                found += _traces(needles, f"{where} record {rid} (document)", doc)
                found += _traces(needles, f"{where} record {rid} (metadata)", meta)
            offset += len(ids)
    return found


def _collections(client: Any) -> list[Any]:
    listed = client.list_collections()
    out = []
    for one in listed:
        name = one if isinstance(one, str) else one.name
        out.append(client.get_collection(name))
    return out


def chroma_records(client: Any) -> dict[str, list[str]]:
    """Collection name -> every record id (for counting what an erase removed)."""
    out: dict[str, list[str]] = {}
    for col in _collections(client):
        ids: list[str] = []
        offset = 0
        while True:
            got = col.get(include=[], limit=1000, offset=offset)
            if not got["ids"]:
                break
            ids += got["ids"]
            offset += len(got["ids"])
        out[col.name] = ids
    return out


# --------------------------------------------------------------------------- SQLite


def sqlite_files(root: Path) -> list[Path]:
    """The SQLite database files under `root` (by their header)."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.endswith(("-wal", "-shm", "-journal")):
            with open(path, "rb") as f:
                if f.read(16) == b"SQLite format 3\x00":
                    out.append(path)
    return out


def scan_sqlite(path: Path, needles: Needles) -> list[Trace]:
    """Every row of every table (shadow tables included) and every FTS5 term, via SQL.

    Reads a copy (with its WAL), so the scan never changes the file under test.
    """
    found: list[Trace] = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        for suffix in ("", "-wal"):
            src = Path(str(path) + suffix)
            if src.exists():
                shutil.copyfile(src, Path(str(copy) + suffix))
        conn = sqlite3.connect(copy)
        try:
            conn.text_factory = bytes
            tables = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index', 'view')"
            ).fetchall()
            for name_b, sql in tables:
                name = name_b.decode()
                found += _traces(needles, f"sqlite {path.name} schema {name}", sql)
            for name_b, sql in tables:
                name = name_b.decode()
                if (
                    sql is None
                    or not sql.upper().startswith(b"CREATE TABLE")
                    and (b"VIRTUAL TABLE" not in sql.upper())
                ):
                    continue
                try:
                    rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
                except sqlite3.Error:
                    continue  # e.g. a virtual table whose module is not loaded here
                for i, row in enumerate(rows):
                    for cell in row:
                        for needle, ctx in needles.find_text(cell):
                            found.append(
                                Trace(f"sqlite {path.name} table {name} row {i}", needle, ctx)
                            )
            for name_b, sql in tables:
                if sql and b"USING FTS5" in sql.upper():
                    found += _fts_terms(conn, path.name, name_b.decode(), needles)
        finally:
            conn.close()
    return found


def _fts_terms(conn: sqlite3.Connection, file: str, table: str, needles: Needles) -> list[Trace]:
    vocab = f"temp.v_{abs(hash(table))}"
    try:
        conn.execute(f"CREATE VIRTUAL TABLE {vocab} USING fts5vocab(main, '{table}', 'row')")
        terms = [t for (t,) in conn.execute(f"SELECT term FROM {vocab}")]
    except sqlite3.Error:
        return []
    found = []
    for term in terms:
        for needle, _ in needles.find_text(term):
            found.append(Trace(f"sqlite {file} FTS5 {table} term", needle, term.decode()))
    return found


# --------------------------------------------------------------------------- files


def scan_files(root: Path, needles: Needles, skip: Sequence[str] = ()) -> list[Trace]:
    """The raw bytes of every file under `root` (names too)."""
    found: list[Trace] = []
    for dirpath, _, files in os.walk(root):
        for fname in files:
            path = Path(dirpath) / fname
            rel = str(path.relative_to(root))
            if any(s in rel for s in skip):
                continue
            found += _traces(needles, f"file name {rel}", rel)
            try:
                data = path.read_bytes()
            except OSError:
                continue
            found += [Trace(f"file {rel} (raw bytes)", n, c) for n, c in needles.find_bytes(data)]
    return found


def describe(traces: Iterable[Trace], limit: int = 60) -> str:
    """The traces grouped by place (rows and record ids folded), one place a line.

    Each line: the place, how many hits, which needles, and one example context.
    """
    groups: dict[str, list[Trace]] = {}
    for t in traces:
        place = re.sub(r" row \d+", "", t.where)
        place = re.sub(r" record \S+", " record *", place)
        place = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "*", place)
        groups.setdefault(place, []).append(t)
    lines = []
    for place in sorted(groups):
        hits = groups[place]
        needles = sorted({h.needle for h in hits})
        lines.append(f"{place} x{len(hits)} {needles} e.g. {hits[0].context!r}")
    more = f"\n... and {len(lines) - limit} more places" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


# --------------------------------------------------------------------------- vectors


def chroma_vectors(client: Any, nsids: Sequence[str]) -> set[bytes]:
    """float32 bytes of every Chroma record of the namespaces `nsids` (ids or collection)."""
    out: set[bytes] = set()
    for col in _collections(client):
        own = any(n in col.name for n in nsids)
        offset = 0
        while True:
            got = col.get(include=["embeddings"], limit=500, offset=offset)
            ids = got["ids"]
            if not ids:
                break
            for rid, emb in zip(ids, got["embeddings"], strict=True):
                if own or any(rid.startswith(n) for n in nsids):
                    out.add(np.asarray(emb, dtype="<f4").tobytes())
            offset += len(ids)
    return out


def redis_vectors(url: str, nsids: Sequence[str]) -> set[bytes]:
    """The float32 vectors of the short tier's `:v:` keys of the namespaces `nsids`."""
    client = redis.Redis.from_url(url)
    out: set[bytes] = set()
    try:
        for nsid in nsids:
            for key in client.scan_iter(match=f"*{{{nsid}}}:v:*", count=1000):
                blob = client.get(key)
                if blob and len(blob) % 4 == 0:
                    out.add(blob)
    finally:
        client.close()
    return out


def split_vectors(blobs: Iterable[bytes], dims: int) -> set[bytes]:
    """Each vector of `dims` floats in the blobs (a Redis blob may hold several)."""
    size = dims * 4
    return {b[i : i + size] for b in blobs for i in range(0, len(b) - size + 1, size)}


def scan_vectors(
    vectors: Iterable[bytes], redis_urls: Sequence[str], roots: Sequence[Path]
) -> list[Trace]:
    """Where one of `vectors` (float32 bytes, whole) still appears: Redis values, file bytes.

    Vectors that are all zeros (or nearly: fewer than 4 non-zero floats) are left out:
    they carry no information about a text and match anything blank.
    """
    wanted = [v for v in vectors if np.count_nonzero(np.frombuffer(v, dtype="<f4")) >= 4]
    found: list[Trace] = []
    if not wanted:
        return found
    for url in redis_urls:
        client = redis.Redis.from_url(url)
        try:
            for key in client.scan_iter(count=1000):
                if client.type(key) != b"string":
                    continue
                value = client.get(key) or b""
                for i, v in enumerate(wanted):
                    if v in value:
                        found.append(
                            Trace(f"redis key {key.decode('utf-8', 'replace')}", f"vector {i}", "")
                        )
        finally:
            client.close()
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for fname in files:
                path = Path(dirpath) / fname
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                for i, v in enumerate(wanted):
                    if v in data:
                        rel = path.relative_to(root)
                        found.append(Trace(f"file {rel} (raw bytes)", f"vector {i}", ""))
    return found


def sqlite_vectors(root: Path, nsids: Sequence[str]) -> set[bytes]:
    """The `v` blobs of rows of `nsids` in every SQLite table with `nsid` and `v` columns."""
    out: set[bytes] = set()
    wanted = set(nsids)
    for path in sqlite_files(root):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [
                n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                cols = {c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')}
                if {"nsid", "v"} <= cols:
                    for nsid, v in conn.execute(f'SELECT nsid, v FROM "{table}"'):
                        if nsid in wanted and isinstance(v, bytes):
                            out.add(v)
        finally:
            conn.close()
    return out
