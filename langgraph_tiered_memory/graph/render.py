"""Text views of knowledge-graph triples: an indented tree and a Mermaid flowchart.

Pure functions, no I/O. They take triples in any of the shapes the graph returns
(`Triple`, `TripleRecord`, or the `Neighbor`s of a neighbourhood query, whose paths
are flattened) and render:

- `render_tree`: without `root`, one block per subject (subject → relation → object);
  with `root`, the neighbourhood of that entity up to `hops` (1 or 2) levels deep,
  following triples either way. A triple pointing at an entity is shown under it as
  `← relation` followed by its subject. An entity already on the way down is shown,
  marked `↺`, but not expanded again (cycles are cut), and an entity whose subtree is
  already shown higher up is marked `…` instead of repeating it. Order is stable:
  outgoing before incoming, then by relation, then by entity.
- `mermaid_text` / `to_mermaid`: a Mermaid `graph LR` flowchart. Node ids are derived
  from the entity (`mermaid_id`: an ASCII slug plus a hash, safe whatever the text),
  labels are quoted with every character other than letters, digits, space and a few
  plain punctuation marks written as a Mermaid entity code (`#35;`), so quotes,
  brackets, pipes and newlines in names cannot break the chart. `to_mermaid` returns
  an object a notebook displays as a Mermaid diagram (its Markdown form).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langgraph_tiered_memory.graph.types import Neighbor, Triple, TripleRecord

__all__ = [
    "MermaidDiagram",
    "mermaid_id",
    "mermaid_label",
    "mermaid_text",
    "render_tree",
    "to_mermaid",
    "unique_triples",
]

GraphInput = Iterable[Triple | TripleRecord | Neighbor]
"""Triples, triple records, or neighbours (their paths' triples are used)."""

_CYCLE = " ↺"
_SEEN = " …"
_IN = "← "
_TEE, _LAST, _BAR, _GAP = "├── ", "└── ", "│   ", "    "


def unique_triples(triples: GraphInput) -> list[Triple]:
    """The distinct bare triples of `triples`, sorted (subject, relation, object)."""
    seen: set[Triple] = set()
    for item in triples:
        if isinstance(item, Neighbor):
            seen.update(rec.triple for rec in item.path)
        elif isinstance(item, TripleRecord):
            seen.add(item.triple)
        else:
            seen.add(Triple(item.subject, item.relation, item.object))
    return sorted(seen)


def _printable(text: str) -> str:
    """Text for one tree line: control and other invisible characters escaped."""
    out = []
    for ch in text:
        if unicodedata.category(ch)[0] in "CZ" and ch != " ":
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out) or "''"


Edge = tuple[bool, str, str]
"""(incoming, relation, other entity) as seen from one entity."""


def _edges(triples: Sequence[Triple], *, both_ways: bool) -> dict[str, list[Edge]]:
    """Per entity its edges, outgoing first, then by relation and entity."""
    edges: dict[str, set[Edge]] = {}
    for t in triples:
        edges.setdefault(t.subject, set()).add((False, t.relation, t.object))
        if both_ways and t.object != t.subject:
            edges.setdefault(t.object, set()).add((True, t.relation, t.subject))
    return {entity: sorted(found) for entity, found in edges.items()}


def _append(
    lines: list[str],
    edges: dict[str, list[Edge]],
    ancestors: tuple[str, ...],
    indent: str,
    depth: int,
    via: Edge | None,
    expanded: set[str],
) -> None:
    """Append the relation groups under `ancestors[-1]`, expanding down to `depth`.

    `via` is the edge walked to reach it (seen from it), which is not shown again;
    `expanded` holds the entities whose subtree is already shown (not repeated).
    """
    expanded.add(ancestors[-1])
    groups: dict[tuple[bool, str], list[str]] = {}
    for edge in edges.get(ancestors[-1], []):
        if edge != via:
            groups.setdefault(edge[:2], []).append(edge[2])
    for gi, ((incoming, relation), others) in enumerate(groups.items()):
        last_group = gi == len(groups) - 1
        head = (_IN if incoming else "") + _printable(relation)
        lines.append(indent + (_LAST if last_group else _TEE) + head)
        inner = indent + (_GAP if last_group else _BAR)
        for oi, other in enumerate(others):
            last = oi == len(others) - 1
            cycle = other in ancestors
            deeper = len(ancestors) < depth and not cycle
            seen = deeper and other in expanded
            mark = _CYCLE if cycle else (_SEEN if seen else "")
            lines.append(inner + (_LAST if last else _TEE) + _printable(other) + mark)
            if deeper and not seen:
                back = (not incoming, relation, ancestors[-1])
                below = inner + (_GAP if last else _BAR)
                _append(lines, edges, (*ancestors, other), below, depth, back, expanded)


