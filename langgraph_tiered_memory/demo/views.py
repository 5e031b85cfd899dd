"""Rich tables and panels of `tiered-memory demo` (the data comes from `demo.run`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from langgraph_tiered_memory.demo.run import ForgettingView, RecallRow, SessionView, Turn
from langgraph_tiered_memory.ranking.scoring import Scoring

__all__ = [
    "format_ms",
    "forgetting_tables",
    "recall_table",
    "score_explanation",
    "session_panel",
    "summary_panel",
    "turns_table",
]


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= width else flat[: width - 1] + "…")


def format_ms(ms: int | None) -> str:
    """A remaining TTL in ms as "29m 58s" ("no expiry" for -1)."""
    if ms is None or ms < -1:
        return "?"
    if ms == -1:
        return "no expiry"
    hours, rest = divmod(ms // 1000, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {seconds:02d}s"
    return f"{minutes}m {seconds:02d}s"


def turns_table(turns: Sequence[Turn], title: str, budget: int | None = None) -> Table:
    """One row per turn: what was said, the reply, working memory around `summarize`."""
    caption = None
    if budget is not None:
        caption = (
            f"Working memory = the thread's checkpointed messages. Over {budget} tokens,"
            " the summarize node folds the oldest into the running summary."
        )
    table = Table(title=title, caption=caption, show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("user")
    table.add_column("agent")
    table.add_column("messages\nbefore → after", justify="center")
    table.add_column("tokens\nbefore → after", justify="center")
    table.add_column("summarized", justify="center")
    for number, turn in enumerate(turns, 1):
        table.add_row(
            str(number),
            _short(turn.said, 45),
            _short(turn.reply, 160),
            f"{turn.messages_before} → {turn.messages_after}",
            f"{turn.tokens_before} → {turn.tokens_after}",
            "[green]yes[/green]" if turn.summarized else "no",
        )
    return table


def summary_panel(turns: Sequence[Turn], in_redis: str | None) -> Panel:
    """The running summary after the last turn, and whether Redis holds the same."""
    folds = sum(1 for t in turns if t.summarized)
    summary = turns[-1].summary if turns else None
    body = Text(summary or "(no summary yet: raise the turns or lower --budget)")
    same = in_redis is not None and in_redis == summary
    note = (
        "the same text is stored in the session registry in Redis (saver.get_summary)"
        if same
        else "not written to the session registry"
    )
    return Panel(
        Group(body, Text(f"\nSummarized {folds} time(s); {note}.", style="dim")),
        title="Running summary (working memory beyond the last messages)",
    )


def session_panel(view: SessionView) -> Panel:
    """The session as Redis holds it: registry entry and keys with their TTL."""
    meta = view.meta
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    info.add_row("thread (session)", escape(view.thread_id))
    if meta is not None:
        info.add_row("owner", escape(str(meta.user_id)))
        info.add_row("status", meta.status)
        info.add_row("messages", str(meta.message_count))
        if meta.created_at is not None:
            info.add_row("created", meta.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"))
        info.add_row("last active", meta.last_active.strftime("%Y-%m-%d %H:%M:%S UTC"))
    else:
        info.add_row("registry", "[red]no entry[/red]")
    ttl = "none (kept forever)" if view.ttl_seconds is None else f"{view.ttl_seconds / 60:g} min"
    info.add_row("session TTL", f"{ttl}, restarted on every read and write")
    keys = Table("Redis keys of this session", "count", "TTL left", box=None)
    for group in view.groups:
        keys.add_row(escape(group.kind), str(group.count), format_ms(group.ttl_ms))
    return Panel(
        Group(info, Text(""), keys),
        title="Session in Redis (short-term tier: checkpoints + session registry)",
    )


def _origin(row: RecallRow, sessions: Mapping[str, str]) -> str:
    if row.thread_id is not None:
        return f"turn of {sessions.get(row.thread_id, row.thread_id)}"
    if row.source == "extraction":
        return "extracted fact"
    return escape(row.source or "?")


def recall_table(turn: Turn, number: int, sessions: Mapping[str, str]) -> Table:
    """The memories ranked for a turn of session 2, with the score breakdown.

    Args:
        turn: The turn, with its explained hits.
        number: The turn's number in its session.
        sessions: Thread id to a label such as "session 1".
    """
    table = Table(
        title=f"Recalled for turn {number}: [bold]{escape(turn.said)}[/bold]",
        caption=f"agent: {escape(turn.reply)}",
    )
    table.add_column("#", justify="right")
    table.add_column("memory")
    table.add_column("origin")
    table.add_column("relevance", justify="right")
    table.add_column("importance", justify="right")
    table.add_column("recency", justify="right")
    table.add_column("log1p(access)", justify="right")
    table.add_column("time", justify="right")
    table.add_column("score", justify="right", style="bold")
    table.add_column("in context", justify="center")
    for rank, row in enumerate(turn.recalled, 1):
        b = row.breakdown
        table.add_row(
            str(rank),
            _short(row.content, 55),
            _origin(row, sessions),
            f"{b.relevance:.3f}",
            f"{b.importance:.2f}",
            f"{b.recency:.3f}",
            f"{b.access:.3f}",
            f"{b.time:g}",
            f"{b.score:.3f}",
            "[green]yes[/green]" if row.in_context else "no",
        )
    return table


def score_explanation(scoring: Scoring) -> Panel:
    """What each factor of a memory's score means, with the store's weights."""
    s = scoring
    top = (
        s.relevance_weight + s.importance_weight + s.recency_weight + s.user_weight + s.time_weight
    )
    lines: list[RenderableType] = [
        Text.from_markup(
            f"score = {s.relevance_weight:g} × relevance + {s.importance_weight:g} × importance"
            f" + {s.recency_weight:g} × recency + {s.access_weight:g} × log1p(access)"
            f" + {s.user_weight:g} × own-user + {s.time_weight:g} × time"
        ),
        Text(""),
        Text.from_markup(
            f"[bold]relevance[/bold] (0..1): how well the memory matches the message. In"
            f" '{s.retrieval}' retrieval it fuses the memory's rank in the dense (embedding)"
            " list and in the keyword (BM25) list, plus a bonus when a memory written next"
            " to it also matches; 1.0 = top of every list."
        ),
        Text.from_markup(
            "[bold]importance[/bold] (0..1): set when stored (0.5 by default, more when the"
            " user says 'remember' or 'important'); raised each time a reply uses it."
        ),
        Text.from_markup(
            f"[bold]recency[/bold] (0..1): 0.5 ** (age / {s.half_life_days:g} days); these"
            " memories are minutes old, so about 1.0."
        ),
        Text.from_markup(
            "[bold]log1p(access)[/bold]: log(1 + times a search or get returned it); grows"
            " slowly, so popular memories rise a little."
        ),
        Text.from_markup(
            "[bold]own-user[/bold]: 1 when the memory is in the caller's own user namespace"
            " (contextual retrieval only)."
        ),
        Text.from_markup(
            "[bold]time[/bold]: 1 when the message asks when (or names a month, a year,"
            " 'yesterday', 'last week') and the memory states a time (or happened then)."
        ),
        Text(""),
        Text.from_markup(
            f"[bold]Why scores can exceed 1.0:[/bold] the score is a weighted [italic]sum[/italic],"
            f" not a probability. Relevance alone reaches 1.0; importance, recency, access,"
            f" own-user and time are added on top (up to {top:g} + {s.access_weight:g} ×"
            " log1p(access)). Only the order matters: relevance dominates, the other factors"
            " move a memory a few ranks at most."
        ),
        Text(
            "'in context' = the agent put this memory in the model's system message (its"
            " top memory_limit). The ranking shown is computed just before the turn, on the"
            " same statistics, without counting an access.",
            style="dim",
        ),
    ]
    return Panel(Group(*lines), title="How a recalled memory is scored (ranking.py)")


def forgetting_tables(view: ForgettingView) -> list[RenderableType]:
    """Decay per memory, what the forgetting graph would delete, what it would merge."""
    horizon = f"{view.horizon_days:g} days from now"
    decay = Table(
        title=f"Forgetting dry run: decay now and {horizon} (nothing is written)",
        caption="decay = (1 - 0.5 ** (idle days / half-life)) × (1 - importance × 0.2 -"
        " log1p(access) × 0.05); memories used in session 2 were just accessed.",
    )
    decay.add_column("memory")
    decay.add_column("type")
    decay.add_column("importance", justify="right")
    decay.add_column("accesses", justify="right")
    decay.add_column("decay now", justify="right")
    decay.add_column(f"decay in {view.horizon_days:g}d", justify="right")
    decay.add_column(f"in {view.horizon_days:g} days")
    for row in view.decays:
        verdict = (
            f"[red]delete[/red] ({escape(row.forget_reason)})" if row.forget_reason else "keep"
        )
        decay.add_row(
            _short(row.content, 50),
            row.memory_type,
            f"{row.importance:.2f}",
            str(row.accesses),
            f"{row.decay_now:.3f}",
            f"{row.decay_later:.3f}",
            verdict,
        )
    deleted = Table(
        "memory", "reason", title=f"Forgetting graph (dry_run=True) at {horizon}: would delete"
    )
    for gone in view.deleted:
        deleted.add_row(_short(gone["content_preview"], 60), escape(gone["reason"]))
    if not view.deleted:
        deleted.add_row("(nothing)", "")
    merged = Table(
        "why",
        "sources",
        "merged memory",
        title="Consolidation (dry_run=True): would merge",
        caption="Shared types (facts) merge only with each other, private ones (turns) too;"
        " the merged memory keeps the highest importance of its sources.",
    )
    for why, record in view.merged:
        sources = "\n".join(_short(view.contents.get(k, k), 45) for k in record["sources"])
        merged.add_row(escape(why), sources, _short(record["content"], 60))
    if not view.merged:
        merged.add_row("(nothing)", "", "")
    return [decay, deleted, merged]
