"""Redaction: the default detector (examples and properties), Presidio, values, MemoryEntry."""

from __future__ import annotations

import logging
import string
import unicodedata
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_tiered_memory.agent.summarizer import (
    SummarizationNode,
    asummarize_messages,
    summarize_messages,
)
from langgraph_tiered_memory.errors import ConfigurationError, InvalidItemError
from langgraph_tiered_memory.memory import MemoryEntry
from langgraph_tiered_memory.privacy.redaction import (
    Finding,
    PatternRedactor,
    PresidioRedactor,
    RedactionResult,
    Redactor,
    redact_value,
    resolve_redactor,
)
from langgraph_tiered_memory.store.planning import PlanConfig, plan

REDACT = PatternRedactor()

# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ann.lee+work@mail.example.co.uk", "email"),
        ("+44 20 7946 0958", "phone"),
        ("+1 (415) 555-2671", "phone"),
        ("+4915112345678", "phone"),
        ("+44 (0)20 7946 0958", "phone"),
        ("0044 20 7946 0958", "phone"),
        ("020 7946 0958", "phone"),
        ("06 12 34 56 78", "phone"),
        ("0151 12345678", "phone"),
        ("(415) 555-2671", "phone"),
        ("415.555.2671", "phone"),
        ("4155552671", "phone"),
        ("4111 1111 1111 1111", "card"),
        ("5500-0000-0000-0004", "card"),
        ("378282246310005", "card"),
        ("3782 822463 10005", "card"),
        ("DE89 3704 0044 0532 0130 00", "iban"),
        ("GB82WEST12345698765432", "iban"),
        ("FR1420041010050500013M02606", "iban"),
    ],
)
def test_each_kind_is_found_and_replaced(text: str, kind: str) -> None:
    result = REDACT(f"see {text}, thanks")
    assert result.text == f"see [{kind}], thanks"
    assert result.findings == (Finding(kind, 4, 4 + len(text)),)
    assert result.counts == {kind: 1}


@pytest.mark.parametrize(
    "text",
    [
        "on 2024-01-15 at 12:30:45, in 1999 and 2001",
        "15/01/2024 10:30",
        "15.01.2024 10",
        "01-02-2024 10",
        "years 1999 2000 2001",
        "10 20 30 40 50",
        "42 items, 12345 steps, 1,234,567 views",
        "pi is 3.14159265358979 and 0.1234567890",
        "4111 1111 1111 1112",  # fails the Luhn check
        "12345 67890 12345",  # short numbers that pass Luhn but are not laid out as a card
        "GB82 WEST 1234 5698 7654 33",  # fails the mod-97 check
        "ip 192.168.100.200, isbn 978-3-16-148410-0, v1.2.3",
        "user@localhost and @handle",
    ],
)
def test_dates_times_years_short_numbers_and_bad_checksums_are_kept(text: str) -> None:
    assert REDACT(text) == RedactionResult(text, ())


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("４１１１ １１１１ １１１１ １１１１", "card"),  # fullwidth digits
        ("٤١١١ ١١١١ ١١١١ ١١١١", "card"),  # Arabic-Indic digits
        ("४१११-११११-११११-११११", "card"),  # Devanagari digits
        ("4111\u00a01111\u00a01111\u00a01111", "card"),  # no-break spaces
        ("4111\u202f1111\u202f1111\u202f1111", "card"),  # narrow no-break spaces
        ("4111  1111  1111  1111", "card"),  # two spaces
        ("4111 \u2013 1111 \u2013 1111 \u2013 1111", "card"),  # en dashes between spaces
        ("4111\u200b1111\u200b1111\u200b1111", "card"),  # zero-width spaces
        ("+44-20-7946-0958", "phone"),  # a date's dashes, but after a "+"
        ("+44\u00a020\u00a07946\u00a00958", "phone"),
        ("＋４４ ２０ ７９４６ ０９５８", "phone"),
        ("ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ", "email"),
        ("jöhn@exämple.com", "email"),
        ("jo\u0308hn@exa\u0308mple.com", "email"),  # decomposed: o + combining diaeresis
        ("иван@пример.рф", "email"),
        ("john_doe@example.com", "email"),
        ("gb82 west 1234 5698 7654 32", "iban"),
        ("GB82-WEST-1234-5698-7654-32", "iban"),
        ("de89370400440532013000", "iban"),
        ("ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００", "iban"),
    ],
)
def test_personal_data_is_found_however_its_characters_are_written(text: str, kind: str) -> None:
    result = REDACT(f"see {text}, thanks")
    assert result.text == f"see [{kind}], thanks"
    assert result.findings == (Finding(kind, 4, 4 + len(text)),)


