"""`tiered-memory gc`: run the forgetting graph over a store from the shell."""

import json
from typing import Annotated

import typer
from langgraph.store.base import InvalidNamespaceError
from rich.console import Console
from rich.table import Table

from langgraph_tiered_memory.cli.common import (
    ChromaPathOption,
    CreateFlag,
    KeyPrefixOption,
    namespace_labels,
    open_store,
    reported_errors,
)
from langgraph_tiered_memory.store._validate import validate_namespace

__all__ = ["gc"]


def _gc_prefix(namespace: str | None, labels: list[str] | None) -> tuple[str, ...]:
    """The namespace prefix of `gc`: whole store only when neither option is given.

    An empty or malformed `--namespace` (an unset shell variable, `/`, `a//b`) or a
    label the store refuses (a period, a NUL) is an error rather than the whole store.
    """
    if namespace is not None and labels:
        raise typer.BadParameter("Pass either --namespace or --label, not both.")
    if labels:
        if any(not lab for lab in labels):
            raise typer.BadParameter("--label must not be empty.")
        try:
            return validate_namespace(tuple(labels))
        except InvalidNamespaceError as e:
            raise typer.BadParameter(f"--label {labels!r} is not a valid namespace: {e}") from e
    return () if namespace is None else namespace_labels(namespace)


def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report only; delete nothing.")
    ] = False,
    namespace: Annotated[
        str | None,
        typer.Option(
            help="Only namespaces under this prefix, labels joined by '/' (e.g. users/u1)."
            " Empty labels are refused; use --label for labels that contain '/'."
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            help="One label of the namespace prefix, taken literally (repeatable, in order);"
            " instead of --namespace."
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            help="default (decay and age rules) or gc (older than 30 days or unimportant)."
        ),
    ] = "default",
    max_memories: Annotated[
        int | None,
        typer.Option(min=1, help="Budget per namespace: keep at most this many memories."),
    ] = None,
    consolidate: Annotated[
        bool,
        typer.Option(
            "--consolidate",
            help="Merge near-duplicate memories before forgetting (needs --embed).",
        ),
    ] = False,
    theme: Annotated[
        list[str] | None,
        typer.Option(help="A theme whose memories are merged (repeatable; needs --embed)."),
    ] = None,
    embed: Annotated[
        str | None,
        typer.Option(
            help="Embeddings of the store, to embed merged memories: 'local' or 'provider:model'."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Chat model that merges memories ('provider:model'); default: none."),
    ] = None,
    chroma_path: ChromaPathOption = None,
    create: CreateFlag = False,
    key_prefix: KeyPrefixOption = "tm",
    dims: Annotated[
        int, typer.Option(min=1, help="Embedding size the store was created with.")
    ] = 384,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run the forgetting graph: forget the memories the policy flags, optionally merging."""
    from rich.progress import Progress

    from langgraph_tiered_memory import create_forgetting_graph
    from langgraph_tiered_memory.ranking.forgetting import (
        DEFAULT_FORGETTING_POLICY,
        GARBAGE_COLLECT_POLICY,
    )

    presets = {"default": DEFAULT_FORGETTING_POLICY, "gc": GARBAGE_COLLECT_POLICY}
    if policy not in presets:
        raise typer.BadParameter(f"policy must be one of {sorted(presets)}, got {policy!r}.")
    themes = list(theme or [])
    merging = consolidate or bool(themes)
    if merging and embed is None:
        raise typer.BadParameter(
            "--consolidate and --theme write merged memories, which are embedded: pass"
            " --embed with the store's embeddings (e.g. --embed local)."
        )
    prefix = _gc_prefix(namespace, label)
    store = open_store(
        chroma_path=chroma_path, key_prefix=key_prefix, embed=embed, dims=dims, create=create
    )
    with reported_errors(None):  # e.g. a store written with another embedding model
        console = Console(stderr=as_json)
        try:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task("scanning memories", total=None)
                graph = create_forgetting_graph(
                    model,
                    store=store,
                    namespace=prefix,
                    policy={**presets[policy], "max_memories": max_memories},
                    dry_run=dry_run,
                    consolidate=consolidate,  # themes are merged whenever given
                    themes=themes,
                    progress=lambda n: bar.advance(task, n),
                )
                report = graph.compile().invoke({})["report"]
        finally:
            store.close()
    if as_json:
        typer.echo(json.dumps(report, allow_nan=False))
        return
    verb = "would forget" if dry_run else "forgot"
    table = Table(
        "namespace",
        "id",
        "content",
        "reason",
        title=f"gc {verb} {report['forgotten_count']} of {report['scanned']} memories",
    )
    for d in report["details"][:50]:
        table.add_row("/".join(d["namespace"]), d["id"], d["content_preview"], d["reason"])
    console.print(table)
    for merged in report["consolidated"]:
        console.print(
            f"merged {len(merged['sources'])} memories of {'/'.join(merged['namespace'])}"
            f" into {merged['key']}: {merged['content'][:80]}"
        )
