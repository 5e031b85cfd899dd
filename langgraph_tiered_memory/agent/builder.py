"""The memory agent: retrieve → model (→ tools) → store, with storage off the reply path.

`create_memory_agent(model)` returns an uncompiled `StateGraph` with these nodes:

- **memory_retrieval**: renders the memory context of the model call from the user's
  profile (`get_user_profile`), the long-term memories most relevant to the user's
  message (`search_memories` under the namespace template, default
  `("memories", "{user_id}")`, filled from `config["configurable"]`), the known facts
  (with a store that keeps a knowledge graph: the triples one hop from the entities
  of the user's message, in the user's namespace), and the session's running summary
  (graph state). The recent turns are the checkpointed `messages`.
  The context goes into a system message of the model call only: it is kept in the
  state key `memory_context`, never added to `messages`.
- **agent**: the chat model (with `bind_tools` and a **tools** `ToolNode` loop when
  `tools` are given). When it produces the final reply (no tool calls), it hands
  the turn's storage to the background writer and returns the reply at once.
- **summarize** (with `summarize=`): the `SummarizationNode` folding old messages into
  the running summary, so working memory stays bounded.
- **memory_storage**: a deferred node (runs when the run is about to end) that waits
  for the storage of the thread's unstored turns; it raises `MemoryWriteError` when a
  job failed.

Storage of a turn (see `langgraph_tiered_memory.agent.nodes` for the rules):
extraction of facts and preferences (`extract_memories`); reinforcement of the
retrieved memories the reply used (`update_importance`); the interaction (user
message + reply) as an `experience` memory with a rule-based importance, written
last. The background writer (`MemoryWriter`) runs it while the reply is returned and
streamed, a user's turns in order, retries transient errors, keeps failed jobs until
retried, and is flushed before the run ends and at interpreter exit
(`flush_memory_writes()` on demand). A turn waits in the state (`unstored_turns`)
until stored, so a turn whose process died is stored by the thread's next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import NotRequired, TypedDict

from langgraph_tiered_memory._models import resolve_model
from langgraph_tiered_memory.agent.nodes import (
    DEFAULT_IMPORTANCE_RULES,
    DEFAULT_MEMORY_PROMPT,
    ImportanceRules,
    MemoryNodes,
    RetrievedMemory,
    UnstoredTurn,
    check_prompt,
    interaction_importance,
    used_memories,
)
from langgraph_tiered_memory.agent.writer import (
    FailedWrite,
    MemoryWriteError,
    MemoryWriter,
    WriteJob,
    WriteStep,
    flush_memory_writes,
    is_transient,
)
from langgraph_tiered_memory.errors import ConfigurationError

__all__ = [
    "DEFAULT_IMPORTANCE_RULES",
    "DEFAULT_MEMORY_PROMPT",
    "FailedWrite",
    "ImportanceRules",
    "MemoryAgentInput",
    "MemoryAgentState",
    "MemoryWriteError",
    "MemoryWriter",
    "RetrievedMemory",
    "UnstoredTurn",
    "WriteJob",
    "WriteStep",
    "create_memory_agent",
    "flush_memory_writes",
    "interaction_importance",
    "is_transient",
    "used_memories",
]


class MemoryAgentInput(TypedDict):
    """What a run takes: new messages (message objects, dicts, tuples or strings)."""

    messages: Annotated[list[AnyMessage], add_messages]


class MemoryAgentState(TypedDict):
    """The memory agent's state."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation (working memory), checkpointed per thread."""
    summary: NotRequired[str]
    """Running summary of folded messages (with `summarize=`)."""
    memory_context: NotRequired[str]
    """The memory context of the last model call (not part of `messages`)."""
    retrieved_memories: NotRequired[list[RetrievedMemory]]
    """The long-term memories retrieved (recalled) for the current turn."""
    known_facts: NotRequired[list[str]]
    """The fact lines of the current turn (when known facts are on)."""
    unstored_turns: NotRequired[list[UnstoredTurn]]
    """Turns whose storage has not completed (emptied by `memory_storage`)."""
    stored_memories: NotRequired[list[str]]
    """What the last run stored: `namespace/key` of each stored turn's interaction memory
    (written last, after the facts extracted from the turn)."""


def _summarizer(summarize: Any, sessions: Any, redactor: Any) -> Any:
    """The summarize node's runnable, or None."""
    if summarize is None or summarize is False:
        return None
    from langgraph_tiered_memory.agent.summarizer import SummarizationNode

    if summarize is True:
        options: dict[str, Any] = {"sessions": sessions}
        if redactor is not None:
            options["redactor"] = redactor
        summarize = SummarizationNode(**options)
    if not isinstance(summarize, SummarizationNode):
        raise ConfigurationError(
            f"summarize must be True, False or a SummarizationNode, got {summarize!r}."
        )
    return summarize.as_runnable()