def test_an_address_glued_to_text_without_spaces_is_cut_where_the_script_changes() -> None:
    assert REDACT("メールはann@example.comです").text == "メールは[email]です"
    assert REDACT("連絡先：山田@例え.jp").text == "連絡先：[email]"


def test_a_replacement_with_a_digit_of_any_script_is_refused() -> None:
    for replacement in ("[{kind}٣]", "[{kind}３]", "<{kind}＠>"):
        with pytest.raises(ConfigurationError, match="no digit"):
            PatternRedactor(replacement=replacement)


def test_a_number_glued_to_other_numbers_is_still_found() -> None:
    assert REDACT("order 2024 4111 1111 1111 1111").text == "order 2024 [card]"
    assert REDACT("born 1990 415 555 2671").text == "born 1990 [phone]"
    assert REDACT("IBAN DE89 3704 0044 0532 0130 00 THANKS").text == "IBAN [iban] THANKS"


def test_kinds_and_replacement_are_configurable() -> None:
    only_email = PatternRedactor(["email"], replacement="<{kind}>")
    assert only_email("a@b.io 4111 1111 1111 1111").text == "<email> 4111 1111 1111 1111"
    with pytest.raises(ConfigurationError, match="Unknown redaction kinds"):
        PatternRedactor(["ssn"])
    with pytest.raises(ConfigurationError, match="no digit"):
        PatternRedactor(replacement="#{kind}1")
    with pytest.raises(ConfigurationError, match="placeholder"):
        PatternRedactor(replacement="[{name}]")


def test_spans_refer_to_the_input_even_when_a_second_pass_is_needed() -> None:
    # The card's last digit hides the phone's "+" in pass one; pass two finds "+1".
    text = "x 4111111111111111+1 415 555 2671 y"
    result = REDACT(text)
    assert REDACT(result.text).text == result.text
    for f in result.findings:
        assert text[f.start : f.end].strip()
    assert sum(f.end - f.start for f in result.findings) <= len(text)


# --------------------------------------------------------------------------- properties


def _luhn_complete(body: str) -> str:
    for check in string.digits:
        digits = body + check
        total = 0
        for i, ch in enumerate(reversed(digits)):
            d = int(ch) * (2 if i % 2 else 1)
            total += d - 9 if d > 9 else d
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


@st.composite
def cards(draw: Any) -> str:
    n = draw(st.integers(min_value=13, max_value=19))
    body = draw(st.text(alphabet=string.digits, min_size=n - 1, max_size=n - 1))
    digits = _luhn_complete(body)
    sep = draw(st.sampled_from(["", " ", "-"]))
    return sep.join(digits[i : i + 4] for i in range(0, n, 4)) if sep else digits


@st.composite
def ibans(draw: Any) -> str:
    country = draw(st.text(alphabet=string.ascii_uppercase, min_size=2, max_size=2))
    lower = draw(st.booleans())
    if lower:  # as real account parts are: mostly digits (a bank code, an account number)
        bank = draw(st.text(alphabet=string.ascii_uppercase, max_size=4))
        bban = bank + draw(st.text(alphabet=string.digits, min_size=11, max_size=26))
    else:
        alphabet = string.ascii_uppercase + string.digits
        bban = draw(st.text(alphabet=alphabet, min_size=11, max_size=30))
    numeric = int("".join(str(int(ch, 36)) for ch in bban + country + "00"))
    compact = f"{country}{98 - numeric % 97:02d}{bban}"
    if lower:
        compact = compact.lower()
    sep = draw(st.sampled_from(["", " ", "-", "  "]))
    return sep.join(compact[i : i + 4] for i in range(0, len(compact), 4)) if sep else compact


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=string.ascii_lowercase, min_size=2, max_size=2),
    st.integers(min_value=2, max_value=98),
    st.lists(st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=9), max_size=8),
)
def test_lower_case_words_after_a_letters_and_digits_token_are_no_iban(
    letters: str, check: int, words: list[str]
) -> None:
    text = " ".join([f"{letters}{check:02d}", *words])
    assert REDACT(text) == RedactionResult(text, ())


_LOCAL = string.ascii_letters + string.digits + "._%+-"
_LABEL = string.ascii_lowercase + string.digits + "-"


@st.composite
def emails(draw: Any) -> str:
    local = draw(st.text(alphabet=_LOCAL, min_size=1, max_size=20))
    labels = draw(st.lists(st.text(alphabet=_LABEL, min_size=1, max_size=10), min_size=1))
    tld = draw(st.text(alphabet=string.ascii_letters, min_size=2, max_size=6))
    return f"{local}@{'.'.join(labels)}.{tld}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.one_of(cards(), ibans(), emails()), st.text())
