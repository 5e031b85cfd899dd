"""Fact-style phrasings of the rule-based triple extractor, applied around a clause.

Pure functions, no I/O; `_rules.py` calls them. They cover how encyclopaedic and
profile facts are written, so that chains of them join in the graph ("Dave is an
engineer at Google." + "Google is headquartered in Mountain View."):

- `rewrite_clause`: an appositive after a name ("Marcus, the CEO of Helix, lives in
  Austin") becomes two clauses ("Marcus is the CEO of Helix", "Marcus lives in
  Austin"); "the headquarters of Y is in Z" / "Y's headquarters are in Z" read as
  "Y is headquartered in Z".
- `employer`: "is a(n) <role> at/for <Name>" names where the subject works
  (works_at; studied_at for a student), not a place.
- `CONTINUED`: a clause of a shared subject ("... and now lives in Dubai").
"""

from __future__ import annotations

import re

from langgraph_tiered_memory.graph._rules_text import entity_name, is_name

_NAME = (
    r"[A-Z][\w'&.\u2024-]*(?:\s+(?:(?:of|de|la|van|von|der|del|da|du)\s+(?:the\s+)?)?"
    r"[A-Z][\w'&.\u2024-]*)*"
)
_APPOSITIVE = re.compile(
    r"^(?P<name>" + _NAME + r"),\s+(?P<app>(?i:the|a|an|my|our|his|her|their)\s+[^,]{1,60}?),"
    r"\s+(?P<rest>[a-z].*)$",
    re.DOTALL,
)
"""`Marcus, the CEO of Helix Labs, lives in Austin`: a name, a noun phrase, a verb."""
_OFFICE = r"(?i:headquarters|head\s+office|main\s+office|hq|head\s+quarters)"
_HQ_OF = re.compile(
    r"^(?i:the\s+)?" + _OFFICE + r"\s+of\s+(?:the\s+)?(?P<y>" + _NAME + r")\s+"
    r"(?i:is|are|was|were)\s+(?i:(?:located|based|situated)\s+)?in\s+(?P<rest>.+)$",
    re.DOTALL,
)
_HQ_POSS = re.compile(
    r"^(?:(?i:the)\s+)?(?P<y>" + _NAME + r")'s?\s+" + _OFFICE + r"\s+"
    r"(?i:is|are|was|were)\s+(?i:(?:located|based|situated)\s+)?in\s+(?P<rest>.+)$",
    re.DOTALL,
)

CONTINUED_VERBS = (
    r"(?:(?:now|later|then|also|currently|still|eventually|recently|subsequently)\s+)?"
    r"(?:lives|lived|works|worked|moved|relocated|joined|studied|graduated|teaches|taught"
    r"|lectures|founded|co-founded|cofounded|married|owns|owned|grew\s+up|was\s+born"
    r"|is\s+based|became)\b"
)
"""The verbs `CONTINUED` starts with, as a pattern (the clause splitter looks ahead)."""
CONTINUED = re.compile("^" + CONTINUED_VERBS, re.IGNORECASE)
"""A clause that starts with one of these verbs (after "and") shares the clause's
subject before it: "Samir was born in Cairo and now lives in Dubai"."""

_ROLES = frozenset(
    """
    nurse chef cook pilot ceo cto cfo coo cmo vp president intern analyst scientist
    engineer developer programmer teacher professor lecturer tutor instructor doctor
    surgeon physician dentist vet nurse paramedic lawyer attorney solicitor barrister
    accountant consultant manager director designer architect editor writer journalist
    reporter researcher barista cashier clerk waiter waitress bartender receptionist
    mechanic technician pharmacist therapist psychologist officer executive head chair
    founder co-founder cofounder owner partner associate employee staffer secretary
    assistant specialist coordinator administrator coach trainer librarian curator
    producer agent representative rep strategist economist apprentice trainee worker
    volunteer postdoc fellow resident firefighter electrician plumber carpenter
    photographer artist musician actor actress dancer singer driver guard janitor
    """.split()
)
"""Nouns of jobs: "a <job> at <Name>" is where someone works."""
_STUDENTS = frozenset({"student", "pupil", "undergraduate", "undergrad", "phd student"})
_NOT_ROLES = frozenset(
    """
    member customer user fan regular visitor guest speaker winner beginner newcomer
    lover believer expert master leader player supporter subscriber
    """.split()
)
_AT_ORG = re.compile(r"^\s+(?:at|for)\s+(?:the\s+)?(?P<org>" + _NAME + r")")


def rewrite_clause(clause: str) -> list[str]:
    """The clauses `clause` reads as: itself, or its appositive and headquarters forms."""
    hq = _HQ_OF.match(clause) or _HQ_POSS.match(clause)
    if hq is not None and is_name(hq.group("y").split()[0]):
        return [f"{hq.group('y')} is headquartered in {hq.group('rest')}"]
    app = _APPOSITIVE.match(clause)
    if app is not None and is_name(app.group("name").split()[0]):
        name = app.group("name")
        return [f"{name} is {app.group('app')}", f"{name} {app.group('rest')}"]
    return [clause]


def _role(obj: str) -> str | None:
    """Works_at or studied_at when `obj` (an is_a object) is a job or a student."""
    words = obj.split()
    if not words:
        return None
    head = words[-1]
    if obj in _STUDENTS or head in _STUDENTS:
        return "studied_at"
    if head in _NOT_ROLES:
        return None
    if head in _ROLES or head.endswith(("ist", "ician", "eer")):
        return "works_at"
    return None


def employer(obj: str, tail: str) -> tuple[str, str, str] | None:
    """(relation, organisation, rest of `tail`) for "a <job> at/for <Name> ..."."""
    relation = _role(obj)
    if relation is None:
        return None
    match = _AT_ORG.match(tail)
    if match is None or not is_name(match.group("org").split()[0]):
        return None
    org = entity_name(match.group("org"))
    if not org:
        return None
    return relation, org, tail[match.end() :]
