"""Validation and encoding of what a batch writes or reads, before any backend sees it.

Namespaces, keys, values, TTLs, embedding vectors and the text of searches are checked
here, so a bad op fails the batch before anything is written; `encode_value` turns a
checked value into the JSON the tiers store. Nothing here does I/O.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from langgraph.store.base import InvalidNamespaceError

from langgraph_tiered_memory.errors import ConfigurationError, InvalidFilterError, InvalidItemError
from langgraph_tiered_memory.store.tiers._items import Namespace

MAX_KEY_BYTES = 1024
"""Longest item key accepted, in UTF-8 bytes."""

MAX_LABEL_BYTES = 256
"""Longest namespace label accepted, in UTF-8 bytes."""

MAX_VALUE_DEPTH = 100
"""Deepest nesting of dicts and lists accepted in an item value (the value itself is 1)."""

MAX_TTL_MINUTES = 100 * 365 * 24 * 60
"""Longest TTL accepted, in minutes: 100 years (52,560,000 minutes).

Well within what the tiers can hold: Redis refuses a `PX` expiry that, added to the
current time in milliseconds, passes 2**63 - 1 (about 1.5e14 minutes), and expiry
timestamps must convert to datetimes (before year 10000, e.g. in user exports). Checked
before anything of a batch is written. For no expiry, pass `ttl=None`.
"""


def validate_namespace(namespace: Any) -> Namespace:
    """Check a namespace used for a write and return it as a tuple.

    Raises:
        InvalidNamespaceError: the namespace is empty, has a non-string, empty or
            dotted label, a label holding a NUL character or a surrogate code point
            (not UTF-8 encodable), or a label longer than `MAX_LABEL_BYTES`.
    """
    if isinstance(namespace, list):
        namespace = tuple(namespace)
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(
            f"Namespace must be a tuple of strings, got {type(namespace).__name__}:"
            f" {namespace!r}. Pass e.g. ('users', 'u1')."
        )
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty. Pass e.g. ('users', 'u1').")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels must be strings,"
                f" got {type(label).__name__}."
            )
        if not label:
            raise InvalidNamespaceError(
                f"Namespace labels cannot be empty strings. Got {namespace}."
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain"
                " periods ('.'). Split it into separate labels instead."
            )
        _check_label_text(label, namespace)
        if len(label.encode("utf-8")) > MAX_LABEL_BYTES:
            raise InvalidNamespaceError(
                f"Namespace label {label[:40]!r}... is longer than {MAX_LABEL_BYTES} bytes."
                " Use a shorter label, e.g. a hash of it."
            )
    return namespace


def check_labels(labels: Iterable[Any], what: str = "Namespace") -> None:
    """Check that the labels of a namespace or prefix used for a read could be stored.

    Reads accept any namespace a write would (and more: prefixes, `"*"` wildcards);
    only text no write accepts (like LangGraph's `validate_op_namespace`, NUL) or no
    backend can store or look up is refused.

    Raises:
        InvalidNamespaceError: a label holds a NUL character or a surrogate code point.
    """
    labels = tuple(labels)
    for label in labels:
        if isinstance(label, str):
            _check_label_text(label, labels, what)


def _check_label_text(label: str, namespace: Sequence[Any], what: str = "Namespace") -> None:
    if "\x00" in label:
        # LangGraph's own put/get/delete/search refuse NUL too (`validate_op_namespace`).
        raise InvalidNamespaceError(
            f"{what} label {_short(label)} in {tuple(namespace)!r} holds a NUL character"
            " ('\\x00'), which namespace labels cannot contain. Remove it first, e.g. with"
            " label.replace('\\x00', '')."
        )
    if _SURROGATE.search(label):
        raise InvalidNamespaceError(
            f"{what} label {_short(label)} in {tuple(namespace)!r} cannot be encoded as UTF-8."
            f" {SURROGATE_FIX}"
        )


_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_FIX = (
    "A surrogate code point (U+D800-U+DFFF) is not a character and UTF-8 cannot encode it"
    " (it is left e.g. by decoding bytes with errors='surrogateescape' or by JSON with an"
    " unpaired \\u escape). Replace it first, e.g. with"
    " text.encode('utf-8', 'replace').decode('utf-8')."
)
"""How to fix text holding a surrogate code point (for error messages)."""


def find_bad_text(
    root: Any, *, max_depth: int, str_keys: bool
) -> tuple[Literal["text", "depth", "key"], str] | None:
    """Find the first thing in a JSON-like tree that cannot be stored.

    Walks dicts, lists and tuples iteratively (it never recurses, so any depth is
    safe). Locations in the description read like `$.a[2].b`.

    Returns:
        None when all is well, else the kind of problem and a description of it:
        `"text"`, a string or dict key UTF-8 cannot encode; `"depth"`, nesting deeper
        than `max_depth` containers (`root` is level 1); `"key"` (only with
        `str_keys`), a dict key that is not a string.
    """
    # Entries: (node, depth, parent entry, step from the parent); paths are built on failure.
    stack: list[tuple[Any, int, Any, str]] = [(root, 1, None, "$")]
    while stack:
        entry = stack.pop()
        node, depth = entry[0], entry[1]
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return "text", f"the string {_short(node)} at {_path(entry)}"
            continue
        children: Iterable[tuple[str, Any]]
        if isinstance(node, dict):
            for k in node:
                if isinstance(k, str):
                    if _SURROGATE.search(k):
                        return "text", f"the dict key {_short(k)} at {_path(entry)}"
                elif str_keys:
                    shown = f" {k!r}" if isinstance(k, (int, float, type(None))) else ""
                    return "key", (
                        f"the dict key{shown} at {_path(entry)} has type {type(k).__name__},"
                        " not str"
                    )
            children = (
                (f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{_short(k)}]", v)
                for k, v in node.items()
            )
        elif isinstance(node, (list, tuple)):
            children = ((f"[{i}]", v) for i, v in enumerate(node))
        else:
            continue
        if depth > max_depth:
            return "depth", (
                f"it is nested deeper than {max_depth} levels of dicts and lists"
                f" (at {_path(entry)})"
            )
        stack.extend((child, depth + 1, entry, step) for step, child in children)
    return None


def _short(text: Any) -> str:
    if not isinstance(text, str):
        return f"<{type(text).__name__}>"
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "..."


def _path(entry: tuple[Any, int, Any, str]) -> str:
    steps: list[str] = []
    node: Any = entry
    while node is not None:
        steps.append(node[3] if len(node[3]) <= 40 else node[3][:37] + "...")
        node = node[2]
    path = "".join(reversed(steps))
    return path if len(path) <= 80 else path[:40] + "..." + path[-37:]


def validate_key(key: Any) -> str:
    """Check an item key.

    Raises:
        InvalidItemError: the key is not a string, holds a surrogate code point (not
            UTF-8 encodable) or is longer than `MAX_KEY_BYTES`.
    """
    if not isinstance(key, str):
        raise InvalidItemError(
            f"Item key must be a string, got {type(key).__name__}: {key!r}."
            " Convert it with str() first."
        )
    if _SURROGATE.search(key):
        raise InvalidItemError(
            f"Item key {_short(key)} cannot be encoded as UTF-8. {SURROGATE_FIX}"
        )
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidItemError(
            f"Item key {key[:40]!r}... is {len(key.encode('utf-8'))} bytes long; the limit is"
            f" {MAX_KEY_BYTES} bytes. Use a shorter key, e.g. a hash of the long one, and keep"
            " the long text in the value."
        )
    return key


def check_value(namespace: Namespace, key: str, value: Any) -> None:
    """Check an item value's type, depth and text before anything reads into it.

    The value is walked iteratively, so a deeply nested value fails with this error,
    never with `RecursionError`.

    Raises:
        InvalidItemError: the value is not a dict, is nested deeper than
            `MAX_VALUE_DEPTH` levels, has a non-string dict key, or holds a string or
            dict key UTF-8 cannot encode (a surrogate code point).
    """
    if not isinstance(value, dict):
        raise InvalidItemError(
            f"Value of item {key!r} in {namespace} must be a dict, got {type(value).__name__}."
            " Wrap it, e.g. {'content': value}."
        )
    # json.dumps silently turns int/float/bool/None dict keys into strings, which would
    # change the value on the way back: refuse them (str_keys) instead.
    problem = find_bad_text(value, max_depth=MAX_VALUE_DEPTH, str_keys=True)
    if problem is None:
        return
    kind, where = problem
    if kind == "text":
        detail = f"{where} cannot be encoded as UTF-8. {SURROGATE_FIX}"
    elif kind == "depth":
        detail = (
            f"{where}. Values may nest at most {MAX_VALUE_DEPTH} levels of dicts and lists:"
            " flatten the structure, or store the deep part as a JSON string."
        )
    else:
        detail = f"{where}. Values are JSON objects: convert the key with str() first."
    raise InvalidItemError(f"Value of item {key!r} in {namespace} cannot be stored: {detail}")


def encode_value(namespace: Namespace, key: str, value: Any, *, checked: bool = False) -> str:
    """Validate an item value and return it as compact JSON.

    Args:
        namespace: The item's namespace (for messages).
        key: The item's key (for messages).
        value: The value to store.
        checked: The value already passed `check_value`; skip that walk.

    Raises:
        InvalidItemError: `check_value` refuses the value, or it holds something JSON
            cannot represent (objects, bytes, sets, NaN or infinite floats).
    """
    if not checked:
        check_value(namespace, key, value)
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise InvalidItemError(
            f"Value of item {key!r} in {namespace} is not JSON-serialisable: {e}."
            " Store only dicts of str, int, float (finite), bool, None, lists and dicts;"
            " convert datetimes to ISO strings and objects to dicts first."
        ) from e


def check_search_text(query: Any, filter: Any) -> None:
    """Check the text of a search's query and filter before it reaches a backend.

    Raises:
        InvalidFilterError: the query, or a key or string of the filter, holds a
            surrogate code point (not UTF-8 encodable), or the filter nests deeper
            than `MAX_VALUE_DEPTH` + 1 levels (no stored value could match it).
    """
    if isinstance(query, str) and _SURROGATE.search(query):
        raise InvalidFilterError(
            f"Search query {_short(query)} cannot be encoded as UTF-8. {SURROGATE_FIX}"
        )
    if filter is None:
        return
    problem = find_bad_text(filter, max_depth=MAX_VALUE_DEPTH + 1, str_keys=False)
    if problem is not None:
        kind, where = problem
        detail = (
            f"{where} cannot be encoded as UTF-8. {SURROGATE_FIX}"
            if kind == "text"
            else f"{where}. Stored values nest at most {MAX_VALUE_DEPTH} levels, so no item"
            " can match it."
        )
        raise InvalidFilterError(f"Search filter cannot be used: {detail}")


def validate_ttl(ttl: Any) -> float | None:
    """Check a TTL in minutes (None means no expiry).

    Raises:
        InvalidItemError: the TTL is not a positive finite number, or is longer than
            `MAX_TTL_MINUTES`.
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl):
        raise InvalidItemError(f"TTL must be a positive number of minutes or None, got {ttl!r}.")
    if ttl <= 0:
        raise InvalidItemError(
            f"TTL must be a positive number of minutes, got {ttl!r}. Use None for no expiry"
            " or delete the item instead."
        )
    if ttl > MAX_TTL_MINUTES:
        raise InvalidItemError(
            f"TTL of {ttl!r} minutes is longer than the maximum, {MAX_TTL_MINUTES:,} minutes"
            " (100 years). Pass ttl=None for no expiry, or a shorter TTL."
        )
    return float(ttl)


