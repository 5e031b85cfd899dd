"""Chat model resolution shared by the summarizer, consolidation and the store.

A neutral module: it imports no graph and no store, so the store's maintenance passes
can accept a model argument without importing a prebuilt graph.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

__all__ = ["resolve_model"]


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
