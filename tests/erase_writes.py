"""Write one user's data through every public path (for the raw-scan erase tests).

`write_user` drives the store, the session saver, the memory agent (fake model,
tools, summarizer, extraction, profile; one agent writing to a shared namespace), the
memory tools in a shared namespace, promotion, consolidation, reinforcement,
forgetting, deletes, the knowledge graph, TTL items, namespaces holding only items
about to expire, and a namespace big enough for its own Chroma collection and FTS5
table. Every text the
user says carries the user's `marker`; some thread ids carry the user id, as apps
often make them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langgraph_tiered_memory import SummarizationNode, TieredMemoryStore, create_memory_agent
from langgraph_tiered_memory.agent.builder import MemoryWriter
from langgraph_tiered_memory.agent.profile import aget_user_profile, get_user_profile
from langgraph_tiered_memory.agent.tools import create_manage_memory_tool, create_search_memory_tool
from langgraph_tiered_memory.store.maintenance import (
    aconsolidate,
    apromote,
    consolidate,
    garbage_collect,
    promote,
)
from tests.fake_models import RecordingChatModel

SHARED_NS = ("shared", "kb")
"""A namespace without a user scope that several users write to (through tools)."""

TEAM_NS = ("team", "kb")
"""A shared namespace the memory agent itself writes to (turns, extracted facts)."""

EXTRA_TEMPLATES = [("notes", "{user_id}")]
"""The app's own per-user layout, passed to `erase_user(namespaces=...)`."""

EXPIRED_AFTER = 120.0
"""Seconds after which the `ttl=1` (minute) items of `write_user` have expired."""


def random_word(prefix: str) -> str:
    """A word no other test writes: letters only, so every tokenizer keeps it whole."""
    letters = "".join(chr(ord("a") + b % 26) for b in uuid.uuid4().bytes[:10])
    return prefix + letters


@dataclass
class Person:
    """A user of the test: their id, their marker, and what the writes produced."""

    uid: str
    marker: str
    threads: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    """Texts of memories deleted before the erase (deleted, merged away, forgotten)."""

    @property
    def name(self) -> str:
        """The marker as a capitalised name (what the graph extractor sees as an entity)."""
        return self.marker.capitalize()

    @classmethod
    def new(cls, tag: str, *, plain: bool = False) -> Person:
        """A new person; unless `plain`, the id has a non-ASCII letter and glob/query
        metacharacters (a valid label), which erase must match literally (the scans
        look for its escaped forms too). A plain id is what query engines index as is."""
        uid = random_word(f"uid{tag}") if plain else f"uid{tag}-ñ[{random_word('')}]?"
        return cls(uid=uid, marker=random_word(f"mk{tag}"))


def _tool_call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _agent_model(p: Person) -> RecordingChatModel:
    return RecordingChatModel(
        replies=[
            _tool_call(
                "manage_memory",
                "c1",
                content=f"{p.name} is the name of my cat",
                memory_type="fact",
            ),
            _tool_call(
                "manage_shared",
                "c2",
                content=f"Team tip from a user: the {p.name} recipe needs saffron",
                memory_type="fact",
            ),
            f"Noted: {p.name} the cat. Anything else?",
            f"Sure, {p.name} again.",
        ]
    )


def write_user(
    store: TieredMemoryStore,
    saver: Any,
    p: Person,
    *,
    big: bool = True,
) -> None:
    """Write `p`'s data through every public path (see the module docstring)."""
    uid, m, name = p.uid, p.marker, p.name
    mem = ("memories", uid)
    notes = ("users", uid, "notes")
    short = ("short_term", uid, "scratch")

    # store put, both tiers; TTL items on both tiers
    store.put(short, "s1", {"content": f"I keep my {m} notebook in the car", "importance": 0.9})
    store.put(short, "s2", {"content": f"temporary {m} reminder"}, ttl=30)
    store.put(notes, "n1", {"content": f"{uid} wrote this note about {m}", "owner": uid})
    store.put(notes, "n2", {"content": f"expiring {m} note"}, ttl=30)
    store.put(notes, f"{uid}-prefs", {"content": "keyed by the user id, no words of theirs"})
    # a user scope deeper in the namespace, and an app layout of its own (EXTRA_TEMPLATES)
    store.put(("orgs", "acme", "users", uid, "notes"), "o1", {"content": f"org note on {m}"})
    store.put(("notes", uid), "x1", {"content": f"app-layout note on {m}"})
    store.put(short, f"{uid}-draft", {"content": "a draft keyed by the user id"})
    # a shared namespace written directly, with the provenance field the app sets
    store.put(SHARED_NS, f"tip-{uid}", {"content": f"Shared tip about {m} soup", "user_id": uid})
    store.put(
        mem, "sister", {"content": f"My sister {name} lives in Porto.", "memory_type": "fact"}
    )
    store.put(mem, "doomed", {"content": f"Deleted later: {m} secret"})
    store.delete(mem, "doomed")  # history keeps a deleted memory's event
    store.put(mem, "dup1", {"content": f"I drink {m} tea every morning."})
    store.put(mem, "dup2", {"content": f"I drink {m} tea every morning!"})
    p.gone += [
        f"Deleted later: {m} secret",
        f"I drink {m} tea every morning.",
        f"I drink {m} tea every morning!",
        f"barely important {m} detail",
    ]
    store.update_importance(mem, "sister", 0.2)  # reinforcement
    consolidate(store, mem, threshold=0.8)  # merged memory, consolidated_from

    # forgetting: a namespace whose only memory is forgotten (its history remains)
    faint = ("users", uid, "faint")
    store.put(faint, "f1", {"content": f"barely important {m} detail", "importance": 0.05})
    forgotten = garbage_collect(store, faint, dry_run=False, policy={"min_importance": 0.1})
    assert forgotten["forgotten_count"] == 1, forgotten

    # promotion short -> long (("users", uid, "memories", "scratch"))
    promote(store, ("short_term", uid))

    # the memory agent: tools, summarizer into the session registry, extraction, profile
    tools = [
        create_manage_memory_tool(),
        create_manage_memory_tool(namespace=SHARED_NS, name="manage_shared"),
        create_search_memory_tool(),
    ]
    agent = create_memory_agent(
        _agent_model(p),
        tools=tools,
        summarize=SummarizationNode(max_messages=3, keep_last=1, sessions=saver),
        writer=MemoryWriter(retry_wait=0.0),
    ).compile(store=store, checkpointer=saver)
    t1, t2 = f"{uid}-monday", uuid.uuid4().hex
    p.threads += [t1, t2]
    agent.invoke(
        {"messages": f"Please remember: I love {m} tea and I live in Lisbon."},
        {"configurable": {"user_id": uid, "thread_id": t1}},
    )
    agent.invoke(
        {"messages": f"My brother {name} works at Acme. Remember that, it is important."},
        {"configurable": {"user_id": uid, "thread_id": t1}},
    )
    agent.invoke(
        {"messages": f"What do you know about {name}?"},
        {"configurable": {"user_id": uid, "thread_id": t2}},
    )
    saver.set_summary(t2, f"The user {uid} asked about {m}.")

    # the memory tools alone (a ToolNode graph), into the shared namespace
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "tools")
    tool_graph = builder.compile(store=store)
    for i in range(2):
        tool_graph.invoke(
            {
                "messages": [
                    _tool_call(
                        "manage_shared",
                        f"s{i}",
                        content=f"Shared fact: {name} grows basil on the balcony{'!' * i}",
                    )
                ]
            },
            {"configurable": {"user_id": uid, "thread_id": uuid.uuid4().hex}},
        )
    consolidate(store, SHARED_NS, threshold=0.8, originals="downweight")

    write_team(store, saver, p)

    # namespaces holding only items that will have expired when the test erases
    store.put(("users", uid, "ephemeral"), "e1", {"content": f"ephemeral {m}"}, ttl=1)
    store.put(("short_term", uid, "ephemeral"), "e1", {"content": f"ephemeral {m}"}, ttl=1)

    # the profile (cached under ("profiles", uid))
    get_user_profile(store, uid, refresh=True)

    if big:
        write_big_namespace(store, p)