_FLOAT32_MAX = float(np.finfo(np.float32).max)
"""Largest magnitude a vector entry may have: both tiers store vectors as float32."""

_MODEL_FIX = (
    "Check the embedding model (index['embed']): it must return, for each text, one list"
    " of finite floats."
)
"""How to fix bad embeddings (for error messages)."""


def check_vectors(
    vectors: Sequence[Any], *, dims: int, what: str, count: int | None = None
) -> None:
    """Check what an embedding model returned before any of it is stored or searched.

    Cheap enough for every batch: one pass over each vector's entry types (in C),
    then a vectorised range check.

    Args:
        vectors: The model's output.
        dims: The size every vector must have (`index['dims']`).
        what: What the vectors embed, for messages (e.g. `"stored items"`).
        count: How many texts were embedded (None: not checked).

    Raises:
        ConfigurationError: the model returned another number of vectors than
            `count`, a vector that is not a sequence of real numbers (an entry is a
            string, None, a bool...), a vector of another size than `dims`, or a
            vector holding NaN, an infinity or a number float32 cannot hold.
    """
    if count is not None and len(vectors) != count:
        raise ConfigurationError(
            f"The embedding model returned {_count(len(vectors), 'vector')} for"
            f" {_count(count, 'text')} of {what}; it must return exactly one vector per"
            f" text, in order. {_MODEL_FIX}"
        )
    for i, vector in enumerate(vectors):
        arr = _as_real_array(vector, i, what)
        if arr.shape != (dims,):
            raise ConfigurationError(
                f"The embedding model returned {len(arr)}-dimensional vectors for {what},"
                f" but index['dims'] is {dims}. Set dims to the model's output size."
            )
        # NaN fails every comparison, so this one test catches NaN, inf and overflow.
        if not bool(np.all(np.abs(arr) <= _FLOAT32_MAX)):
            j = int(np.argmin(np.abs(arr) <= _FLOAT32_MAX))
            bad = float(arr[j])
            found = (
                "NaN"
                if math.isnan(bad)
                else "an infinity"
                if math.isinf(bad)
                else f"{bad!r} (beyond float32, the type the tiers store)"
            )
            raise ConfigurationError(
                f"The embedding model returned a vector for {what} holding {found}"
                f" (vector {i}, entry {j}); vectors must hold finite numbers. {_MODEL_FIX}"
            )


