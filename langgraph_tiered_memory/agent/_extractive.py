"""Extractive summary of messages: no model, sentences chosen by keyword salience.

Each sentence's content words are weighted by their inverse frequency across the
folded sentences, first-person statements of facts, preferences and decisions get a
boost, and the best sentences are kept in their original order within a size budget.
`message_text` and `speaker` render a message for a summary or a prompt.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9']+")
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from as is are was were be
    been being am do does did have has had i you he she it we they me him her us them my your
    his its our their this that these those what which who whom how when where why not no yes
    just very really also too can could will would should shall may might must there here
    about into over than oh ok okay hey hi hello thanks thank well like get got lol""".split()
)
# First-person statements of facts, preferences and decisions carry what a summary must keep.
_CUES = re.compile(
    r"\b(i am|i'm|my|i have|i've|i live|i work|i like|i love|i prefer|i hate|i don't|"
    r"i want|i need|we decided|decided|let's|i will|i'll|remember|always|never|allergic|"
    r"birthday|name is)\b",
    re.IGNORECASE,
)


def message_text(message: BaseMessage) -> str:
    """The text of a message, with its tool calls spelled out, stripped."""
    content = message.content
    if isinstance(content, str):
        text = content
    else:
        text = " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(f"{tc['name']}({tc.get('args', {})})" for tc in message.tool_calls)
        text = f"{text} [called {calls}]".strip()
    return text.strip()


def speaker(message: BaseMessage) -> str:
    """Who said a message, as a summary line names them."""
    if isinstance(message, HumanMessage):
        return message.name or "User"
    if isinstance(message, ToolMessage):
        return f"Tool {message.name or ''}".strip()
    if isinstance(message, AIMessage):
        return message.name or "Assistant"
    return message.type


def extractive_summary(
    messages: Sequence[BaseMessage], previous: str | None = None, *, max_sentences: int = 12
) -> str:
    """Extend `previous` with the most salient sentences of `messages` (no model).

    Sentences are scored by the inverse frequency of their content words across all
    candidate sentences (rare, specific words score high), normalised by sqrt(length),
    with a boost for first-person statements of facts, preferences and decisions. The
    previous summary's sentences compete too, so the summary stays bounded.

    Args:
        messages: Messages to fold in, oldest first.
        previous: The running summary so far.
        max_sentences: Most sentences the summary keeps.

    Returns:
        The new summary, one sentence per line, in chronological order.
    """
    candidates: list[str] = []
    if previous:
        candidates.extend(line.strip() for line in previous.splitlines() if line.strip())
    for m in messages:
        text = message_text(m)
        if not text:
            continue
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if len(_WORD.findall(sentence)) >= 3:
                candidates.append(f"{speaker(m)}: {sentence}")
    if len(candidates) <= max_sentences:
        return "\n".join(candidates)
    words = [
        [w.lower() for w in _WORD.findall(c.split(": ", 1)[-1]) if w.lower() not in _STOP]
        for c in candidates
    ]
    df = Counter(w for ws in words for w in set(ws))
    n = len(candidates)
    scores = []
    for i, (sentence, ws) in enumerate(zip(candidates, words, strict=True)):
        salience = sum(math.log((n + 1) / (df[w] + 0.5)) for w in set(ws))
        score = salience / math.sqrt(len(ws) + 1)
        if _CUES.search(sentence):
            score *= 1.5
        scores.append((score, i))
    best = sorted(i for _, i in sorted(scores, reverse=True)[:max_sentences])
    return "\n".join(candidates[i] for i in best)
