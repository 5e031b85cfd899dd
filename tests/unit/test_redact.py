"""`mask_url`: no password survives, whatever it holds and wherever it sits."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_tiered_memory.privacy._redact import mask_url, mask_urls_in


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://:secret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://default:secret@cache:6379/0", "redis://default:***@cache:6379/0"),
        ("redis://secret@cache:6379", "redis://***@cache:6379"),
        (
            "rediss://u:secret@cache:6380/0?ssl_cert_reqs=none",
            "rediss://u:***@cache:6380/0?ssl_cert_reqs=none",
        ),
        ("unix://:secret@/run/redis.sock?db=1", "unix://:***@/run/redis.sock?db=1"),
        ("unix:///run/redis.sock?db=1&password=secret", "unix:///run/redis.sock?db=1&password=***"),
        ("redis://cache:6379/0?Password=secret&db=2", "redis://cache:6379/0?Password=***&db=2"),
        ("redis://cache:6379/0?pass%77ord=secret", "redis://cache:6379/0?pass%77ord=***"),
        ("redis://:p@ss/w?rd#x@cache:1/0", "redis://:***@cache:1/0"),
        (
            "redis+sentinel://:secret@s1:26379,s2:26379/mymaster/0",
            "redis+sentinel://:***@s1:26379,s2:26379/mymaster/0",
        ),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("http://localhost:8000", "http://localhost:8000"),
    ],
)
def test_mask_url_hides_passwords_and_keeps_the_rest(url: str, masked: str) -> None:
    assert mask_url(url) == masked


def test_mask_urls_in_masks_every_url_of_a_message() -> None:
    text = "tried redis://:s1@a:1/0 then 'rediss://u:s2@b:2/0?password=s3' and gave up"
    out = mask_urls_in(text)
    assert all(s not in out for s in ("s1", "s2", "s3"))
    assert "redis://:***@a:1/0" in out and "rediss://u:***@b:2/0?password=***" in out


_SCHEMES = st.sampled_from(["redis", "rediss", "unix", "redis+sentinel", "http"])
_HOSTS = st.sampled_from(["127.0.0.1:6379/0", "cache.internal:6380/3", "/run/redis.sock"])
_USERS = st.from_regex(r"[a-z_]{0,8}", fullmatch=True)
_PASSWORDS = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=40)


@settings(max_examples=100, deadline=None)
@given(scheme=_SCHEMES, host=_HOSTS, user=_USERS, pw=_PASSWORDS, encode=st.booleans())
def test_the_masked_url_does_not_depend_on_the_password(
    scheme: str, host: str, user: str, pw: str, encode: bool
) -> None:
    secret = quote(pw, safe="") if encode else pw
    in_userinfo = f"{scheme}://{user}:{secret}@{host}?db=1"
    in_query = f"{scheme}://{host}?db=1&password={quote(pw, safe='')}"
    # The output is the same whatever the password: nothing of it can leak.
    assert mask_url(in_userinfo) == f"{scheme}://{user}:***@{host}?db=1"
    assert mask_url(in_query) == f"{scheme}://{host}?db=1&password=***"
    assert mask_url(mask_url(in_userinfo)) == mask_url(in_userinfo)
