"""The prebuilt forgetting graph: scan → decide → (report | consolidate → delete → report).

- **scan** streams the memory index under a namespace prefix (statistics only, in pages)
  and lists the memories the forgetting policy flags, with the reason (a dry run of
  `maintenance.garbage_collect`);
- **decide** sends a dry run straight to the report, and a real run on to consolidation
  (or to deletion when consolidation is off);
- **consolidate** merges near-duplicates (and, for each of `themes`, the memories about
  it) in every namespace under the prefix, leaving the flagged memories out (and pinned
  ones: they are never merged);
- **delete** forgets the flagged memories, each judged again on its current statistics
  (`maintenance.forget`), so a memory used or pinned since the scan stays;
- **report** is the graph's output: `{"report": {forgotten_count, details, scanned,
  dry_run, consolidated, now}}`.

The namespace prefix is literal in every step (a `"*"` label matches only `"*"`).
The store comes from the graph's runtime (`compile(store=...)` or the LangGraph server)
or from `store=`. Every step judges at one instant, taken once from `clock` at the scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, get_type_hints

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_tiered_memory._drive import Call, adrive, drive
from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.ranking.forgetting import ForgettingPolicy, ForgettingRules
from langgraph_tiered_memory.store import maintenance
from langgraph_tiered_memory.store._reports import (
    ConsolidationRecord,
    ForgettingReport,
    ForgottenRow,
)
from langgraph_tiered_memory.store.aio import AsyncTieredMemoryStore
from langgraph_tiered_memory.store.base import TieredStoreCore
from langgraph_tiered_memory.store.consolidation import THEME_SIMILARITY

__all__ = [
    "ForgettingInput",
    "ForgettingOutput",
    "ForgettingState",
    "create_forgetting_graph",
]


class ForgettingInput(TypedDict, total=False):
    """What one run may override: the namespace prefix, the dry run, the themes."""

    namespace: list[str]
    """Namespace prefix to collect under (default: the graph's `namespace`)."""
    dry_run: bool
    """Report only (default: the graph's `dry_run`)."""
    themes: list[str]
    """Themes to consolidate in this run, in addition to the graph's `themes`."""


def _input_schema(dry_run: bool) -> Any:
    """`ForgettingInput` whose JSON schema shows this graph's `dry_run` as the default.

    Studio fills its input form from that schema, so a graph made with `dry_run=True`
    shows the box ticked.
    """
    from pydantic import Field

    fields = dict(get_type_hints(ForgettingInput))
    fields["dry_run"] = Annotated[bool, Field(json_schema_extra={"default": dry_run})]
    schema: Any = TypedDict("ForgettingInput", fields, total=False)  # type: ignore[misc]
    schema.__doc__ = ForgettingInput.__doc__
    return schema


class ForgettingOutput(TypedDict):
    """The graph's output."""

    report: ForgettingReport
    """`{forgotten_count, details: [{id, namespace, content_preview, reason}], scanned,
    dry_run, consolidated: [{key, namespace, sources, content, importance}], now}`."""


class ForgettingState(ForgettingInput, total=False):
    """The graph's working state."""

    now: float
    action: Literal["report", "consolidate", "delete"]
    scanned: int
    candidates: list[ForgottenRow]
    consolidated: list[ConsolidationRecord]
    forgotten: list[ForgottenRow]
    report: ForgettingReport


def _by_namespace(rows: list[ForgottenRow]) -> dict[tuple[str, ...], list[str]]:
    out: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        out.setdefault(tuple(row["namespace"]), []).append(row["id"])
    return out


def create_forgetting_graph(
    model: str | BaseChatModel | None = None,
    /,
    *,
    store: Any = None,
    namespace: Sequence[str] = (),
    policy: ForgettingPolicy | None = None,
    dry_run: bool = False,
    consolidate: bool | None = None,
    threshold: float = 0.9,
    themes: Sequence[str] = (),
    min_similarity: float = THEME_SIMILARITY,
    originals: Literal["delete", "downweight"] = "delete",
    page_size: int = 1000,
    clock: Callable[[], float] | None = None,
    progress: Callable[[int], None] | None = None,
) -> StateGraph:
    """An uncompiled graph that decays, consolidates and forgets long-term memories.

    Run it on a schedule (see docs/forgetting.md for LangGraph cron
    jobs), from the command line (`tiered-memory gc`), or as a node of your own graph.
    It works with `graph.invoke` on a `TieredMemoryStore` and with `graph.ainvoke` on
    either store.

    Args:
        model: Chat model or `init_chat_model` string that merges consolidated
            memories; None merges without a model (every source's text once).
        store: The `TieredMemoryStore` / `AsyncTieredMemoryStore` to maintain; default:
            the store the graph is compiled or served with.
        namespace: Namespace prefix to maintain (default: every long-term namespace).
            Every step takes it literally: a `"*"` label is a label, not a wildcard.
        policy: Overrides of `DEFAULT_FORGETTING_POLICY` (e.g. `GARBAGE_COLLECT_POLICY`).
        dry_run: Report what would be forgotten; change nothing.
        consolidate: Merge near-duplicate memories before forgetting. None (the
            default): when the store has an embedding index; True: always (a store
            without an index is an error); False: never. Themes are merged whenever
            there are any.
        threshold: Cosine similarity that makes two memories near-duplicates.
        themes: Themes (queries) whose memories are merged, per namespace.
        min_similarity: Cosine similarity to a theme that puts a memory in it.
        originals: `"delete"` or `"downweight"` the sources of a merged memory.
        page_size: Memories read per page by the scan.
        clock: Returns the current time in epoch seconds (default: `time.time`).
        progress: Called with the number of memories scanned after each page.

    Example:
        ```python
        import tempfile
        from langgraph_tiered_memory import TieredMemoryStore, create_forgetting_graph
        from langgraph_tiered_memory.embedded.redis import EmbeddedRedis

        DAY = 86_400
        now = [1_700_000_000.0]
        with EmbeddedRedis() as redis_server, TieredMemoryStore.from_conn_string(
            redis_server.url, chroma_path=tempfile.mkdtemp(), clock=lambda: now[0]
        ) as store:
            store.put(("users", "u1"), "tea", {"content": "likes tea", "importance": 0.9})
            store.put(("users", "u1"), "typo", {"content": "said 'teh'", "importance": 0.1})
            graph = create_forgetting_graph(clock=lambda: now[0] + 7 * DAY)
            out = graph.compile(store=store).invoke({"dry_run": False})
            assert [d["id"] for d in out["report"]["details"]] == ["typo"]
            assert store.get(("users", "u1"), "typo") is None
        ```
    """
    if originals not in ("delete", "downweight"):
        raise ConfigurationError(f"originals must be 'delete' or 'downweight', got {originals!r}.")
    ForgettingRules(policy)  # a bad policy fails here, not in the first scheduled run
    prefix = tuple(namespace)
    base_themes = [str(t) for t in themes]
    now_of = clock or time.time

    def _store() -> Any:
        found = store
        if found is None:
            from langgraph.config import get_store

            try:
                found = get_store()
            except RuntimeError:  # called outside a graph run: reported just below
                found = None
        if found is None:
            raise ConfigurationError(
                "The forgetting graph needs a store: compile it with"
                " graph.compile(store=...) or pass create_forgetting_graph(store=...)."
            )
        if not isinstance(found, TieredStoreCore):
            raise ConfigurationError(
                f"The forgetting graph needs a TieredMemoryStore or AsyncTieredMemoryStore,"
                f" got {type(found).__name__}."
            )
        return found

    def _sync_store() -> Any:
        found = _store()
        if isinstance(found, AsyncTieredMemoryStore):
            raise ConfigurationError(
                "AsyncTieredMemoryStore runs the forgetting graph with ainvoke/astream;"
                " use TieredMemoryStore for invoke/stream."
            )
        return found

    def _prefix(state: ForgettingState) -> tuple[str, ...]:
        return tuple(state.get("namespace") or prefix)

    def _dry(state: ForgettingState) -> bool:
        return bool(state.get("dry_run", dry_run))

    # Each step is one plan of calls, run blocking (`invoke`) or awaited (`ainvoke`):
    # `drive` calls `maintenance.forget`, `adrive` awaits `maintenance.aforget`, ...
    def scan(state: ForgettingState, pick: Callable[[], Any]) -> Any:
        now = float(now_of())
        options = dict(dry_run=True, policy=policy, page_size=page_size, progress=progress, now=now)
        report = yield Call(maintenance, "garbage_collect", (pick(), _prefix(state)), options)
        return {"now": now, "scanned": report["scanned"], "candidates": report["details"]}

    def decide(state: ForgettingState) -> dict[str, Any]:
        if _dry(state):
            return {"action": "report"}
        merging = _near_duplicates() or bool(_themes(state))
        return {"action": "consolidate" if merging else "delete"}

    def route(state: ForgettingState) -> str:
        return state["action"]

    def _near_duplicates() -> bool:
        if consolidate is None:
            return _store().index_config is not None
        return consolidate

    def _themes(state: ForgettingState) -> list[str]:
        return [*base_themes, *(str(t) for t in state.get("themes", []))]

    def consolidate_node(state: ForgettingState, pick: Callable[[], Any]) -> Any:
        found = pick()
        at = _prefix(state)
        listed = yield Call(found, "list_namespaces", (), {"prefix": at, "limit": 1_000_000})
        # `list_namespaces` reads a "*" label as a wildcard; every step of this graph
        # takes the prefix literally, so only namespaces that start with it stay.
        spaces = [
            tuple(ns)
            for ns in listed
            if tuple(ns[: len(at)]) == at and found.tier_for(tuple(ns)) == "long"
        ]
        doomed = _by_namespace(state.get("candidates", []))
        wanted: list[str | None] = [None] if _near_duplicates() else []
        wanted.extend(_themes(state))
        merged: list[ConsolidationRecord] = []
        for ns in spaces:
            for query in wanted:
                options = {
                    "query": query,
                    "threshold": threshold,
                    "min_similarity": min_similarity,
                    "model": model,
                    "originals": originals,
                    "exclude": doomed.get(ns, []),
                    "now": state["now"],
                }
                merged.extend((yield Call(maintenance, "consolidate", (found, ns), options)))
        return {"consolidated": merged}

    def delete(state: ForgettingState, pick: Callable[[], Any]) -> Any:
        found = pick()
        gone: list[ForgottenRow] = []
        options = {"policy": policy, "now": state["now"]}
        for ns, keys in _by_namespace(state.get("candidates", [])).items():
            gone.extend((yield Call(maintenance, "forget", (found, ns, keys), options)))
        return {"forgotten": gone}

    def node(plan: Callable[[ForgettingState, Callable[[], Any]], Any]) -> Any:
        from langchain_core.runnables import RunnableLambda

        def run(state: ForgettingState) -> Any:
            return drive(plan(state, _sync_store))

        async def arun(state: ForgettingState) -> Any:
            return await adrive(plan(state, _store))

        return RunnableLambda(run, afunc=arun, name=plan.__name__)

    def report(state: ForgettingState) -> ForgettingOutput:
        dry = _dry(state)
        details = state.get("candidates", []) if dry else state.get("forgotten", [])
        return {
            "report": {
                "forgotten_count": len(details),
                "details": details,
                "scanned": state.get("scanned", 0),
                "dry_run": dry,
                "consolidated": state.get("consolidated", []),
                "now": state.get("now"),
            }
        }

    graph = StateGraph(
        ForgettingState, input_schema=_input_schema(dry_run), output_schema=ForgettingOutput
    )
    graph.add_node("scan", node(scan))
    graph.add_node("decide", decide)
    graph.add_node("consolidate", node(consolidate_node))
    graph.add_node("delete", node(delete))
    graph.add_node("report", report)
    graph.add_edge(START, "scan")
    graph.add_edge("scan", "decide")
    graph.add_conditional_edges("decide", route, ["report", "consolidate", "delete"])
    graph.add_edge("consolidate", "delete")
    graph.add_edge("delete", "report")
    graph.add_edge("report", END)
    return graph
