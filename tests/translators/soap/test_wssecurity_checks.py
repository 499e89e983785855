"""UsernameToken checks a server makes (translators/soap/wssecurity.py): freshness of
Created, PasswordText only over TLS, digest needs nonce and Created; malformed tokens are
CouplerErrors, never a crash."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coupler.canonical.errors import CouplerError
from coupler.translators.soap import UsernameToken, unwrap, wrap
from coupler.translators.soap.wssecurity import (
    SecurityError,
    TokenExpired,
    TokenPolicy,
    check_token,
    parse_created,
    password_digest,
    replay_key,
)

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
USERS = {"agent": "s3cret"}.get


def _token(created: datetime | str, *, digest: bool = True, password: str = "s3cret") -> UsernameToken:
    text = created if isinstance(created, str) else created.strftime("%Y-%m-%dT%H:%M:%SZ")
    sent = UsernameToken("agent", password, digest=digest, created=text)
    return unwrap(wrap(None, security=sent)).security  # as a server reads it


def test_created_forms() -> None:
    assert parse_created("2001-01-01T00:00:00Z") == datetime(2001, 1, 1, tzinfo=UTC)
    assert parse_created("2026-11-23T13:00:00.123456789+01:00") == datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=UTC)
    assert parse_created("2026-11-23T12:00:00") == NOW  # no zone: UTC
    for bad in ("99999999999999999999-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "yesterday", "2026-11-23T25:00:00Z"):
        with pytest.raises(SecurityError):
            parse_created(bad)


def test_freshness_window() -> None:
    policy = TokenPolicy()
    check_token(_token(NOW - timedelta(seconds=299)), USERS, policy, secure=False, now=NOW)
    check_token(_token(NOW + timedelta(seconds=59)), USERS, policy, secure=False, now=NOW)
    for created in (datetime(2001, 1, 1, tzinfo=UTC), NOW - timedelta(seconds=301), NOW + timedelta(seconds=61)):
        with pytest.raises(TokenExpired):
            check_token(_token(created), USERS, policy, secure=False, now=NOW)


def test_password_text_needs_tls_unless_allowed() -> None:
    text = _token(NOW, digest=False)
    with pytest.raises(SecurityError, match="plain HTTP"):
        check_token(text, USERS, TokenPolicy(), secure=False, now=NOW)
    check_token(text, USERS, TokenPolicy(), secure=True, now=NOW)
    check_token(text, USERS, TokenPolicy(allow_password_text_over_http=True), secure=False, now=NOW)


def test_digest_needs_nonce_and_created_and_the_password() -> None:
    token = _token(NOW)
    with pytest.raises(SecurityError, match="wrong user name or password"):
        check_token(_token(NOW, password="guess"), USERS, TokenPolicy(), secure=True, now=NOW)
    token.nonce = b""
    with pytest.raises(SecurityError, match="needs a Nonce"):
        check_token(token, USERS, TokenPolicy(), secure=True, now=NOW)
    assert replay_key(_token(NOW)) != replay_key(_token(NOW))  # a fresh nonce each time


def test_a_nonce_that_is_not_base64_is_a_coupler_error() -> None:
    envelope = wrap(None, security=UsernameToken("agent", "pw", digest=True)).replace(b"</wsse:Nonce>", b"%%</wsse:Nonce>")
    with pytest.raises(SecurityError, match="not base64"):
        unwrap(envelope)


@settings(max_examples=200, deadline=2000)
@given(created=st.text(max_size=60), digest=st.booleans(), secure=st.booleans())
def test_any_created_text_is_refused_or_accepted_never_a_crash(created: str, digest: bool, secure: bool) -> None:
    token = UsernameToken("agent", "s3cret", digest=digest, created=created)
    token.password_value = password_digest("s3cret", token.nonce, created) if digest else None
    try:
        check_token(token, USERS, TokenPolicy(), secure=secure, now=NOW)
    except CouplerError:
        pass


@pytest.mark.parametrize("sent", ["s3cr\u00e9t", "\u00e9", "\u20ac" * 100])
@pytest.mark.parametrize("digest", [False, True])
def test_a_password_of_non_ascii_characters_is_refused_not_a_crash(sent: str, digest: bool) -> None:
    """Found by fuzzing the SOAP server with WS-Security (tests/adapters/soap/test_server_fuzz.py):
    ``hmac.compare_digest`` of two str raises TypeError when either holds a non-ASCII
    character, so a PasswordText (or a digest's text) of one was a Receiver fault "internal
    error" instead of "authentication failed"."""
    token = UsernameToken("agent", sent, digest=False, created=NOW.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if digest:
        token.digest, token.password, token.nonce, token.password_value = True, None, b"0123456789abcdef", sent
    with pytest.raises(SecurityError, match="wrong user name or password"):
        check_token(token, USERS, TokenPolicy(allow_password_text_over_http=True), secure=False, now=NOW)
    right = UsernameToken("agent", "p\u00e4ss", digest=False, created=NOW.strftime("%Y-%m-%dT%H:%M:%SZ"))
    check_token(right, {"agent": "p\u00e4ss"}.get, TokenPolicy(), secure=True, now=NOW)


@pytest.mark.parametrize("created", ["2026-11-23T12:00:00+25:00", "2026-11-23T12:00:00-24:00",
                                     "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_created_whose_zone_or_instant_no_datetime_holds_is_refused(created: str) -> None:
    """A zone of 24 hours or more, or an instant before year 1 or after 9999 once in UTC: a
    SecurityError (ValueError and OverflowError escaped parse_created and check_token)."""
    token = UsernameToken("agent", "s3cret", digest=False, created=created)
    with pytest.raises(SecurityError):
        check_token(token, USERS, TokenPolicy(), secure=True, now=NOW)
