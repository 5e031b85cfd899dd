"""Namespace templates of the memory tools: labels with `{name}` placeholders.

A template such as `("memories", "{user_id}")` is filled from the run's
`config["configurable"]` only; the filled namespace must pass the store's label rules and
LangGraph's own (no NUL, no `"langgraph"` first label).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import InvalidNamespaceError

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.store._validate import validate_namespace


def check_tool_namespace(namespace: tuple[str, ...]) -> None:
    """The store's label rules plus LangGraph's own (no NUL, no "langgraph" root)."""
    validate_namespace(namespace)
    if any("\x00" in label for label in namespace):
        raise InvalidNamespaceError(f"A label of namespace {namespace} holds a NUL character.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'The first namespace label cannot be "langgraph" (reserved); got {namespace}.'
        )


class _Piece(NamedTuple):
    literal: str
    field: str | None


class NamespaceTemplate:
    """A namespace whose labels may hold `{name}` placeholders filled from the run config.

    Args:
        template: The labels, e.g. `("memories", "{user_id}")`. A placeholder is a
            plain name; `{{` and `}}` stand for literal braces.

    Raises:
        ConfigurationError: the template is empty, a placeholder is not a plain name
            (no index, attribute, conversion or format spec), or a fixed label breaks
            the namespace rules.

    Example:
        ```python
        from langgraph_tiered_memory.agent.tools import NamespaceTemplate

        template = NamespaceTemplate(("memories", "{user_id}"))
        assert template.placeholders == ("user_id",)
        config = {"configurable": {"user_id": "u1"}}
        assert template.fill(config) == ("memories", "u1")
        ```
    """

    def __init__(self, template: Sequence[str]) -> None:
        if isinstance(template, str) or not template:
            raise ConfigurationError(
                f"A memory namespace must be a non-empty tuple of labels, got {template!r};"
                " pass e.g. ('memories', '{user_id}')."
            )
        self.template: tuple[str, ...] = tuple(template)
        self._labels = [self._parse(label) for label in self.template]
        probe = tuple(
            "".join(p.literal + ("x" if p.field else "") for p in pieces) for pieces in self._labels
        )
        try:
            check_tool_namespace(probe)
        except InvalidNamespaceError as e:
            raise ConfigurationError(
                f"Memory namespace template {self.template} is not a valid namespace: {e}"
            ) from e

    def _parse(self, label: Any) -> list[_Piece]:
        if not isinstance(label, str):
            raise ConfigurationError(
                f"Memory namespace labels must be strings, got {type(label).__name__}"
                f" {label!r} in {self.template}."
            )
        pieces: list[_Piece] = []
        try:
            parsed = list(string.Formatter().parse(label))
        except ValueError as e:
            raise ConfigurationError(
                f"Memory namespace label {label!r} has unbalanced braces ({e}); write"
                " placeholders as {user_id} and literal braces as {{ and }}."
            ) from e
        for literal, field, spec, conversion in parsed:
            if field is not None and (not field.isidentifier() or spec or conversion):
                raise ConfigurationError(
                    f"Memory namespace label {label!r} has placeholder {{{field}}}: use a"
                    " plain config key such as {user_id} (no index, attribute, conversion"
                    " or format spec)."
                )
            pieces.append(_Piece(literal, field))
        return pieces

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The config keys the template reads, in order of first use."""
        seen = (p.field for pieces in self._labels for p in pieces if p.field)
        return tuple(dict.fromkeys(seen))

    def fill(self, config: RunnableConfig | None) -> tuple[str, ...]:
        """The namespace for a run.

        Raises:
            ConfigurationError: a placeholder's key is missing from
                `config["configurable"]`, its value is not a non-empty string, or the
                filled namespace breaks the store's label rules.
        """
        configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
        labels: list[str] = []
        for pieces in self._labels:
            parts: list[str] = []
            for piece in pieces:
                parts.append(piece.literal)
                if piece.field is not None:
                    parts.append(self._value(configurable, piece.field))
            labels.append("".join(parts))
        namespace = tuple(labels)
        try:
            check_tool_namespace(namespace)
        except InvalidNamespaceError as e:
            keys = ", ".join(f"config['configurable'][{k!r}]" for k in self.placeholders)
            raise ConfigurationError(
                f"The memory namespace {self.template} filled from {keys} is not a valid"
                f" namespace: {e} Use ids without periods, NUL or unpaired surrogates."
            ) from e
        return namespace

    def _value(self, configurable: Mapping[str, Any], key: str) -> str:
        if key not in configurable:
            raise ConfigurationError(
                f"The memory namespace {self.template} needs config['configurable'][{key!r}],"
                f" which this run does not have. Invoke the graph with"
                f" config={{'configurable': {{{key!r}: ...}}}}."
            )
        value = configurable[key]
        if not isinstance(value, str) or not value:
            raise ConfigurationError(
                f"config['configurable'][{key!r}] must be a non-empty string to fill the"
                f" memory namespace {self.template}, got {type(value).__name__} {value!r};"
                " convert it with str() first."
            )
        return value

    def __repr__(self) -> str:
        return f"NamespaceTemplate({self.template!r})"