def create_memory_agent(
    model: str | BaseChatModel,
    /,
    *,
    tools: Sequence[Any] = (),
    namespace: Sequence[str] = ("memories", "{user_id}"),
    prompt: str | Callable[[dict[str, str]], str] = DEFAULT_MEMORY_PROMPT,
    memory_limit: int = 5,
    extraction: bool = True,
    extraction_model: str | BaseChatModel | None = None,
    profile: bool = True,
    profile_model: str | BaseChatModel | None = None,
    redactor: Any = None,
    summarize: Any = False,
    sessions: Any = None,
    importance: ImportanceRules | Callable[[str], float] = DEFAULT_IMPORTANCE_RULES,
    reinforce_delta: float = 0.1,
    storage: bool = True,
    background: bool = True,
    writer: MemoryWriter | None = None,
    store: Any = None,
    known_facts: bool | None = None,
    facts_limit: int = 20,
) -> StateGraph:
    """An uncompiled agent graph with short-term, long-term and profile memory.

    Compile it with a store (`TieredMemoryStore` for `invoke`/`stream`,
    `AsyncTieredMemoryStore` or either for `ainvoke`/`astream`) and a checkpointer
    (`RedisSessionSaver`), or serve it with `langgraph dev`. Every run needs
    `config["configurable"]["user_id"]` (and `thread_id` with a checkpointer).

    Args:
        model: Chat model or `init_chat_model` string.
        tools: Tools the model may call (a `ToolNode` loop); e.g. the memory tools.
        namespace: Namespace template of the user's memories; `{placeholders}` come
            from `config["configurable"]`.
        prompt: Template of the memory context (a system message of the model call)
            with `{profile}`, `{memories}`, `{summary}` and optionally `{known_facts}`
            (without it, facts are appended as a block when there are any), or a
            function of them.
        memory_limit: Long-term memories retrieved per turn.
        extraction: Extract facts and preferences from each turn (`extract_memories`).
        extraction_model: Model of the extraction (None: the heuristic path).
        profile: Put the user's profile in the context (`get_user_profile`).
        profile_model: Model of the structured profile (None: memories by type).
        redactor: Redaction before anything is stored (`resolve_redactor` specs:
            True for the default detector, or a `Redactor`).
        summarize: True (extractive `SummarizationNode` with its defaults), or a
            configured `SummarizationNode`; False: no summarizer.
        sessions: Session saver receiving the summary (`set_summary`), with `summarize=True`.
        importance: Importance rules of stored interactions, or a function of the
            user's message.
        reinforce_delta: Importance added to each retrieved memory the reply used.
        storage: Store turns at all (False: retrieval only, e.g. as a baseline).
        background: Store in the background writer (True) or in the
            `memory_storage` node before the run ends (False; it runs the jobs in the
            same writer, so a user's turns stay in order).
        writer: The background writer (default: a new `MemoryWriter`).
        store: Store to use instead of the graph's.
        known_facts: Put "known facts" in the context: knowledge-graph triples one hop
            from the entities the user's message names (`query_entities`), read from
            the user's namespace (`graph_neighbors`). None (default): when the store
            keeps a graph (`graph=`); True: always (a store without one is an error);
            False: never.
        facts_limit: At most this many fact lines per turn.

    Returns:
        The uncompiled graph (state `MemoryAgentState`, input `MemoryAgentInput`).

    Raises:
        ConfigurationError: A bad prompt, namespace or option.

    Example:
        ```python
        import tempfile

        from langchain_core.language_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph_tiered_memory import TieredMemoryStore
        from langgraph_tiered_memory.agent.builder import create_memory_agent
        from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

        replies = iter([AIMessage("Noted: you are vegetarian."), AIMessage("Try a dal.")])
        model = GenericFakeChatModel(messages=replies)
        with (
            redis_url_or_embedded() as url,
            TieredMemoryStore.from_conn_string(url, chroma_path=tempfile.mkdtemp()) as store,
        ):
            graph = create_memory_agent(model).compile(store=store, checkpointer=InMemorySaver())
            first = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
            graph.invoke({"messages": "Remember: I am vegetarian."}, first)
            second = {"configurable": {"user_id": "u1", "thread_id": "t2"}}
            out = graph.invoke({"messages": "What should I cook?"}, second)
            assert "vegetarian" in out["memory_context"]
            assert out["messages"][-1].content == "Try a dal."
        ```
    """
    chat = resolve_model(model)
    if chat is None:
        raise ConfigurationError("create_memory_agent needs a chat model (or a model string).")
    if isinstance(prompt, str):
        check_prompt(prompt)
    if memory_limit < 0:
        raise ConfigurationError(f"memory_limit must be >= 0, got {memory_limit}.")
    if known_facts not in (None, True, False):
        raise ConfigurationError(f"known_facts must be True, False or None, got {known_facts!r}.")
    if facts_limit < 0:
        raise ConfigurationError(f"facts_limit must be >= 0, got {facts_limit}.")
    template = tuple(str(label) for label in namespace)
    if not template:
        raise ConfigurationError("namespace must have at least one label.")
    if profile and not any("{user_id}" in label for label in template):
        raise ConfigurationError(
            f"profile=True needs '{{user_id}}' in the namespace template, got {template};"
            " add it, or pass profile=False."
        )
    if redactor is not None:
        from langgraph_tiered_memory.privacy.redaction import resolve_redactor

        redactor = resolve_redactor(redactor)
    tool_list = list(tools)
    bound: Any = chat.bind_tools(tool_list) if tool_list else chat
    nodes = MemoryNodes(
        namespace=template,
        prompt=prompt,
        memory_limit=memory_limit,
        writer=writer if writer is not None else MemoryWriter(),
        extraction=extraction,
        extraction_model=resolve_model(extraction_model),
        profile=profile,
        profile_model=resolve_model(profile_model),
        redactor=redactor,
        importance=importance,
        reinforce_delta=reinforce_delta,
        store=store,
        known_facts=known_facts,
        facts_limit=facts_limit,
    )
    summarizer = _summarizer(summarize, sessions, redactor)
    deferred = storage and background

    def model_input(state: MemoryAgentState) -> list[BaseMessage]:
        context = state.get("memory_context")
        head = [SystemMessage(content=context)] if context else []
        return [*head, *state["messages"]]

    def after_reply(
        state: MemoryAgentState, reply: BaseMessage, config: RunnableConfig, submit: Any
    ) -> dict[str, Any]:
        update: dict[str, Any] = {"messages": [reply]}
        if not storage or (isinstance(reply, AIMessage) and reply.tool_calls):
            return update
        # earlier turns of the thread whose storage never completed go first
        turns = nodes.earlier_turns(state)
        jobs = nodes.replanned(turns, config) if deferred else []
        turn = nodes.unstored_turn(state, reply, config)
        if turn is not None:
            turns.append(turn)
            jobs += [nodes.storage_job(turn, config)] if deferred else []
        for job in jobs:
            submit(job)
        update["unstored_turns"] = turns
        return update

    # LangGraph passes the run config to a parameter named `config` of a RunnableLambda.
    def call_model(state: MemoryAgentState, config: RunnableConfig) -> dict[str, Any]:
        reply = bound.invoke(model_input(state), config)
        return after_reply(state, reply, config, nodes.writer.submit)

    async def acall_model(state: MemoryAgentState, config: RunnableConfig) -> dict[str, Any]:
        reply = await bound.ainvoke(model_input(state), config)
        return after_reply(state, reply, config, nodes.writer.asubmit)

    after = "summarize" if summarizer is not None else ("memory_storage" if storage else END)

    def route(state: MemoryAgentState) -> str:
        last = state["messages"][-1] if state["messages"] else None
        if tool_list and isinstance(last, AIMessage) and last.tool_calls:
            return "tools"
        return after

    def node(name: str, func: Any, afunc: Any) -> RunnableLambda:
        return RunnableLambda(func, afunc=afunc, name=name)

    graph = StateGraph(MemoryAgentState, input_schema=MemoryAgentInput)
    graph.add_node("memory_retrieval", node("memory_retrieval", nodes.retrieve, nodes.aretrieve))
    graph.add_node("agent", node("agent", call_model, acall_model))
    graph.add_edge(START, "memory_retrieval")
    graph.add_edge("memory_retrieval", "agent")
    targets = [after]
    if tool_list:
        from langgraph.prebuilt import ToolNode

        graph.add_node("tools", ToolNode(tool_list))
        graph.add_edge("tools", "agent")
        targets.append("tools")
    graph.add_conditional_edges("agent", route, targets)
    if summarizer is not None:
        graph.add_node("summarize", summarizer)
        graph.add_edge("summarize", "memory_storage" if storage else END)
    if storage:
        finish = node("memory_storage", nodes.finish, nodes.afinish)
        graph.add_node("memory_storage", finish, defer=deferred)
        graph.add_edge("memory_storage", END)
    return graph
