"""Exceptions raised by langgraph-tiered-memory.

Every error names the problem and the fix. Errors about bad arguments subclass
`ValueError` so callers that already guard store calls with `except ValueError`
keep working.
"""

from __future__ import annotations

__all__ = [
    "TieredMemoryError",
    "ConfigurationError",
    "ChromaDirectoryInUseError",
    "InvalidItemError",
    "InvalidFilterError",
    "BackendUnavailableError",
    "NamespaceLockedError",
]


class TieredMemoryError(Exception):
    """Base class of every error raised by this package."""


class ConfigurationError(TieredMemoryError, ValueError):
    """A store or tier was configured with an invalid option."""


class ChromaDirectoryInUseError(ConfigurationError):
    """Another process holds the embedded Chroma directory (one process per directory)."""


class InvalidItemError(TieredMemoryError, ValueError):
    """An item key, value or TTL cannot be stored as given."""


class InvalidFilterError(TieredMemoryError, ValueError):
    """A search's filter or query is unusable.

    It uses an unknown operator, a bad key, a non-finite number (in strict mode), or
    text UTF-8 cannot encode.
    """


class BackendUnavailableError(TieredMemoryError, ConnectionError):
    """Redis or Chroma cannot be reached or lacks what the tier needs."""


class NamespaceLockedError(TieredMemoryError, TimeoutError):
    """A long-term namespace stayed locked by another writer past the wait bound."""