def _as_real_array(vector: Any, i: int, what: str) -> np.ndarray[Any, Any]:
    """One vector as a float64 array, or ConfigurationError naming the bad entry."""
    if isinstance(vector, np.ndarray):
        if vector.ndim == 1 and vector.dtype.kind in "fiu":
            return vector.astype(np.float64, copy=False)
        problem = f"an array of dtype {vector.dtype} and shape {vector.shape}"
    elif isinstance(vector, Sequence) and not isinstance(vector, (str, bytes)):
        types = set(map(type, vector))
        bad = [t for t in types if not _is_real_type(t)]
        if not bad:
            try:
                return np.asarray(vector, dtype=np.float64)
            except OverflowError:  # an int beyond float64
                problem = "an integer too large for a float"
        else:
            j, entry = next((j, x) for j, x in enumerate(vector) if type(x) in bad)
            problem = f"entry {j} of type {type(entry).__name__} ({_short_repr(entry)})"
    else:
        problem = f"a {type(vector).__name__}, not a list of numbers"
    raise ConfigurationError(
        f"The embedding model returned a vector for {what} that is not a list of real"
        f" numbers (vector {i}: {problem}). {_MODEL_FIX}"
    )


def _is_real_type(t: type) -> bool:
    """Whether entries of type `t` are real numbers (bool subclasses int but is refused)."""
    if t is float or t is int:
        return True
    return issubclass(t, numbers.Real) and not issubclass(t, (bool, np.bool_))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _short_repr(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."
