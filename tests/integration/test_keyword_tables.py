"""The keyword index: one FTS5 table for every namespace, each ranked with its own statistics.

Scores must be those of an FTS5 table holding the namespace alone (its `bm25()`), and files
of the earlier layouts (`kw_docs` + own tables, or a table per namespace) convert on open.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import Stemmer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory import TieredMemoryStore
from langgraph_tiered_memory.ranking.bm25 import FTS_WEIGHTS
from langgraph_tiered_memory.ranking.terms import FTS_TOKENIZE
from langgraph_tiered_memory.store.tiers._namespaces import namespace_id
from langgraph_tiered_memory.store.tiers.doc_mirror import MIRROR_FILE, DocMirror, MemoryRow
from tests.conftest import DIMS
from tests.fakes import Clock, HashingEmbeddings

# Stems shared by several words, a word whose PyStemmer stem is empty ("s"), stems
# PyStemmer and FTS5 spell differently ("ies"), folded letters, digits.
WORDS = "apple banana running runner ran runs s ies cafe café paris june 2023 dog dogs trip".split()
NAMESPACES = [(p, f"{n:032x}") for p in ("tm", "TM") for n in range(3)]  # prefixes by case
QUERIES = [["apple"], ["running", "runner", "ran"], ["s", "ies", "dog"], ["café", "2023", "trip"]]

_text = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
_op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), _text, st.sampled_from(["", "june 2023"])),
    st.tuples(st.just("del"), st.integers(0, 5), st.integers(0, 99)),
)


def _row(text: str, context: str = "", when: str = "") -> MemoryRow:
    return MemoryRow(text, context, when, "fact", 0.5, None, 1.0)


def _tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _fts5_alone(entries: Sequence[tuple[str, str, str, str]], terms: list[str]) -> list[Any]:
    """What an FTS5 table of the namespace alone answers (the layout before 9e8229f).

    `entries`: (key, text, context, time) in write order.
    """
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, context, time, tokenize='{FTS_TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, row)")
    db.executemany("INSERT INTO f VALUES (?, ?, ?)", [e[1:] for e in entries])
    df = dict(db.execute("SELECT term, doc FROM v").fetchall())
    stems = Stemmer.Stemmer("porter").stemWords(terms)
    keep = [t for t, s in zip(terms, stems, strict=True) if s in df]  # < 1,000 rows
    if not keep:
        return []
    weights = ", ".join(map(str, FTS_WEIGHTS))
    found = db.execute(
        f"SELECT rowid, -bm25(f, {weights}) FROM f WHERE f MATCH ? ORDER BY bm25(f, {weights})",
        (" OR ".join(f'"{t}"' for t in dict.fromkeys(keep)),),
    ).fetchall()
    return [(entries[r - 1][0], s) for r, s in found]


def _same(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [k for k, _ in got] == [k for k, _ in expected]
    for (_, a), (_, b) in zip(got, expected, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _play(mirror: DocMirror, ops: list[tuple[Any, ...]]) -> dict[Any, list[list[str]]]:
    """Apply `ops`; the entries each namespace should hold: [key, text, context, time]."""
    model: dict[Any, list[list[str]]] = {ns: [] for ns in NAMESPACES}
    for n, op in enumerate(ops):
        ns = NAMESPACES[op[1]]
        held = model[ns]
        if op[0] == "put":
            before = held[-1][1] if held else ""
            held.append([f"k{n}", op[2], before, op[3]])
            mirror.commit(*ns, memories={f"k{n}": _row(op[2], before, op[3])}, docs=False)
        elif held:
            at = op[2] % len(held)
            mirror.commit(*ns, deletes=[held.pop(at)[0]], docs=False)
            if at < len(held) and held[at][2]:  # the successor's context: its new predecessor
                held[at][2] = held[at - 1][1] if at else ""
    return model


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, max_size=40))
def test_every_namespace_of_the_one_table_ranks_as_a_table_of_its_own(
    ops: list[tuple[Any, ...]],
) -> None:
    mirror = DocMirror(":memory:")
    try:
        model = _play(mirror, ops)
        for ns, held in model.items():
            for terms in QUERIES:
                expected = _fts5_alone([tuple(e) for e in held], terms)  # type: ignore[misc]
                for limit in (1, 3, 50):  # a small limit stops fetching common terms early
                    _same(mirror.keyword_search(*ns, terms, limit), expected[:limit])
            assert mirror.previous_text(*ns, "new") == (held[-1][1] if held else None)
            if held:
                assert mirror.previous_text(*ns, held[0][0]) is None
    finally:
        mirror.close()


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


# ---------------------------------------------------------------------------- older layouts


def _to_old_layout(path: Path, own: set[Any], per_namespace: set[str]) -> None:
    """Rewrite a file as 9e8229f kept it, and a prefix as the layout before that.

    Namespaces in `own` get an FTS5 table listed in `kw_own`; the rest of the prefixes
    not in `per_namespace` keep rows in `kw_docs`; those of `per_namespace` each get a
    table named `fts_<prefix>_<nsid>` (not converted by 9e8229f yet). A retired table
    holds a stale copy of every entry, which must not be read.
    """
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN")
        rows = conn.execute(
            "SELECT m.rid, m.prefix, m.nsid, f.text, f.context, f.time FROM mem AS m JOIN kw_ns"
            " AS n ON n.prefix = m.prefix AND n.nsid = m.nsid JOIN kw AS f ON f.rowid ="
            " n.num * 4294967296 + m.seq ORDER BY m.rid"
        ).fetchall()
        conn.execute("DROP TABLE kw")
        conn.execute("DROP TABLE kw_ns")
        conn.execute("DROP TABLE kw_t")
        for sql in (
            "CREATE TABLE kw_docs (rid INTEGER PRIMARY KEY, text, context, time)",
            "CREATE TABLE kw_own (prefix TEXT NOT NULL, nsid TEXT NOT NULL, name TEXT NOT NULL,"
            " PRIMARY KEY (prefix, nsid)) WITHOUT ROWID",
            "CREATE TABLE kw_retired (name TEXT PRIMARY KEY COLLATE NOCASE) WITHOUT ROWID",
        ):
            conn.execute(sql)

        def fts(name: str) -> str:
            conn.execute(
                f'CREATE VIRTUAL TABLE IF NOT EXISTS "{name}" USING fts5(text, context, time,'
                f" tokenize='{FTS_TOKENIZE}')"
            )
            return name

        fts("fts_old_retired")
        conn.execute("INSERT INTO kw_retired VALUES ('fts_old_retired')")
        conn.execute(
            'CREATE VIRTUAL TABLE "fts_old_retired_vocab" USING fts5vocab(fts_old_retired, row)'
        )
        for rid, prefix, nsid, *texts in rows:
            conn.execute(
                "INSERT INTO fts_old_retired (rowid, text, context, time) VALUES (?, ?, ?, ?)",
                (rid, "stale", "stale", "stale"),
            )
            if prefix in per_namespace:
                table = fts(f"fts_{prefix}_{nsid}")
            elif (prefix, nsid) in own:
                table = fts(f"fts_{prefix.replace('T', '-t').replace('M', '-m')}_{nsid}")
                conn.execute("INSERT OR IGNORE INTO kw_own VALUES (?, ?, ?)", (prefix, nsid, table))
            else:
                table = "kw_docs"
            conn.execute(
                f'INSERT INTO "{table}" (rowid, text, context, time) VALUES (?, ?, ?, ?)',
                (rid, *texts),
            )
        conn.execute("COMMIT")


def _answers(mirror: DocMirror) -> dict[Any, Any]:
    return {
        (ns, i): (mirror.keyword_search(*ns, q, 20), mirror.previous_text(*ns, "new"))
        for ns in NAMESPACES
        for i, q in enumerate(QUERIES)
    }


_OPS = [("put", n % 6, f"{WORDS[n % 16]} {WORDS[(3 * n) % 16]} dog", "") for n in range(40)]
_OPS += [("del", 1, 2), ("del", 4, 0)]


@pytest.mark.parametrize("per_namespace", [set(), {"TM"}])
def test_a_file_of_the_earlier_layouts_converts_on_open_with_the_same_answers(
    tmp_path: Path, per_namespace: set[str]
) -> None:
    path = tmp_path / MIRROR_FILE
    mirror = DocMirror(tmp_path)
    _play(mirror, list(_OPS))
    expected = _answers(mirror)
    assert any(hits for hits, _ in expected.values())
    mirror.close()
    _to_old_layout(path, {NAMESPACES[0], NAMESPACES[4]}, per_namespace)
    assert "kw" not in _tables(path)
    mirror = DocMirror(tmp_path)
    assert _answers(mirror) == expected
    assert not {t for t in _tables(path) if t.startswith("fts_") or t in ("kw_docs", "kw_own")}
    ns = NAMESPACES[0]  # writes and deletions (context rewrites) on converted entries
    mirror.commit(*ns, memories={"new": _row("zebra", mirror.previous_text(*ns, "new") or "")})
    assert [k for k, _ in mirror.keyword_search(*ns, ["zebra"], 5)] == ["new"]
    after = _answers(mirror)
    mirror.close()
    mirror = DocMirror(tmp_path)  # opened again: nothing to convert, nothing lost
    assert _answers(mirror) == after
    mirror.close()


def test_a_failed_conversion_leaves_the_old_tables_and_the_next_open_converts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / MIRROR_FILE
    mirror = DocMirror(tmp_path)
    _play(mirror, list(_OPS))
    expected = _answers(mirror)
    mirror.close()
    _to_old_layout(path, {NAMESPACES[2]}, {"TM"})
    tables = _tables(path)
    put = DocMirror._put
    calls = []

    def failing(self: DocMirror, entries: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("disk I/O error")
        put(self, entries)

    monkeypatch.setattr(DocMirror, "_put", failing)
    with pytest.raises(sqlite3.OperationalError):
        DocMirror(tmp_path)
    monkeypatch.undo()
    assert tables <= _tables(path)
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM kw").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM kw_docs").fetchone()[0] > 0
    mirror = DocMirror(tmp_path)
    assert _answers(mirror) == expected
    mirror.close()


def test_a_store_written_in_the_earlier_layout_searches_the_same_after_opening(
    tmp_path: Path,
) -> None:
    store = _memory_store(tmp_path)
    sizes = {"u1": 2, "u2": 6, "u3": 3}
    for user, size in sizes.items():
        for i in range(size):
            store.put(("memories", user), f"m{i}", {"content": f"{WORDS[i]} {WORDS[i + 3]} {user}"})
    store.delete(("memories", "u2"), "m1")
    idx = store.tiers["long"].index  # type: ignore[attr-defined]
    nsids = {namespace_id(("memories", u)): u for u in sizes}
    terms = [[WORDS[i]] for i in range(8)]
    expected = {
        (u, i): idx.keyword_search("tm", n, t, 10)
        for n, u in nsids.items()
        for i, t in enumerate(terms)
    }
    assert any(expected.values())
    store.close()
    _to_old_layout(tmp_path / MIRROR_FILE, {("tm", namespace_id(("memories", "u2")))}, set())
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
