"""Summarizer benchmark: context size and fact coverage over a long conversation.

Each LoCoMo-format conversation is replayed turn by turn (one `HumanMessage` per
dialog turn, named after its speaker) through a compiled graph whose only node is the
summarizer subgraph in no-LLM mode, with a checkpointer, exactly as a chat graph
would run it. After every turn the benchmark counts the tokens the model would see
(system prompt, summary as a system message, kept messages) against the tokens of the
full history, with `count_tokens_approximately`.

At the end, each question's evidence turns are looked up: a turn counts as covered
when its message is still in working memory or one of its sentences (three words or
more) is in the summary.
"""

from __future__ import annotations

import re
import statistics
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_tiered_memory.agent.summarizer import (
    SummaryState,
    create_summarizer_graph,
    messages_with_summary,
)
from tiered_memory_benchmarks.retrieval import load_locomo, split_evidence, turn_text

__all__ = ["SummarizerBenchConfig", "SummarizerBenchReport", "run_summarizer_benchmark"]

_SYSTEM = SystemMessage(content="You are a helpful assistant with memory.", id="system")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class SummarizerBenchConfig:
    """What the summarizer benchmark runs.

    Attributes:
        data: LoCoMo-format JSON file.
        conversations: Sample ids to replay (None: all).
        max_messages: Summarization trigger (messages).
        keep_last: Messages kept after summarizing.
        max_summary_sentences: Size of the extractive summary.
        store: Also write every turn to a long-term `TieredMemoryStore` (offline e5-small,
            temporary Chroma) and count an evidence turn as found when one store
            search with the question returns it in the top `store_k`.
        store_k: Results of that search.
    """

    data: str
    conversations: list[str] | None = None
    max_messages: int = 20
    keep_last: int = 5
    max_summary_sentences: int = 12
    store: bool = False
    store_k: int = 10


@dataclass
class SummarizerBenchReport:
    """Per conversation: context and full-history tokens per turn, and evidence coverage."""

    config: SummarizerBenchConfig
    turns: dict[str, int] = field(default_factory=dict)
    context_tokens: dict[str, list[int]] = field(default_factory=dict)
    history_tokens: dict[str, list[int]] = field(default_factory=dict)
    evidence_turns: int = 0
    covered_in_summary: int = 0
    covered_in_messages: int = 0
    covered_in_store: int | None = None

    def context_ratio(self) -> float:
        """Context tokens / full-history tokens at the last turn (mean over conversations)."""
        ratios = [ctx[-1] / hist[-1] for ctx, hist in self._pairs() if hist and hist[-1] > 0]
        return statistics.mean(ratios) if ratios else 0.0

    def _pairs(self) -> list[tuple[list[int], list[int]]]:
        return [(self.context_tokens[k], self.history_tokens[k]) for k in self.context_tokens]

    def coverage(self) -> float:
        """Share of evidence turns found in the summary or the kept messages."""
        if not self.evidence_turns:
            return 0.0
        found = self.covered_in_summary + self.covered_in_messages
        return (found + (self.covered_in_store or 0)) / self.evidence_turns

    def to_dict(self) -> dict[str, Any]:
        """Every figure as plain JSON-serialisable data."""
        per_conv = {
            k: {
                "turns": self.turns[k],
                "context_tokens_last": self.context_tokens[k][-1],
                "history_tokens_last": self.history_tokens[k][-1],
                "context_tokens_max": max(self.context_tokens[k]),
            }
            for k in self.context_tokens
        }
        return {
            "benchmark": "summarizer",
            "config": asdict(self.config),
            "context_ratio": round(self.context_ratio(), 4),
            "evidence_coverage": round(self.coverage(), 4),
            "evidence_turns": self.evidence_turns,
            "covered_in_summary": self.covered_in_summary,
            "covered_in_messages": self.covered_in_messages,
            "covered_in_store": self.covered_in_store,
            "per_conversation": per_conv,
        }


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.split()) >= 3]


def run_summarizer_benchmark(config: SummarizerBenchConfig) -> SummarizerBenchReport:
    """Replay each conversation through the summarizer and measure it.

    Args:
        config: What to run.

    Returns:
        The report.
    """
    report = SummarizerBenchReport(config=config)
    summarizer = create_summarizer_graph(
        max_messages=config.max_messages,
        keep_last=config.keep_last,
        max_summary_sentences=config.max_summary_sentences,
    )
    builder = StateGraph(SummaryState)
    builder.add_node("summarize", summarizer.compile())
    builder.add_edge(START, "summarize")
    graph = builder.compile(checkpointer=InMemorySaver())
    with ExitStack() as stack:
        store = None
        if config.store:
            import tempfile

            from langgraph_tiered_memory import TieredMemoryStore

            path = stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-bench-sum-"))
            store = TieredMemoryStore(
                chroma_path=path,
                tiers={"default": "long"},
                index={"dims": 384, "embed": "local", "fields": ["content"]},
                key_prefix="bench_sum",
            )
            stack.callback(store.close)
            report.covered_in_store = 0
        _replay(config, graph, store, report)
    return report


def _replay(
    config: SummarizerBenchConfig, graph: Any, store: Any, report: SummarizerBenchReport
) -> None:
    from langgraph.store.base import PutOp

    for conv in load_locomo(config.data, config.conversations):
        cfg: RunnableConfig = {"configurable": {"thread_id": conv.sample_id}}
        history_tokens = count_tokens_approximately([_SYSTEM])
        context: list[int] = []
        history: list[int] = []
        texts: dict[str, str] = {}
        first = True
        for turn in conv.turns:
            text = turn_text(turn.speaker, turn.text, turn.blip_caption)
            texts[turn.dia_id] = text
            message = HumanMessage(content=text, id=turn.dia_id, name=turn.speaker)
            if store is not None:
                store.batch(
                    [
                        PutOp(
                            ("locomo", conv.sample_id),
                            turn.dia_id,
                            {"content": text, "occurred_at": turn.occurred_at.isoformat()},
                        )
                    ]
                )
            new = [_SYSTEM, message] if first else [message]
            first = False
            update: Any = {"messages": new}
            state = graph.invoke(update, cfg)
            history_tokens += count_tokens_approximately([message])
            shown = messages_with_summary(state["messages"], state.get("summary"))
            context.append(count_tokens_approximately(shown))
            history.append(history_tokens)
        report.turns[conv.sample_id] = len(conv.turns)
        report.context_tokens[conv.sample_id] = context
        report.history_tokens[conv.sample_id] = history
        final = graph.get_state(cfg).values
        kept_ids = {m.id for m in final["messages"]}
        summary = final.get("summary") or ""
        for question in conv.questions:
            evidence = split_evidence(question.evidence, texts)
            found: set[str] = set()
            if store is not None and evidence:
                hits = store.search(
                    ("locomo", conv.sample_id), query=question.question, limit=config.store_k
                )
                found = {h.key for h in hits}
            for dia_id in evidence:
                report.evidence_turns += 1
                if dia_id in kept_ids:
                    report.covered_in_messages += 1
                elif any(s in summary for s in _sentences(texts[dia_id])):
                    report.covered_in_summary += 1
                elif dia_id in found and report.covered_in_store is not None:
                    report.covered_in_store += 1
