"""Masking credentials in connection URLs before they are printed, raised or logged.

Every place that shows a Redis or Chroma URL (the CLI, error messages, reprs, log
records) passes it through `mask_url` first.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
"""What a secret is replaced with."""

# Query parameters whose value is a secret (matched on the decoded, lower-cased name).
_SECRET_PARAM = re.compile(r"pass|pwd|secret|token|auth|credential|api_?key")
# A user name worth keeping: unreserved and sub-delimiter characters only, so a raw
# password holding "/", "?", "#" or "@" is never mistaken for one.
_USER_NAME = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=-]*")
# Something that looks like a URL inside free text (up to the next space or quote).
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def mask_url(url: str) -> str:
    """Return `url` with its password, and any secret query parameter, replaced by `***`.

    Handles `scheme://user:password@host`, `scheme://:password@host`,
    `scheme://password@host` (a lone user-info part is masked whole),
    `?password=...` (and other parameters named like a secret), and every scheme
    (`redis://`, `rediss://`, `unix://`, `redis+sentinel://`, `http://`, ...). A raw
    password holding `@`, `/`, `?` or `#` is masked too: the user-info part runs to the
    last `@` of the URL.

    Args:
        url: A connection URL (or any string; text without a scheme only has its
            query parameters masked).

    Returns:
        The URL, safe to print.

    Example:
        >>> mask_url("redis://default:s3cret@cache.internal:6380/0")
        'redis://default:***@cache.internal:6380/0'
        >>> mask_url("unix:///run/redis.sock?db=1&password=s3cret")
        'unix:///run/redis.sock?db=1&password=***'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _mask_query(url)
    at = rest.rfind("@")
    if at != -1:
        user, colon, _ = rest[:at].partition(":")
        if colon and _USER_NAME.fullmatch(user):
            userinfo = f"{user}:{MASK}"
        else:
            userinfo = MASK
        rest = f"{userinfo}@{rest[at + 1 :]}"
    return f"{scheme}://{_mask_query(rest)}"


def _mask_query(text: str) -> str:
    head, sep, query = text.partition("?")
    if not sep:
        return text
    query, hash_sep, fragment = query.partition("#")
    parts = []
    for part in query.split("&"):
        name, eq, _ = part.partition("=")
        if eq and _SECRET_PARAM.search(unquote(name).lower()):
            part = f"{name}={MASK}"
        parts.append(part)
    return f"{head}?{'&'.join(parts)}{hash_sep}{fragment}"


def mask_urls_in(text: str) -> str:
    """Mask every URL found in free text (an error message, a log line).

    Args:
        text: Any text.

    Returns:
        The text with `mask_url` applied to each URL in it.
    """
    return _URL_IN_TEXT.sub(lambda m: mask_url(m.group(0)), text)
