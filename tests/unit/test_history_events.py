"""Planning memory history events, and the `m_history` table on its own (no store)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy.erasure import id_hash, subject_hash
from langgraph_tiered_memory.privacy.history import acting, content_hash
from langgraph_tiered_memory.store._history import check_history
from langgraph_tiered_memory.store.tiers._history_events import (
    RECOVERED,
    as_event,
    history_content,
    plan_events,
    reasons_for,
    recovered_events,
)
from langgraph_tiered_memory.store.tiers.sqlite_db import SqliteFile
from langgraph_tiered_memory.store.tiers.sqlite_history import (
    TOMBSTONE,
    HistoryRow,
    HistoryTable,
    Selection,
)

NS = ("users", "u1")


def _kinds(rows: list[HistoryRow]) -> dict[str, tuple[str, str | None, str | None]]:
    return {r.key: (r.event, r.actor, r.reason) for r in rows}


def test_plain_writes_are_add_update_and_deleted_by_the_user() -> None:
    rows = plan_events(
        NS,
        [("new", {"content": "likes tea"}), ("old", {"content": "likes green tea"})],
        {"old": {"content": "likes tea"}, "gone": {"content": "lives in Oslo"}},
        ["gone", "never-stored"],
        100.0,
    )
    assert _kinds(rows) == {
        "new": ("add", "user", None),
        "old": ("update", "user", None),
        "gone": ("deleted", "user", None),
    }
    by_key = {r.key: r for r in rows}
    assert by_key["new"].previous_hash is None
    assert by_key["new"].content_hash == content_hash("likes tea")
    assert by_key["old"].previous_hash == content_hash("likes tea")
    assert by_key["old"].content == "likes green tea"
    assert by_key["gone"].previous_hash == content_hash("lives in Oslo")
    assert by_key["gone"].content_hash is None and by_key["gone"].content is None
    assert {r.at for r in rows} == {100.0}


def test_the_actor_context_refines_the_kind_and_gives_reasons() -> None:
    previous = {"a": {"content": "x"}, "b": {"content": "y"}}
    with acting("forgetting"), reasons_for({(NS, "a"): "importance 0.01 below 0.05"}):
        rows = plan_events(NS, (), previous, ["a", "b"], 1.0)
    assert _kinds(rows) == {
        "a": ("forgotten", "forgetting", "importance 0.01 below 0.05"),
        "b": ("forgotten", "forgetting", None),
    }
    with acting("consolidation", "merge"):
        rows = plan_events(NS, [("m", {"content": "x and y"})], previous, ["a"], 1.0)
    assert _kinds(rows) == {
        "m": ("merged", "consolidation", "merge"),
        "a": ("merged", "consolidation", "merge"),
    }
    with acting("tool", "manage_memory tool"), as_event("reinforced"):
        (row,) = plan_events(NS, [("a", {"content": "x", "importance": 0.9})], previous, (), 1.0)
    assert (row.event, row.actor, row.reason) == ("reinforced", "tool", "manage_memory tool")
    assert row.previous_hash == row.content_hash  # the content did not change


def test_expired_events_are_the_systems_unless_an_actor_is_set() -> None:
    previous = {"t": {"content": "short-lived"}}
    (row,) = plan_events(NS, (), previous, ["t"], 5.0, event="expired")
    assert (row.event, row.actor, row.reason) == ("expired", "system", "ttl expired")
    with acting("forgetting", "ttl expired"):
        (row,) = plan_events(NS, (), previous, ["t"], 5.0, event="expired")
    assert (row.event, row.actor) == ("expired", "forgetting")


def test_content_is_the_content_string_else_the_value_as_json() -> None:
    assert history_content({"content": "hi", "importance": 0.3}) == "hi"
    value = {"b": 1, "a": "ü"}
    assert json.loads(history_content(value)) == value
    assert history_content(value) == history_content({"a": "ü", "b": 1})  # key order


@pytest.mark.parametrize("bad", [None, "yes", 1])
def test_the_history_option_must_be_a_bool(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="history must be True"):
        check_history(bad)


def _hashed(ns: tuple[str, ...], key: str) -> str:
    return id_hash(*ns, key)


def _row(key: str, at: float, content: str | None) -> HistoryRow:
    return HistoryRow(key, at, "add", "user", "why", None, content_hash(content), content)


def test_table_numbers_events_per_key_and_tombstones_them_content_free() -> None:
    db = SqliteFile(":memory:")
    table = HistoryTable(db)
    other = ("users", "u2")
    with db.transaction():
        table.append("p", "n1", NS, [_row("k", 1.0, "one"), _row("j", 1.0, "jay")])
        table.append("p", "n2", other, [_row("k", 1.0, "other user's")])
    with db.transaction():
        table.append("p", "n1", NS, [_row("k", 2.0, "two")])
    assert [(e.seq, e.content) for e in table.events("p", "n1", "k", id_hash(*NS, "k"))] == [
        (1, "one"),
        (2, "two"),
    ]
    assert table.namespaces("p") == [NS, other]

    assert table.tombstone("p", Selection(["n1"]), _hashed, dry_run=True) == [
        (NS, "k"),
        (NS, "j"),
        (NS, "k"),
    ]
    assert [e.content for e in table.events("p", "n1", "k", id_hash(*NS, "k"))] == ["one", "two"]

    assert sorted(table.tombstone("p", Selection(["n1"]), _hashed)) == [
        (NS, "j"),
        (NS, "k"),
        (NS, "k"),
    ]
    assert table.tombstone("p", Selection(["n1"]), _hashed) == []  # a rerun finds nothing
    rows = db.conn.execute(
        "SELECT nsid, ns, key, event, actor, reason, previous_hash, content_hash, content,"
        " subjects FROM m_history WHERE nsid=?",
        (TOMBSTONE,),
    ).fetchall()
    assert len(rows) == 3
    for nsid, ns, key, event, *rest in rows:
        assert (nsid, ns, event) == (TOMBSTONE, None, "erased")
        assert key in (id_hash(*NS, "k"), id_hash(*NS, "j"))
        assert rest == [None] * 6
    events = table.events("p", "n1", "k", id_hash(*NS, "k"))
    assert [(e.seq, e.at, e.event, e.namespace) for e in events] == [
        (1, 1.0, "erased", None),
        (2, 2.0, "erased", None),
    ]
    assert [e.content for e in table.events("p", "n2", "k", id_hash(*other, "k"))] == [
        "other user's"
    ]
    assert table.namespaces("p") == [other]
    db.close()


def test_selection_by_single_memory_and_by_provenance_subject() -> None:
    db = SqliteFile(":memory:")
    table = HistoryTable(db)
    shared = ("team",)
    with db.transaction():
        table.append(
            "p",
            "t",
            shared,
            [
                _row("a", 1.0, "a"),
                _row("b", 1.0, "b")._replace(subjects="h-user h-session"),
                _row("c", 1.0, "c"),
            ],
        )
        table.append("p", "t", shared, [_row("b", 2.0, None)._replace(event="deleted")])
    picked = table.select("p", Selection(pairs=[("t", "c")], subjects=["h-session"]))
    assert [(e.key, e.seq) for e in picked] == [("b", 1), ("b", 2), ("c", 1)]
    assert table.select("p", Selection(subjects=["h-nobody"])) == []
    done = table.tombstone("p", Selection(subjects=["h-user"]), _hashed)
    assert done == [(shared, "b"), (shared, "b")]
    assert [e.key for e in table.select("p", Selection(["t"]))] == ["a", "c"]
    db.close()


def test_events_name_the_users_and_sessions_of_their_values_provenance() -> None:
    value = {"content": "x", "provenance": {"user_ids": ["u1"], "session_ids": ["s1"]}}
    (add,) = plan_events(("team",), [("k", value)], {}, (), 1.0)
    assert add.subjects == f"{subject_hash('u1')} {id_hash('session', 's1')}"
    (gone,) = plan_events(("team",), (), {"k": {"content": "x", "user_id": "u2"}}, ["k"], 2.0)
    assert gone.subjects == subject_hash("u2")
    (plain,) = plan_events(("team",), [("k", {"content": "x"})], {}, (), 1.0)
    assert plain.subjects is None


class _Doc(NamedTuple):
    value: dict[str, Any]
    updated_at: float
    write_id: str


def test_recovered_events_without_a_document_copy_use_the_last_event() -> None:
    current = {"new": _Doc({"content": "n"}, 7.0, "w1"), "same": _Doc({"content": "s"}, 7.0, "w2")}
    current["changed"] = _Doc({"content": "c2"}, 7.0, "w3")
    last = {
        "same": ("add", content_hash("s")),
        "changed": ("update", content_hash("c1")),
        "gone": ("add", content_hash("g")),
        "gone-before": ("deleted", None),
    }
    keys = ["new", "same", "changed", "gone", "gone-before", "never"]
    rows = recovered_events(NS, keys, current, {}, last, now=9.0)
    assert [(r.key, r.event, r.at, r.previous_hash, r.content_hash) for r in rows] == [
        ("new", "add", 7.0, None, content_hash("n")),
        ("changed", "update", 7.0, content_hash("c1"), content_hash("c2")),
        ("gone", "deleted", 9.0, content_hash("g"), None),
    ]
    assert {(r.actor, r.reason) for r in rows} == {("system", RECOVERED)}


def test_recovered_events_skip_writes_chroma_never_took() -> None:
    doc = _Doc({"content": "x"}, 1.0, "w1")
    assert recovered_events(NS, ["k"], {"k": doc}, {"k": doc}, {}, now=2.0) == []
    newer = doc._replace(write_id="w2", updated_at=2.0)
    (row,) = recovered_events(NS, ["k"], {"k": newer}, {"k": doc}, {}, now=3.0)
    assert (row.event, row.previous_hash, row.at) == ("update", content_hash("x"), 2.0)