def test_a_card_iban_or_email_in_random_text_is_always_removed(
    before: str, secret: str, after: str
) -> None:
    result = REDACT(f"{before} {secret} {after}")
    assert secret not in result.text
    assert result.findings


def _no_digit_nor_at(ch: str) -> bool:
    return not any(c.isdecimal() or c == "@" for c in unicodedata.normalize("NFKC", ch))


# Text that holds none of them: no digit of any script and no "@", even once normalised
# ("²" is a 2, "＠" an @); every kind needs one.
_PLAIN = st.text(alphabet=st.characters(blacklist_categories=["Cs"]).filter(_no_digit_nor_at))


@st.composite
def cards_in_any_script(draw: Any) -> tuple[str, str]:
    """A Luhn-valid 16-digit card (ASCII) and how it is written: each digit in any
    script, groups of four joined by runs of Unicode spaces and dashes (or not)."""
    digits = _luhn_complete(draw(st.text(alphabet=string.digits, min_size=15, max_size=15)))
    scripts = draw(st.lists(st.characters(categories=["Nd"]), min_size=16, max_size=16))
    # Decimal digits come in runs of ten from 0 to 9: a script's zero is c - value(c).
    written = [
        chr(ord(c) - unicodedata.decimal(c) + int(d)) for c, d in zip(scripts, digits, strict=True)
    ]
    gaps = st.text(alphabet=st.characters(categories=["Zs", "Pd"]), min_size=1, max_size=3)
    if not draw(st.booleans()):
        return digits, "".join(written)
    groups = ["".join(written[i : i + 4]) for i in range(0, 16, 4)]
    text = groups[0]
    for group in groups[1:]:
        text += draw(gaps) + group
    return digits, text


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"])))
def test_every_folded_character_maps_back_to_the_characters_it_came_from(text: str) -> None:
    from langgraph_tiered_memory.privacy._pii_patterns import fold

    folded = fold(text)
    last = 0
    for k, ch in enumerate(folded.text):
        start, end = folded.origin(k, k + 1)
        assert last <= start < end <= len(text)
        assert ch in fold(text[start:end]).text
        last = start
    if not folded.text:
        return
    start, end = folded.origin(0, len(folded.text))
    assert fold(text[start:end]).text == folded.text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_PLAIN, cards_in_any_script(), _PLAIN)
def test_a_card_in_any_digits_and_spacing_is_masked_and_the_rest_kept_as_is(
    before: str, card: tuple[str, str], after: str
) -> None:
    digits, written = card
    result = REDACT(f"{before} {written} {after}")
    assert result.text == f"{before} [card] {after}"
    start = len(before) + 1
    assert result.findings == (Finding("card", start, start + len(written)),)
    assert result.counts == {"card": 1} and digits not in result.text


_DATES = st.dates().map(
    lambda d: d.strftime(
        {0: "%Y-%m-%d", 1: "%d/%m/%Y", 2: "%d.%m.%Y", 3: "%m-%d-%Y"}[d.toordinal() % 4]
    )
)
_TIMES = st.times().map(lambda t: t.strftime("%H:%M" if t.second % 2 else "%H:%M:%S"))
_SHORT = st.integers(min_value=0, max_value=999_999).map(str)
_YEARS = st.integers(min_value=1900, max_value=2100).map(str)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PLAIN, _DATES, _TIMES, _SHORT, _YEARS), max_size=12))
def test_text_without_personal_data_is_unchanged(parts: list[str]) -> None:
    text = ", ".join(parts)
    assert REDACT(text) == RedactionResult(text, ())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(), cards(), ibans(), emails(), st.text(alphabet=string.digits + " -+().")
        ),
        max_size=6,
    )
)
def test_redaction_is_idempotent(parts: list[str]) -> None:
    once = REDACT(" ".join(parts))
    assert REDACT(once.text) == RedactionResult(once.text, ())


# --------------------------------------------------------------------------- values


def test_redact_value_masks_an_integer_whose_digits_are_personal_data() -> None:
    value = {
        "card": 4111111111111111,
        "nested": [{"phone": 4155552671}, -5500000000000004],
        "count": 12,
        "year": 2024,
        "flag": True,
        "ratio": 4111111111111111.0,
    }
    redacted, counts = redact_value(value, REDACT)
    assert redacted == {
        "card": "[card]",
        "nested": [{"phone": "[phone]"}, "-[card]"],
        "count": 12,
        "year": 2024,
        "flag": True,
        "ratio": 4111111111111111.0,
    }
    assert counts == {"card": 2, "phone": 1}
    assert type(redacted["count"]) is int  # numbers without findings keep their type


