"""The keyword index's layout: tables that do not grow with namespaces, same BM25 scores.

Small namespaces share one table and are ranked with their own statistics; a namespace
past `SHARED_MAX` memories gets an FTS5 table of its own. Files written when every
namespace had its own FTS5 table are converted on open.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import Stemmer

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.store._common import namespace_id
from langgraph_tiered_memory.store.tiers import sqlite_keywords
from langgraph_tiered_memory.store.tiers.doc_mirror import (
    FTS_TOKENIZE,
    FTS_WEIGHTS,
    MIRROR_FILE,
    DocMirror,
    MemoryRow,
    fts_table,
)
from langgraph_tiered_memory.store.tiers.sqlite_keywords import KeywordIndex, legacy_fts_table
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

pytestmark = pytest.mark.integration

WORDS = (
    "apple banana cherry harbor volcano recipe garden paris museum river bread dawn"
    " painting summer winter running runner ran jazz concert"
).split()
QUERIES = [
    ["apple"],
    ["apple", "recipe"],
    ["running", "runner", "ran"],  # three phrases, one stem
    ["museum", "paris", "june"],
    ["zebra"],
    ["bread", "dawn", "harbor", "volcano", "jazz"],
]
SIZES = [1, 2, 3, 5, 7, 12]  # memories per namespace; 5 and up pass the limit below
LIMIT = 4


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(sqlite_keywords, "SHARED_MAX", LIMIT)
    yield LIMIT


def _row(text: str, context: str = "", when: str = "") -> MemoryRow:
    return MemoryRow(text, context, when, "fact", 0.5, None, 1.0)


def _fill(mirror: DocMirror, prefix: str, seed: int = 7) -> dict[str, list[str]]:
    """Write namespaces of SIZES memories (context = previous text), delete some."""
    rng = random.Random(seed)
    keys: dict[str, list[str]] = {}
    for n, size in enumerate(SIZES):
        nsid = f"{n:032x}"
        previous = ""
        for i in range(size):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
            when = rng.choice(["", "in june 2023", "last winter"])
            mirror.commit(prefix, nsid, memories={f"k{i}": _row(text, previous, when)})
            previous = text
        keys[nsid] = [f"k{i}" for i in range(size)]
        if size >= 3:  # the successor's context is rewritten from its new predecessor
            mirror.commit(prefix, nsid, deletes=["k1"])
            keys[nsid].remove("k1")
    return keys


def _results(mirror: DocMirror, prefix: str, nsids: Any) -> dict[tuple[str, int], Any]:
    return {
        (nsid, q): mirror.keyword_search(prefix, nsid, QUERIES[q], 10)
        for nsid in nsids
        for q in range(len(QUERIES))
    }


def _tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _reference(
    conn: sqlite3.Connection, table: str, prefix: str, nsid: str, terms: list[str]
) -> list[tuple[str, float]]:
    """BM25 of one namespace as the one-table-per-namespace layout answered it."""
    stems = Stemmer.Stemmer("porter").stemWords(terms)
    conn.execute(
        f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."v_{table}" USING fts5vocab(main, "{table}", row)'
    )
    df = dict(conn.execute(f'SELECT term, doc FROM temp."v_{table}"').fetchall())
    keep = [t for t, st in zip(terms, stems, strict=True) if st in df]  # namespaces < 1000
    if not keep:
        return []
    match = " OR ".join(f'"{t}"' for t in dict.fromkeys(keep))
    weights = ", ".join(map(str, FTS_WEIGHTS))
    rows = conn.execute(
        f'SELECT m.key, -f.score FROM (SELECT rowid, bm25("{table}", {weights}) AS score'
        f' FROM "{table}" WHERE "{table}" MATCH ? ORDER BY score LIMIT 10) AS f'
        " JOIN mem AS m ON m.rid = f.rowid WHERE m.prefix=? AND m.nsid=? ORDER BY f.score",
        (match, prefix, nsid),
    ).fetchall()
    return [(k, float(s)) for k, s in rows]


def _to_old_layout(path: Path, naming: Any = fts_table, vocab: bool = True) -> None:
    """Rewrite a mirror file as the one-FTS5-table-per-namespace layout wrote it."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN")
        rows = conn.execute(
            "SELECT m.prefix, m.nsid, m.rid, k.text, k.context, k.time FROM mem AS m"
            " JOIN kw_docs AS k ON k.rid = m.rid"
        ).fetchall()
        for prefix, nsid, name in conn.execute("SELECT * FROM kw_own").fetchall():
            rows += conn.execute(
                f'SELECT ?, ?, rowid, text, context, time FROM "{name}"', (prefix, nsid)
            ).fetchall()
            conn.execute(f'DROP TABLE "{name}"')
        for table in ("kw_docs", "kw_own", "kw_retired"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DELETE FROM filled WHERE prefix LIKE '%/fts-shared'")
        for prefix, nsid, rid, text, context, when in sorted(rows, key=lambda r: r[2]):
            name = naming(prefix, nsid)
            conn.execute(
                f'CREATE VIRTUAL TABLE IF NOT EXISTS "{name}" USING fts5(text, context, time,'
                f" tokenize='{FTS_TOKENIZE}')"
            )
            if vocab:  # searches made one beside each table
                conn.execute(
                    f'CREATE VIRTUAL TABLE IF NOT EXISTS "{name}_vocab"'
                    f' USING fts5vocab("{name}", row)'
                )
            conn.execute(
                f'INSERT INTO "{name}" (rowid, text, context, time) VALUES (?, ?, ?, ?)',
                (rid, text, context, when),
            )
        conn.execute("COMMIT")


def _old_results(path: Path, prefix: str, nsids: Any, naming: Any = fts_table) -> dict[Any, Any]:
    with closing(sqlite3.connect(path)) as conn:
        return {
            (nsid, q): _reference(conn, naming(prefix, nsid), prefix, nsid, QUERIES[q])
            for nsid in nsids
            for q in range(len(QUERIES))
        }


# ---------------------------------------------------------------------------- layout


def _memory_store(path: Path, prefix: str = "tm") -> TieredMemoryStore:
    store = TieredMemoryStore(
        chroma_path=str(path),
        key_prefix=prefix,
        tiers={"default": "long"},
        clock=Clock(),
        index={"dims": DIMS, "embed": HashingEmbeddings(DIMS), "fields": ["content"]},
    )
    store.setup()
    return store


def test_sqlite_tables_do_not_grow_with_the_number_of_namespaces(tmp_path: Path) -> None:
    store = _memory_store(tmp_path)
    counts = []
    for n in range(40):
        store.put(("memories", f"user-{n}"), "m", {"content": f"apple pie number {n}"})
        if n in (2, 39):
            counts.append(len(_tables(tmp_path / MIRROR_FILE)))
    assert counts[0] == counts[1]
    hits = store.search_memories(("memories", "user-7"), "apple pie", retrieval="keyword")
    assert [h.entry.content for h in hits] == ["apple pie number 7"]
    store.close()


def test_scores_are_those_of_a_table_per_namespace_in_every_layout(
    tmp_path: Path, small_limit: int
) -> None:
    shared = DocMirror(tmp_path / "shared.sqlite3")
    shared._keywords = KeywordIndex(shared._db, shared._memories, shared_max=10**9)
    own = DocMirror(tmp_path / "own.sqlite3")
    own._keywords = KeywordIndex(own._db, own._memories, shared_max=0)
    mixed = DocMirror(tmp_path / "mixed.sqlite3")  # the small limit: some of each
    keys = [_fill(m, "tm") for m in (shared, own, mixed)][0]
    big = {fts_table("tm", nsid) for nsid, k in keys.items() if len(k) > small_limit}
    assert not [t for t in _tables(tmp_path / "shared.sqlite3") if t.startswith("fts_")]
    assert big and big <= _tables(tmp_path / "mixed.sqlite3")
    assert {fts_table("tm", nsid) for nsid in keys} <= _tables(tmp_path / "own.sqlite3")
    expected = _results(own, "tm", keys)
    assert any(expected.values())
    assert _results(shared, "tm", keys) == expected  # exactly: same floats, same order
    assert _results(mixed, "tm", keys) == expected
    # And they are what a table per namespace, ranked by FTS5 itself, answers.
    own.close()
    assert _old_results(tmp_path / "own.sqlite3", "tm", keys) == expected
    for m in (shared, mixed):
        m.close()


def test_a_namespace_moves_to_its_own_table_past_the_limit_with_the_same_scores(
    tmp_path: Path, small_limit: int
) -> None:
    mirror = DocMirror(tmp_path)
    reference = DocMirror(tmp_path / "ref.sqlite3")  # a table of its own from the start
    reference._keywords = KeywordIndex(reference._db, reference._memories, shared_max=0)
    nsid = "ab" * 16
    texts = ["apple pie recipe", "apple orchard", "banana bread", "apple jam", "paris museum"]
    steps: list[dict[str, Any]] = [
        {"memories": {f"k{i}": _row(text, texts[i - 1] if i else "")}}
        for i, text in enumerate(texts)
    ]
    steps += [{"deletes": ["k2"]}, {"deletes": ["k4"]}, {"memories": {"k9": _row("apple")}}]
    for n, step in enumerate(steps):
        for m in (mirror, reference):
            m.commit("tm", nsid, **step)
        assert (fts_table("tm", nsid) in _tables(tmp_path / MIRROR_FILE)) == (n >= small_limit)
        for terms in (["apple", "museum"], ["bread"], ["pie", "orchard", "jam"]):
            got = mirror.keyword_search("tm", nsid, terms, 10)
            assert got == reference.keyword_search("tm", nsid, terms, 10), (n, terms)
        assert mirror.previous_text("tm", nsid, "new") == reference.previous_text("tm", nsid, "new")
    with closing(sqlite3.connect(tmp_path / MIRROR_FILE)) as conn:
        assert conn.execute("SELECT count(*) FROM kw_docs").fetchone() == (0,)
    mirror.close()
    reference.close()


def test_a_search_sees_what_another_connection_wrote(tmp_path: Path) -> None:
    a, b = DocMirror(tmp_path), DocMirror(tmp_path)
    a.commit("tm", "n1", memories={"k0": _row("apple pie"), "k1": _row("banana")})
    assert [k for k, _ in b.keyword_search("tm", "n1", ["apple"], 5)] == ["k0"]
    a.commit("tm", "n1", memories={"k2": _row("apple jam")})
    assert [k for k, _ in b.keyword_search("tm", "n1", ["jam"], 5)] == ["k2"]
    a.commit("tm", "n1", deletes=["k0"])
    assert [k for k, _ in b.keyword_search("tm", "n1", ["apple"], 5)] == ["k2"]
    b.commit("tm", "n1", memories={"k3": _row("apple apple")})
    assert [k for k, _ in b.keyword_search("tm", "n1", ["apple"], 5)] == ["k3", "k2"]
    a.close()
    b.close()


# ---------------------------------------------------------------------------- migration


def test_migration_keeps_every_namespaces_results(tmp_path: Path, small_limit: int) -> None:
    path = tmp_path / MIRROR_FILE
    mirror = DocMirror(tmp_path)
    keys = _fill(mirror, "tm")
    mirror.close()
    _to_old_layout(path)
    assert len([t for t in _tables(path) if t.startswith("fts_")]) > 6 * len(keys)
    expected = _old_results(path, "tm", keys)
    assert any(expected.values())
    mirror = DocMirror(tmp_path)
    mirror.move_legacy_keyword_index("tm")
    assert _results(mirror, "tm", keys) == expected
    big = {nsid for nsid, k in keys.items() if len(k) > small_limit}
    # Only the large namespaces keep a table (their old one); the rest are dropped.
    left = {t for t in _tables(path) if t.startswith("fts_")}
    assert {
        t for t in left if not t.endswith(("_data", "_idx", "_content", "_docsize", "_config"))
    } == {fts_table("tm", nsid) for nsid in big}
    # Writes, deletions (context rewrites) and context lookups work on the moved entries.
    for nsid, ks in keys.items():
        assert mirror.previous_text("tm", nsid, "new") is not None
        mirror.commit("tm", nsid, deletes=[ks[0]], memories={"new": _row("apple zebra")})
        assert mirror.keyword_search("tm", nsid, ["zebra"], 5)[0][0] == "new"
    mirror.move_legacy_keyword_index("tm")  # again: nothing to do
    mirror.close()


def test_a_failed_migration_leaves_the_old_layout_whole(
    tmp_path: Path, small_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / MIRROR_FILE
    mirror = DocMirror(tmp_path)
    keys = _fill(mirror, "tm")
    mirror.close()
    _to_old_layout(path)
    tables = _tables(path)
    expected = _old_results(path, "tm", keys)
    calls = []
    copy = KeywordIndex._copy_entries

    def failing(self: KeywordIndex, *args: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("disk I/O error")
        copy(self, *args)

    monkeypatch.setattr(KeywordIndex, "_copy_entries", failing)
    mirror = DocMirror(tmp_path)
    with pytest.raises(sqlite3.OperationalError):
        mirror.move_legacy_keyword_index("tm")
    mirror.close()
    assert _tables(path) == tables | {"kw_docs", "kw_own", "kw_retired"}
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM kw_docs").fetchone() == (0,)
    assert _old_results(path, "tm", keys) == expected
    monkeypatch.undo()
    monkeypatch.setattr(sqlite_keywords, "SHARED_MAX", LIMIT)
    mirror = DocMirror(tmp_path)
    mirror.move_legacy_keyword_index("tm")
    assert _results(mirror, "tm", keys) == expected
    mirror.close()


def test_old_tables_are_dropped_in_steps_and_never_read_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / MIRROR_FILE
    mirror = DocMirror(tmp_path)
    nsids = [f"{n:032x}" for n in range(80)]
    for nsid in nsids:
        mirror.commit("tm", nsid, memories={"k": _row(f"apple {nsid}")})
    mirror.close()
    _to_old_layout(path, vocab=False)
    expected = _old_results(path, "tm", nsids)
    clock = Clock(0.0)

    def tick() -> float:
        clock.now += 10.0  # every step outlasts the budget
        return clock.now

    mirror = DocMirror(tmp_path, clock=tick)
    mirror.move_legacy_keyword_index("tm")
    left = mirror.drop_retired_keyword_tables(budget=0)
    assert left == 80 - 2 * 32  # one step at open, one more here
    assert _results(mirror, "tm", nsids) == expected
    # A namespace whose old table is still there grows past the limit.
    grown = nsids[-1]
    assert fts_table("tm", grown) in _tables(path)
    mirror._keywords._shared_max = 1
    mirror.commit("tm", grown, memories={"k2": _row("apple banana")})
    assert [k for k, _ in mirror.keyword_search("tm", grown, ["banana"], 5)] == ["k2"]
    assert mirror.drop_retired_keyword_tables() == 0
    assert {t for t in _tables(path) if t.startswith("fts_") and t.count("_") == 2} == {
        fts_table("tm", grown)
    }
    mirror.close()


def test_prefixes_that_shared_a_table_by_case_each_move_their_own_rows(
    tmp_path: Path, small_limit: int
) -> None:
    # Before names were case-safe, "tm" and "TM" wrote into the same FTS5 table.
    path = tmp_path / MIRROR_FILE
    mirror = DocMirror(tmp_path)
    keys = {p: _fill(mirror, p, seed) for p, seed in (("tm", 1), ("TM", 2))}
    mirror.close()
    alone = {}
    for prefix in keys:  # each prefix's scores from a table of its own
        mirror = DocMirror(tmp_path / f"{prefix.encode().hex()}.sqlite3")
        mirror._keywords = KeywordIndex(mirror._db, mirror._memories, shared_max=0)
        _fill(mirror, prefix, 1 if prefix == "tm" else 2)
        alone[prefix] = _results(mirror, prefix, keys[prefix])
        mirror.close()
    _to_old_layout(path, naming=legacy_fts_table)
    with closing(sqlite3.connect(path)) as conn:
        nsid = next(iter(keys["tm"]))
        table = legacy_fts_table("tm", nsid)
        assert conn.execute(f'SELECT count(*) FROM "{table}"').fetchone() == (2,)
    big = {(p, n) for p, ks in keys.items() for n, k in ks.items() if len(k) > small_limit}
    for order in (("tm", "TM"), ("TM", "tm")):
        directory = tmp_path / "".join(order)
        directory.mkdir()
        shutil.copy(path, directory / MIRROR_FILE)
        for prefix in order:
            mirror = DocMirror(directory)
            mirror.move_legacy_keyword_index(prefix)
            mirror.close()
        mirror = DocMirror(directory)
        for prefix in keys:
            assert _results(mirror, prefix, keys[prefix]) == alone[prefix], (order, prefix)
        assert mirror.drop_retired_keyword_tables() == 0
        mirror.close()
        names = {t.lower() for t in _tables(directory / MIRROR_FILE) if t.count("_") == 2}
        assert names == {fts_table(p, n).lower() for p, n in big}, order


def test_a_store_written_in_the_old_layout_searches_the_same_after_opening(
    tmp_path: Path, small_limit: int
) -> None:
    store = _memory_store(tmp_path)
    sizes = {"u1": 2, "u2": 6, "u3": 3}
    for user, size in sizes.items():
        for i in range(size):
            store.put(("memories", user), f"m{i}", {"content": f"{WORDS[i]} {WORDS[i + 3]} {user}"})
    store.delete(("memories", "u2"), "m1")
    store.close()
    _to_old_layout(tmp_path / MIRROR_FILE)
    nsids = {namespace_id(("memories", u)): u for u in sizes}
    terms = [[WORDS[i]] for i in range(8)]
    with closing(sqlite3.connect(tmp_path / MIRROR_FILE)) as conn:
        expected = {
            (u, i): _reference(conn, fts_table("tm", n), "tm", n, t)
            for n, u in nsids.items()
            for i, t in enumerate(terms)
        }
    assert any(expected.values())
    store = _memory_store(tmp_path)
    idx = store.tiers["long"].index  # type: ignore[attr-defined]
    got = {
        (u, i): idx.keyword_search("tm", n, t, 10)
        for n, u in nsids.items()
        for i, t in enumerate(terms)
    }
    assert got == expected
    hits = store.search_memories(("memories", "u2"), WORDS[4], retrieval="keyword")
    assert hits[0].entry.content == f"{WORDS[4]} {WORDS[7]} u2"
    store.close()


def test_a_failed_commit_that_crossed_the_limit_keeps_the_namespace_shared(
    tmp_path: Path, small_limit: int
) -> None:
    mirror = DocMirror(tmp_path)
    nsid = "cd" * 16
    rows = {f"k{i}": _row(f"apple number{i}") for i in range(small_limit)}
    mirror.commit("tm", nsid, memories=rows)
    before = mirror.keyword_search("tm", nsid, ["apple"], 10)
    with pytest.raises(sqlite3.Error):  # the bad expiry fails after the index moved out
        mirror.commit(
            "tm",
            nsid,
            memories={"k9": _row("apple pie")},
            expiries={"k9": object()},  # type: ignore[dict-item]
        )
    assert fts_table("tm", nsid) not in _tables(tmp_path / MIRROR_FILE)
    assert mirror.keyword_search("tm", nsid, ["apple"], 10) == before
    mirror.commit("tm", nsid, memories={"k9": _row("apple pie")})
    assert fts_table("tm", nsid) in _tables(tmp_path / MIRROR_FILE)
    assert [k for k, _ in mirror.keyword_search("tm", nsid, ["pie"], 10)] == ["k9"]
    mirror.close()
