"""`tiered-memory bench triples`: precision and recall of triple extraction.

Registered on the `bench` group in `tiered_memory_benchmarks.cli`.
"""

from typing import Annotated

import typer
from rich.console import Console

from tiered_memory_benchmarks.cli_options import JsonFlag, echo_json, figures_table, log_width

__all__ = ["bench_triples"]


def bench_triples(
    model: Annotated[
        str | None,
        typer.Option(
            help="Also measure the model extractor with this init_chat_model spec"
            " (e.g. 'openai:gpt-4o-mini')."
        ),
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(help="A labelled set (JSONL) instead of the one shipped with the package."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Precision, recall and F1 of triple extraction on the labelled set.

    Strict: a triple counts when its normalised (subject, relation, object) is gold for
    its sentence. Relaxed: the relation is ignored. Micro-averaged over all sentences.
    The rule extractor always runs; --model adds the model extractor.
    """
    from langgraph_tiered_memory.errors import ConfigurationError
    from langgraph_tiered_memory.graph.extract import (
        ModelExtractor,
        RuleExtractor,
        TripleExtractor,
        resolve_extractor,
    )
    from tiered_memory_benchmarks.triples import run_triples_benchmark

    extractors: dict[str, TripleExtractor] = {"rules": RuleExtractor()}
    if model is not None:
        try:
            extractor = resolve_extractor(model)
        except ConfigurationError as e:
            raise typer.BadParameter(str(e), param_hint="--model") from e
        if not isinstance(extractor, ModelExtractor):
            raise typer.BadParameter("expected a chat model spec", param_hint="--model")
        extractors["model"] = extractor
    try:
        result = run_triples_benchmark(extractors, data)
    except (OSError, ValueError) as e:
        raise typer.BadParameter(str(e), param_hint="--data") from e
    console = log_width(Console())
    columns = (
        "extractor (split, sentences)",
        "precision",
        "recall",
        "F1",
        "relaxed P",
        "relaxed R",
        "relaxed F1",
    )
    rows = []
    for name, figures in result["extractors"].items():
        parts = [("all", figures)] + [
            (split, split_figures) for split, split_figures in figures["by_split"].items()
        ]
        for label, part in parts:
            relaxed = part["relaxed"]
            rows.append(
                [
                    f"{name} ({label}, {part.get('sentences', result['sentences'])})",
                    *(f"{part[k]:.3f}" for k in ("precision", "recall", "f1")),
                    *(f"{relaxed[k]:.3f}" for k in ("precision", "recall", "f1")),
                ]
            )
    title = (
        f"Triple extraction: {result['sentences']} sentences, {result['gold_triples']} gold triples"
    )
    caption = "strict: exact normalised (subject, relation, object); relaxed: relation ignored"
    console.print(figures_table(title, columns, rows, caption=caption))
    echo_json(result, as_json)