def test_redact_value_redacts_every_string_and_keeps_keys_and_the_input() -> None:
    value = {
        "content": "mail ann@example.com",
        "nested": {"list": ["4111 1111 1111 1111", 7, None, ("+44 20 7946 0958",)]},
        "bob@example.com": True,
    }
    original = repr(value)
    redacted, counts = redact_value(value, REDACT)
    assert redacted == {
        "content": "mail [email]",
        "nested": {"list": ["[card]", 7, None, ("[phone]",)]},
        "bob@example.com": True,  # field names are not redacted
    }
    assert counts == {"email": 1, "card": 1, "phone": 1}
    assert repr(value) == original


def test_resolve_redactor() -> None:
    assert resolve_redactor(None) is None and resolve_redactor(False) is None
    assert isinstance(resolve_redactor(True), PatternRedactor)
    assert isinstance(resolve_redactor("default"), PatternRedactor)
    assert resolve_redactor(REDACT) is REDACT
    assert isinstance(REDACT, Redactor)
    with pytest.raises(ConfigurationError, match="pass PatternRedactor()"):
        resolve_redactor(PatternRedactor)
    for bad in ("presidio", 3):
        with pytest.raises(ConfigurationError, match="redactor must be"):
            resolve_redactor(bad)


def test_a_redactor_breaking_the_contract_fails_loudly() -> None:
    with pytest.raises(ConfigurationError, match="must return RedactionResult"):
        redact_value({"a": "x"}, lambda text: text.upper())  # type: ignore[arg-type,return-value]


