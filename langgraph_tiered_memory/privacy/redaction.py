"""Redaction of personal data before anything is stored.

A `Redactor` is any callable taking a text and returning a `RedactionResult` (the
redacted text and what was found where). The store, the summarizer and the session
savers take one with their `redactor=` option and apply it to what they write:

- `PatternRedactor` (the default, `redactor=True`): email addresses, phone numbers,
  payment card numbers (Luhn-checked) and IBANs (mod-97 checked), with no model and
  no network;
- `PresidioRedactor`: an adapter over Microsoft Presidio's `AnalyzerEngine`, for its
  recognizers (names, locations, national ids, ...) and its NER models;
- your own: any object with `__call__(text) -> RedactionResult`.

`redact_value` applies a redactor to every string and integer of a JSON value (dict keys
are field names and are kept). Nothing here logs the text it redacts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from langgraph_tiered_memory.errors import ConfigurationError
from langgraph_tiered_memory.privacy._pii_patterns import DETECTORS, fold

__all__ = [
    "DEFAULT_KINDS",
    "REDACTIONS_FIELD",
    "Finding",
    "PatternRedactor",
    "PresidioRedactor",
    "RedactionResult",
    "Redactor",
    "RedactorSpec",
    "redact_text",
    "redact_value",
    "resolve_redactor",
]

REDACTIONS_FIELD = "redactions"
"""Field a stored value gains when something in it was redacted: `{kind: count}`."""


class Finding(NamedTuple):
    """One piece of personal data found in a text: its kind and span (`text[start:end]`)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class RedactionResult:
    """A redacted text and what was found in the original.

    Attributes:
        text: The text with every finding replaced.
        findings: What was replaced, with spans in the original text, in text order.
    """

    text: str
    findings: tuple[Finding, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        """How many findings of each kind, in order of first appearance."""
        return dict(Counter(f.kind for f in self.findings))


@runtime_checkable
class Redactor(Protocol):
    """Anything that redacts a text: `redactor(text) -> RedactionResult`."""

    def __call__(self, text: str) -> RedactionResult:
        """Return `text` with its personal data replaced, and what was found."""
        ...


RedactorSpec = Redactor | bool | Literal["default"] | None
"""What a `redactor=` option takes: None/False (off), True/"default" (`PatternRedactor()`)
or a `Redactor`."""

# Every kind needs a digit or an "@": a replacement holding one would be found again.
_FOUND_AGAIN = re.compile(r"[0-9@]")

DEFAULT_KINDS: tuple[str, ...] = ("email", "phone", "card", "iban")


# --------------------------------------------------------------------------- replacing


def _apply(
    text: str, found: Iterable[tuple[str, int, int]], replacement: Callable[[str], str]
) -> tuple[str, list[tuple[int, int, int]]]:
    """Replace non-overlapping spans; also return the edits as (start, end, new length)."""
    parts: list[str] = []
    edits: list[tuple[int, int, int]] = []
    pos = 0
    for kind, start, end in sorted(found, key=lambda f: f[1]):
        new = replacement(kind)
        parts += [text[pos:start], new]
        edits.append((start, end, len(new)))
        pos = end
    parts.append(text[pos:])
    return "".join(parts), edits


def _back(pos: int, edits: Sequence[tuple[int, int, int]], *, end: bool) -> int:
    """Map a position in an edited text back to the text before the edits."""
    shift = 0
    for start, stop, length in edits:
        out_start = start + shift
        out_stop = out_start + length
        if pos < out_start or (pos == out_start and not end):
            break
        if pos < out_stop or (pos == out_stop and end):
            return stop if end else start
        shift += length - (stop - start)
    return pos - shift


def _merge(findings: list[Finding], new: Finding) -> list[Finding]:
    """Add a finding; one overlapping earlier findings absorbs them."""
    start, end = new.start, new.end
    kept = []
    for f in findings:
        if f.start < end and start < f.end:
            start, end = min(start, f.start), max(end, f.end)
        else:
            kept.append(f)
    kept.append(Finding(new.kind, start, end))
    return kept


def _check_replacement(replacement: str, kinds: Iterable[str]) -> Callable[[str], str]:
    if not isinstance(replacement, str):
        raise ConfigurationError(
            f"replacement must be a str such as '[{{kind}}]', got {replacement!r}."
        )
    for kind in kinds:
        try:
            out = replacement.format(kind=kind)
        except (KeyError, IndexError, ValueError) as e:
            raise ConfigurationError(
                f"replacement {replacement!r} cannot be formatted: {e!r}. Use '{{kind}}' as"
                " the only placeholder, and '{{' / '}}' for literal braces."
            ) from e
        if _FOUND_AGAIN.search(fold(out).text):
            raise ConfigurationError(
                f"replacement {replacement!r} must hold no digit and no '@' (it would be"
                " found again by the detectors); use a placeholder such as '[{kind}]'."
            )
    return lambda kind: replacement.format(kind=kind)


class PatternRedactor:
    """The default redactor: regular expressions plus checksums, no model, no network.

    Detects, by kind:

    - `"email"`: `name@example.com`, in any script (`jöhn@exämple.com`);
    - `"phone"`: international numbers (`+44 20 7946 0958`, `+44-20-7946-0958`,
      `+1 (415) 555-2671`, `0044 ...`), national numbers with a trunk `0`
      (`020 7946 0958`, `06 12 34 56 78`, `0151 12345678`) and North American ones
      (`(415) 555-2671`, `415.555.2671`, `4155552671`). Dates, times, years, numbers
      of fewer than 9 digits without a `+` and card numbers are left alone;
    - `"card"`: 13 to 19 digits, optionally grouped by spaces or dashes (runs of
      them too), that pass the Luhn check;
    - `"iban"`: a country code, two check digits and up to 30 letters or digits (any
      case, optionally grouped by spaces or dashes) that pass the ISO 13616 mod-97
      check; one not in upper case also needs an account part of mostly digits.

    The detectors read the text NFKC-normalised, with the digits of every script
    (`４`, `٤`, `४`) as ASCII digits, every Unicode space (no-break, narrow, ...) as a
    space and every dash as `-`, so a fullwidth `ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ` or
    `４１１１ １１１１ １１１１ １１１１` is found too; what is replaced is the original text.

    Redaction repeats until nothing is found, so it is idempotent:
    `r(r(text).text).text == r(text).text`. Spans in the result refer to the input.

    Args:
        kinds: The kinds to detect (default: all four).
        replacement: What a finding is replaced with; `{kind}` is the kind. It may
            hold no digit (of any script) and no `@`.

    Example:
        ```python
        from langgraph_tiered_memory.privacy.redaction import PatternRedactor

        redact = PatternRedactor()
        result = redact("Mail ann@example.com or call +44 20 7946 0958 on 2024-05-01.")
        assert result.text == "Mail [email] or call [phone] on 2024-05-01."
        assert result.counts == {"email": 1, "phone": 1}
        ```
    """

    def __init__(
        self, kinds: Sequence[str] = DEFAULT_KINDS, *, replacement: str = "[{kind}]"
    ) -> None:
        if isinstance(kinds, str):
            kinds = (kinds,)
        unknown = [k for k in kinds if k not in DETECTORS]
        if unknown or not kinds:
            raise ConfigurationError(
                f"Unknown redaction kinds {unknown or list(kinds)}; choose among {list(DETECTORS)}."
            )
        self.kinds = tuple(dict.fromkeys(kinds))
        self.replacement = replacement
        self._replace = _check_replacement(replacement, self.kinds)
        self._detectors = [(k, d) for k, d in DETECTORS.items() if k in self.kinds]

    def __repr__(self) -> str:
        return f"PatternRedactor(kinds={self.kinds!r}, replacement={self.replacement!r})"

    def _detect(self, text: str) -> list[tuple[str, int, int]]:
        taken: list[tuple[str, int, int]] = []
        folded = fold(text)
        for kind, detect in self._detectors:
            for span in detect(folded.text):
                start, end = folded.origin(*span)
                if all(end <= s or start >= e for _, s, e in taken):
                    taken.append((kind, start, end))
        return taken

    def __call__(self, text: str) -> RedactionResult:
        """Redact `text`: see the class docstring for what is found."""
        if not isinstance(text, str):
            raise TypeError(f"PatternRedactor redacts str, got {type(text).__name__}.")
        findings: list[Finding] = []
        passes: list[list[tuple[int, int, int]]] = []
        current = text
        # Each pass removes at least one "@" or digit, so this ends.
        while found := self._detect(current):
            for kind, start, end in found:
                for edits in reversed(passes):
                    start, end = _back(start, edits, end=False), _back(end, edits, end=True)
                findings = _merge(findings, Finding(kind, start, end))
            current, edits = _apply(current, found, self._replace)
            passes.append(edits)
        return RedactionResult(current, tuple(sorted(findings, key=lambda f: f.start)))


# --------------------------------------------------------------------------- Presidio

_PRESIDIO_KINDS = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "card",
    "IBAN_CODE": "iban",
}