def write_team(store: TieredMemoryStore, saver: Any, p: Person) -> None:
    """A turn of the memory agent whose memories go to the shared `TEAM_NS`.

    Its turn memory carries the thread id, its extracted facts the provenance; with a
    graph, the facts get triples in the shared namespace. An agent of another user
    run after it retrieves them.
    """
    uid, m, name = p.uid, p.marker, p.name
    team = create_memory_agent(
        RecordingChatModel(replies=[f"Noted for the team: {name}."]),
        namespace=TEAM_NS,
        profile=False,
        writer=MemoryWriter(retry_wait=0.0),
    ).compile(store=store, checkpointer=saver)
    thread = uuid.uuid4().hex
    p.threads.append(thread)
    team.invoke(
        {"messages": f"I love {m} cake. Please remember that for the team."},
        {"configurable": {"user_id": uid, "thread_id": thread}},
    )


def write_big_namespace(store: TieredMemoryStore, p: Person, n: int = 5) -> None:
    """A namespace past the limit: its own Chroma collection."""
    layout = store.tiers["long"]._layout  # type: ignore[attr-defined]
    old_graduate = layout.graduate_at
    layout.graduate_at = 3
    try:
        ns = ("users", p.uid, "big")
        for i in range(n):
            store.put(ns, f"b{i}", {"content": f"big {i}: {p.marker} item number {i}"})
    finally:
        layout.graduate_at = old_graduate


async def awrite_user(store: Any, saver: Any, p: Person) -> None:
    """The async paths: `AsyncTieredMemoryStore`, an async saver, the agent's `ainvoke`."""
    uid, m, name = p.uid, p.marker, p.name
    mem = ("memories", uid)
    await store.aput(
        ("short_term", uid, "scratch"), "s1", {"content": f"my {m} bike", "importance": 0.9}
    )
    await store.aput(("users", uid, "notes"), "n1", {"content": f"{uid} notes {m}"})
    await store.aput(mem, "sister", {"content": f"My sister {name} lives in Porto."})
    await store.aput(mem, "dup1", {"content": f"I drink {m} tea every morning."})
    await store.aput(mem, "dup2", {"content": f"I drink {m} tea every morning!"})
    await store.aupdate_importance(mem, "sister", 0.2)
    await aconsolidate(store, mem, threshold=0.8)
    await apromote(store, ("short_term", uid))
    tools = [
        create_manage_memory_tool(),
        create_manage_memory_tool(namespace=SHARED_NS, name="manage_shared"),
        create_search_memory_tool(),
    ]
    agent = create_memory_agent(
        _agent_model(p),
        tools=tools,
        summarize=SummarizationNode(max_messages=3, keep_last=1, sessions=saver),
        writer=MemoryWriter(retry_wait=0.0),
    ).compile(store=store, checkpointer=saver)
    t1, t2 = f"{uid}-async", uuid.uuid4().hex
    p.threads += [t1, t2]
    await agent.ainvoke(
        {"messages": f"Please remember: I love {m} tea and I live in Lisbon."},
        {"configurable": {"user_id": uid, "thread_id": t1}},
    )
    await agent.ainvoke(
        {"messages": f"My brother {name} works at Acme. Remember that, it is important."},
        {"configurable": {"user_id": uid, "thread_id": t2}},
    )
    await aget_user_profile(store, uid, refresh=True)