def test_redaction_never_logs_the_text(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    REDACT("ann@example.com 4111 1111 1111 1111")
    redact_value({"c": "ann@example.com"}, REDACT)
    assert "ann@example.com" not in caplog.text and "4111" not in caplog.text


# --------------------------------------------------------------------------- Presidio


class _Result:
    """A result shaped like Presidio's `RecognizerResult`."""

    def __init__(self, entity_type: str, start: int, end: int, score: float) -> None:
        self.entity_type, self.start, self.end, self.score = entity_type, start, end, score


class _Analyzer:
    """Follows `AnalyzerEngine.analyze(text=..., language=..., entities=...)`."""

    def __init__(self, results: list[_Result]) -> None:
        self.results = results
        self.calls: list[dict[str, Any]] = []

    def analyze(self, **kwargs: Any) -> list[_Result]:
        self.calls.append(kwargs)
        return self.results


def test_presidio_adapter_replaces_merged_results_and_names_kinds() -> None:
    text = "Ann Lee, ann@example.com"
    analyzer = _Analyzer(
        [
            _Result("EMAIL_ADDRESS", 9, 24, 1.0),
            _Result("URL", 13, 24, 0.5),  # overlaps the email: merged into it
            _Result("PERSON", 0, 7, 0.85),
        ]
    )
    redact = PresidioRedactor(analyzer, entities=["PERSON", "EMAIL_ADDRESS"], language="de")
    result = redact(text)
    assert result.text == "[person], [email]"
    assert result.findings == (Finding("person", 0, 7), Finding("email", 9, 24))
    assert analyzer.calls == [
        {"text": text, "language": "de", "entities": ["PERSON", "EMAIL_ADDRESS"]}
    ]
    with pytest.raises(ConfigurationError, match="AnalyzerEngine"):
        PresidioRedactor(object())


def test_presidio_analyzer_runs_as_a_drop_in_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import presidio_analyzer as presidio
    import tldextract
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    # Presidio's email check asks tldextract, whose default first fetches the public
    # suffix list; use the snapshot bundled with the package instead (no network).
    offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    monkeypatch.setattr(tldextract, "extract", offline)

    engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    redact = PresidioRedactor(
        presidio.AnalyzerEngine(nlp_engine=engine),
        entities=["EMAIL_ADDRESS", "CREDIT_CARD", "IBAN_CODE"],
    )
    text = "mail ann@example.com, card 4111 1111 1111 1111, DE89 3704 0044 0532 0130 00"
    result = redact(text)
    assert result.text == "mail [email], card [card], [iban]"
    assert result.counts == {"email": 1, "card": 1, "iban": 1}
    assert redact_value({"c": text}, redact)[1] == {"email": 1, "card": 1, "iban": 1}


# --------------------------------------------------------------------------- planning


def _plan_put(value: dict[str, Any], redactor: Any) -> dict[str, Any]:
    from langgraph.store.base import PutOp

    cfg = PlanConfig(tier_for=lambda ns: "long", memory_mode=True, redactor=redactor)
    ns, key = ("users", "tel 020 7946 0958"), "4111 1111 1111 1111"
    (write,) = plan([PutOp(ns, key, value)], cfg).writes
    assert (write.namespace, write.key) == (ns, key)  # never altered
    assert write.value is not None and write.encoded is not None
    assert "4111" not in write.encoded
    return write.value


def test_planning_redacts_put_values_and_reports_counts() -> None:
    value = {"content": "card 4111 1111 1111 1111, mail a@b.io", "importance": 0.7}
    stored = _plan_put(value, REDACT)
    assert stored == {
        "content": "card [card], mail [email]",
        "importance": 0.7,
        "redactions": {"card": 1, "email": 1},
    }
    # A stored value put again keeps its report and adds new findings to it.
    again = _plan_put({**stored, "note": "call 020 7946 0958, card 4111111111111111"}, REDACT)
    assert again["redactions"] == {"card": 2, "email": 1, "phone": 1}


def test_planning_without_redactor_stores_the_value_as_given() -> None:
    from langgraph.store.base import PutOp

    cfg = PlanConfig(tier_for=lambda ns: "long")
    value = {"content": "card 4111 1111 1111 1111"}
    (write,) = plan([PutOp(("u",), "k", value)], cfg).writes
    assert write.value == value


def test_a_user_field_named_redactions_is_refused_with_a_redactor() -> None:
    with pytest.raises(InvalidItemError, match="reserved"):
        _plan_put({"content": "x", "redactions": "none"}, REDACT)


# --------------------------------------------------------------------------- summarizer


def _chat() -> list[Any]:
    return [
        HumanMessage(f"My card is 4111 1111 1111 1111 and mail ann@example.com ({i}).", id=str(i))
        for i in range(8)
    ]


def test_extractive_and_model_summaries_are_redacted() -> None:
    result = summarize_messages(_chat(), max_messages=4, keep_last=2, redactor=True)
    assert result.summarized and result.summary
    assert "4111" not in result.summary and "ann@example.com" not in result.summary
    assert result.redactions.get("card", 0) >= 1
    model = FakeMessagesListChatModel(
        responses=[AIMessage("User pays with 4111-1111-1111-1111, mail ann@example.com.")]
    )
    result = summarize_messages(_chat(), model=model, max_messages=4, redactor=REDACT)
    assert result.summary == "User pays with [card], mail [email]."
    assert result.redactions == {"card": 1, "email": 1}
    plain = summarize_messages(_chat(), max_messages=4, keep_last=2)
    assert plain.summary is not None and "4111" in plain.summary  # off by default


async def test_async_summary_and_node_write_only_redacted_text() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage("Reach ann@example.com.")] * 2)
    result = await asummarize_messages(_chat(), model=model, max_messages=4, redactor=True)
    assert result.summary == "Reach [email]."

    written: list[str] = []

    class Sessions:
        def set_summary(self, thread: str, summary: str) -> None:
            written.append(summary)

    node = SummarizationNode(model, max_messages=4, sessions=Sessions(), redactor=True)
    out = await node.acall({"messages": _chat()}, {"configurable": {"thread_id": "t"}})
    assert out["summary"] == "Reach [email]." and written == ["Reach [email]."]


# --------------------------------------------------------------------------- MemoryEntry


def test_memory_entry_takes_the_design_defaults() -> None:
    before = datetime.now(timezone.utc)
    entry = MemoryEntry(id="m1", content="likes tea")
    assert (entry.memory_type, entry.importance) == ("experience", 0.5)
    assert entry.last_accessed is None and entry.access_count == 0
    assert entry.created_at.tzinfo is not None and entry.created_at.utcoffset() == timedelta(0)
    assert before <= entry.created_at <= datetime.now(timezone.utc)
    assert entry.metadata == {} and entry.namespace == ()
    # The positional form used so far is unchanged.
    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    old = MemoryEntry("m", "x", "fact", 0.9, t0, None, 3)
    assert (old.memory_type, old.importance, old.created_at, old.access_count) == (
        "fact",
        0.9,
        t0,
        3,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"importance": 1.5}, "importance .* from 0 to 1"),
        ({"importance": float("nan")}, "importance .* from 0 to 1"),
        ({"importance": True}, "importance .* from 0 to 1"),
        ({"memory_type": "episodic"}, "memory_type .* one of"),
    ],
)
def test_memory_entry_refuses_bad_fields_and_names_the_fix(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidItemError, match=message):
        MemoryEntry(id="m", content="x", **kwargs)