class PresidioRedactor:
    """A `Redactor` over Microsoft Presidio's `AnalyzerEngine`.

    Presidio finds the spans (`analyzer.analyze(text=..., language=..., entities=...)`
    returning results with `entity_type`, `start`, `end` and `score`); this adapter
    replaces them. Overlapping results are merged into one finding named after the
    highest-scoring one. Presidio's `EMAIL_ADDRESS`, `PHONE_NUMBER`, `CREDIT_CARD` and
    `IBAN_CODE` are reported as `email`, `phone`, `card` and `iban` (as by
    `PatternRedactor`); other entity types in lower case (`person`, `location`, ...).

    Install `presidio-analyzer` yourself. Its default engine needs a spaCy model
    (`python -m spacy download en_core_web_lg`); offline, its pattern recognizers
    (emails, cards, IBANs, phone numbers, ...) run with
    `AnalyzerEngine(nlp_engine=NoOpNlpEngine(models=[{"lang_code": "en",
    "model_name": "none"}]))`.

    Args:
        analyzer: A Presidio `AnalyzerEngine` (or anything with the same `analyze`).
        entities: Entity types to look for (default: every type the analyzer knows).
        language: Language of the texts.
        score_threshold: Ignore results scoring below this (default: the analyzer's).
        replacement: What a finding is replaced with; `{kind}` is the kind.
        kind_names: Entity type -> kind, on top of the mapping above.

    Example:
        ```python
        from types import SimpleNamespace
        from langgraph_tiered_memory.privacy.redaction import PresidioRedactor

        class Analyzer:  # stands in for presidio_analyzer.AnalyzerEngine()
            def analyze(self, text, language, entities=None, **kwargs):
                return [SimpleNamespace(entity_type="PERSON", start=0, end=3, score=0.9)]

        redact = PresidioRedactor(Analyzer(), entities=["PERSON"])
        assert redact("Ann lives here").text == "[person] lives here"
        ```
    """

    def __init__(
        self,
        analyzer: Any,
        *,
        entities: Sequence[str] | None = None,
        language: str = "en",
        score_threshold: float | None = None,
        replacement: str = "[{kind}]",
        kind_names: Mapping[str, str] | None = None,
    ) -> None:
        if not callable(getattr(analyzer, "analyze", None)):
            raise ConfigurationError(
                f"analyzer must be a Presidio AnalyzerEngine (with analyze()), got {analyzer!r}."
            )
        if isinstance(entities, str):
            entities = [entities]
        self.analyzer = analyzer
        self.entities = None if entities is None else list(entities)
        self.language = language
        self.score_threshold = score_threshold
        self.replacement = replacement
        self._names = {**_PRESIDIO_KINDS, **(kind_names or {})}
        if not isinstance(replacement, str) or "{kind}" not in replacement:
            _check_replacement(replacement, ["kind"])  # raises on a bad format
        self._replace = lambda kind: replacement.format(kind=kind)

    def __repr__(self) -> str:
        return f"PresidioRedactor(entities={self.entities!r}, language={self.language!r})"

    def _kind(self, entity_type: str) -> str:
        return self._names.get(entity_type, entity_type.lower())

    def __call__(self, text: str) -> RedactionResult:
        """Redact what the analyzer finds in `text`."""
        options: dict[str, Any] = {"text": text, "language": self.language}
        options["entities"] = self.entities
        if self.score_threshold is not None:
            options["score_threshold"] = self.score_threshold
        results = self.analyzer.analyze(**options)
        spans: list[tuple[int, int, float, str]] = []
        for r in sorted(results, key=lambda r: (r.start, -r.end)):
            start, end = int(r.start), int(r.end)
            if not 0 <= start < end <= len(text):
                continue  # an empty or out-of-range span redacts nothing
            score = float(getattr(r, "score", 1.0) or 0.0)
            if spans and start < spans[-1][1]:
                s, e, best, kind = spans[-1]
                if score > best:
                    best, kind = score, self._kind(r.entity_type)
                spans[-1] = (s, max(e, end), best, kind)
            else:
                spans.append((start, end, score, self._kind(r.entity_type)))
        new, _ = _apply(text, [(k, s, e) for s, e, _, k in spans], self._replace)
        return RedactionResult(new, tuple(Finding(k, s, e) for s, e, _, k in spans))


