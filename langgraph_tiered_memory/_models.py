"""Chat models shared by the summarizer, consolidation, extraction, profiles and the store.

A neutral module: it imports no graph and no store, so the store's maintenance passes
can accept a model argument without importing a prebuilt graph. It resolves a model
argument (`resolve_model`) and says what was wrong with a model's answer without
quoting it (`describe_model_error`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

MODEL_OUTPUT_ERRORS = (OutputParserException, ValidationError)
"""What a structured-output call raises when the model's answer does not fit the schema."""


def resolve_model(model: str | BaseChatModel | None) -> BaseChatModel | None:
    """The chat model for `model`: None and models as given, a string via `init_chat_model`.

    Raises:
        TypeError: `model` is neither None, a `BaseChatModel` nor a string.
    """
    if model is None or isinstance(model, BaseChatModel):
        return model
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        return init_chat_model(model)
    raise TypeError(
        f"model must be None, a BaseChatModel or an init_chat_model string, got {model!r}."
    )


def _location(loc: Sequence[int | str]) -> str:
    """A pydantic error location; a part that is no field name (a model's key) shows `?`."""
    parts = [str(p) if isinstance(p, int) or p.isidentifier() else "?" for p in loc]
    return ".".join(parts) or "<root>"


def describe_model_error(error: BaseException) -> str:
    """What was wrong with a model's answer, safe to log and to raise.

    The exception's type and, for pydantic's `ValidationError`, the schema and where
    which check failed (`ProfileFields: basics: list_type`). Never the message: pydantic
    quotes the input (`input_value=...`) and the output parsers the completion (their
    `OutputParserException` also keeps it in `llm_output`), and the model's answer may
    quote the user's personal data.

    Args:
        error: What the structured-output call (or the validation of its answer) raised.

    Returns:
        A one-line description without any of the model's text.
    """
    if isinstance(error, ValidationError):
        errors = error.errors(include_url=False, include_context=False, include_input=False)
        problems = "; ".join(f"{_location(e['loc'])}: {e['type']}" for e in errors[:5])
        more = f"; {len(errors) - 5} more" if len(errors) > 5 else ""
        return f"ValidationError: {error.title} does not validate ({problems}{more})"
    if isinstance(error, OutputParserException):
        if isinstance(error.__cause__, ValidationError):  # a parser's validation
            return f"{type(error).__name__} from {describe_model_error(error.__cause__)}"
        return f"{type(error).__name__}: the answer is not parseable"
    return type(error).__name__