def render_tree(
    triples: GraphInput,
    *,
    root: str | None = None,
    hops: int = 1,
) -> str:
    """Triples as an indented tree (see the module docstring for the layout).

    Args:
        triples: The triples to show.
        root: Start entity (normalised name): its neighbourhood is shown. None: every
            subject with its relations and objects.
        hops: Levels of entities below `root` (1 or 2); ignored without `root`.

    Returns:
        The tree, lines joined by newlines, without a trailing newline; "(no triples)"
        when there is nothing to show.

    Raises:
        ValueError: `hops` is not 1 or 2.

    Example:
        >>> from langgraph_tiered_memory.graph.render import render_tree
        >>> from langgraph_tiered_memory.graph.types import Triple
        >>> facts = [Triple("anna", "lives_in", "porto"), Triple("user", "sister", "anna")]
        >>> print(render_tree(facts, root="anna"))
        anna
        ├── lives_in
        │   └── porto
        └── ← sister
            └── user
    """
    if hops not in (1, 2):
        raise ValueError(f"hops must be 1 or 2, got {hops!r}.")
    edges = _edges(unique_triples(triples), both_ways=root is not None)
    lines: list[str] = []
    for start in [e for e in edges if root in (None, e)]:
        lines.append(_printable(start))
        _append(lines, edges, (start,), "", 1 if root is None else hops, None, set())
    return "\n".join(lines) or "(no triples)"


# ------------------------------------------------------------------ Mermaid

_SLUG = re.compile(r"[^a-z0-9]+")
_PLAIN = frozenset(" -_.,:'()/")


def mermaid_id(entity: str) -> str:
    """A Mermaid node id for an entity: `n_<ascii slug>_<hash>`, stable and always safe.

    Only ASCII letters, digits and `_`, starting with `n_` (never a keyword such as
    `end`, never an edge marker such as a leading `o` or `x`); distinct entities get
    distinct ids (the hash is of the whole text).

    Example:
        >>> from langgraph_tiered_memory.graph.render import mermaid_id
        >>> mermaid_id("São Paulo")
        'n_sao_paulo_...'
    """
    ascii_text = unicodedata.normalize("NFKD", entity).encode("ascii", "ignore").decode()
    slug = _SLUG.sub("_", ascii_text.casefold()).strip("_")[:24]
    digest = hashlib.sha256(entity.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"n_{slug}_{digest}" if slug else f"n_{digest}"


def mermaid_label(text: str) -> str:
    """Text for a quoted Mermaid label, every unsafe character as an entity code.

    Letters, digits, space and `-_.,:'()/` are kept; every other character (quotes,
    brackets, `|`, `#`, `;`, `<`, newlines, emoji...) is written as its decimal entity
    code `#NNN;`, which Mermaid shows as the character.

    Example:
        >>> from langgraph_tiered_memory.graph.render import mermaid_label
        >>> mermaid_label('say "hi" [now]')
        'say #34;hi#34; #91;now#93;'
    """
    return "".join(
        ch
        if ch in _PLAIN or (ch.isalnum() and unicodedata.category(ch)[0] in "LN")
        else f"#{ord(ch)};"
        for ch in text
    )


def mermaid_text(triples: GraphInput, *, root: str | None = None) -> str:
    """Triples as Mermaid flowchart text (`graph LR`), one node per entity.

    Args:
        triples: The triples to draw.
        root: An entity to highlight (drawn with a thick border), if present.

    Example:
        >>> from langgraph_tiered_memory.graph.render import mermaid_text
        >>> from langgraph_tiered_memory.graph.types import Triple
        >>> print(mermaid_text([Triple("anna", "lives_in", "porto")]))  # doctest: +ELLIPSIS
        graph LR
            n_anna_...["anna"]
            n_porto_...["porto"]
            n_anna_... -->|"lives_in"| n_porto_...
    """
    found = unique_triples(triples)
    entities = sorted({t.subject for t in found} | {t.object for t in found})
    lines = ["graph LR"]
    lines += [f'    {mermaid_id(e)}["{mermaid_label(e)}"]' for e in entities]
    lines += [
        f'    {mermaid_id(t.subject)} -->|"{mermaid_label(t.relation)}"| {mermaid_id(t.object)}'
        for t in found
    ]
    if root is not None and root in entities:
        lines.append("    classDef root stroke-width:3px")
        lines.append(f"    class {mermaid_id(root)} root")
    return "\n".join(lines)


@dataclass(frozen=True)
class MermaidDiagram:
    """Mermaid flowchart text that notebooks display as a diagram.

    `str()` is the Mermaid text; Jupyter shows its Markdown form, a fenced block with
    the info string `mermaid`, which JupyterLab 4 and VS Code render as a diagram.
    """

    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.text}\n```"


def to_mermaid(triples: GraphInput, *, root: str | None = None) -> MermaidDiagram:
    """Triples as a `MermaidDiagram` (display it in a notebook, or `str()` it).

    In a notebook, end a cell with `to_mermaid(graph_neighbors(store, ns, "anna", hops=2))`.

    Example:
        ```python
        from langgraph_tiered_memory.graph.render import to_mermaid
        from langgraph_tiered_memory.graph.types import Triple

        chart = to_mermaid([Triple("anna", "lives_in", "porto")], root="anna")
        assert str(chart).startswith("graph LR")
        assert chart._repr_markdown_().startswith("```mermaid")
        ```
    """
    return MermaidDiagram(mermaid_text(triples, root=root))