# --------------------------------------------------------------------------- values


def resolve_redactor(spec: Any) -> Redactor | None:
    """The redactor a `redactor=` option names.

    Args:
        spec: None or False (no redaction), True or `"default"` (`PatternRedactor()`),
            or a `Redactor`.

    Raises:
        ConfigurationError: anything else.
    """
    if spec is None or spec is False:
        return None
    if spec is True or spec == "default":
        return PatternRedactor()
    if isinstance(spec, type):
        raise ConfigurationError(
            f"redactor must be an instance, got the class {spec.__name__}: pass {spec.__name__}()."
        )
    if not isinstance(spec, str) and isinstance(spec, Redactor):
        return spec
    raise ConfigurationError(
        f"redactor must be None, True, 'default' or a Redactor (a callable returning a"
        f" RedactionResult, such as PatternRedactor()), got {spec!r}."
    )


def redact_text(text: str, redactor: Redactor) -> RedactionResult:
    """Run `redactor` on `text` and check it kept the contract.

    Raises:
        ConfigurationError: the redactor returned something other than a
            `RedactionResult` (with a str `text`).
    """
    result = redactor(text)
    if not isinstance(result, RedactionResult) or not isinstance(result.text, str):
        raise ConfigurationError(
            f"Redactor {redactor!r} returned {type(result).__name__}; a redactor must"
            " return RedactionResult(text=..., findings=(...))."
        )
    return result


def _integer(v: Any) -> bool:
    """An integer a JSON value can hold (64 bits; a bool is no number here)."""
    return isinstance(v, int) and not isinstance(v, bool) and v.bit_length() <= 64


def redact_value(
    value: Mapping[str, Any], redactor: Redactor
) -> tuple[dict[str, Any], dict[str, int]]:
    """Redact every string inside a JSON value.

    Dict keys are field names and are kept; strings in nested dicts, lists and tuples
    are redacted. An integer is read as its decimal digits: when the redactor finds
    something in them (`{"card": 4111111111111111}`), the value becomes the redacted
    string (`{"card": "[card]"}`), so a number stored as a JSON number is masked like the
    same number in a text. Other values (floats, booleans, None) are kept as they are.
    The input is not modified.

    Args:
        value: A JSON object.
        redactor: The redactor to apply to each string.

    Returns:
        The redacted copy, and how many findings of each kind it had.

    Example:
        ```python
        from langgraph_tiered_memory.privacy.redaction import PatternRedactor, redact_value

        value = {"content": "ann@example.com", "tags": ["call 020 7946 0958"], "n": 3}
        redacted, counts = redact_value(value, PatternRedactor())
        assert redacted == {"content": "[email]", "tags": ["call [phone]"], "n": 3}
        assert counts == {"email": 1, "phone": 1}
        assert redact_value({"card": 4111111111111111}, PatternRedactor())[0] == {
            "card": "[card]"
        }
        ```
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"redact_value takes a dict, got {type(value).__name__}.")
    counts: Counter[str] = Counter()

    def walk(v: Any) -> Any:
        if isinstance(v, str) or _integer(v):
            result = redact_text(str(v), redactor)
            if not result.findings:
                return v
            counts.update(f.kind for f in result.findings)
            return result.text
        if isinstance(v, Mapping):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        return v

    return walk(value), dict(counts)
