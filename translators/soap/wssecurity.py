"""WS-Security UsernameToken (OASIS WSS 1.0), with text and digest passwords.

A server checks a token with :func:`check_token` under a :class:`TokenPolicy`: the password
(compared in constant time), the freshness of ``Created`` (at most ``ttl`` seconds old and
``future_ttl`` seconds ahead, the clock-skew allowance: WSS4J's ``utTimeToLive`` and
``utFutureTimeToLive``) and PasswordText only over TLS unless explicitly allowed. The nonce
is the caller's to remember (:func:`replay_key`): a nonce seen within the window is a replay.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from lxml import etree

from coupler.canonical.errors import CouplerError

WSSE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
WSU = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
TOKEN_PROFILE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0"
PASSWORD_TEXT = f"{TOKEN_PROFILE}#PasswordText"
PASSWORD_DIGEST = f"{TOKEN_PROFILE}#PasswordDigest"
BASE64 = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"


def password_digest(password: str, nonce: bytes, created: str) -> str:
    """Base64(SHA-1(nonce + created + password)), as the UsernameToken profile defines it."""
    return base64.b64encode(hashlib.sha1(nonce + created.encode() + password.encode()).digest()).decode()


@dataclass
class UsernameToken:
    """A UsernameToken; ``password`` is the clear text (written as text or as a digest)."""

    username: str
    password: str | None = None
    digest: bool = False
    nonce: bytes = field(default_factory=lambda: os.urandom(16))
    created: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    password_value: str | None = None  # the password element's text as read

    def to_element(self) -> Any:
        security = etree.Element(f"{{{WSSE}}}Security", nsmap={"wsse": WSSE, "wsu": WSU})
        token = etree.SubElement(security, f"{{{WSSE}}}UsernameToken")
        etree.SubElement(token, f"{{{WSSE}}}Username").text = self.username
        if self.password is not None:
            pw = etree.SubElement(token, f"{{{WSSE}}}Password")
            if self.digest:
                pw.set("Type", PASSWORD_DIGEST)
                pw.text = password_digest(self.password, self.nonce, self.created)
                nonce = etree.SubElement(token, f"{{{WSSE}}}Nonce", EncodingType=BASE64)
                nonce.text = base64.b64encode(self.nonce).decode()
                etree.SubElement(token, f"{{{WSU}}}Created").text = self.created
            else:
                pw.set("Type", PASSWORD_TEXT)
                pw.text = self.password
        return security

    @classmethod
    def from_header(cls, header: Any) -> UsernameToken | None:
        if header is None:
            return None
        token = header.find(f"{{{WSSE}}}Security/{{{WSSE}}}UsernameToken")
        if token is None:
            return None
        user = token.findtext(f"{{{WSSE}}}Username") or ""
        pw = token.find(f"{{{WSSE}}}Password")
        nonce_text = token.findtext(f"{{{WSSE}}}Nonce")
        created = token.findtext(f"{{{WSU}}}Created") or ""
        digest = pw is not None and pw.get("Type", PASSWORD_TEXT) == PASSWORD_DIGEST
        try:
            nonce = base64.b64decode(nonce_text.strip(), validate=True) if nonce_text else b""
        except (binascii.Error, ValueError):
            raise SecurityError("the UsernameToken's Nonce is not base64", where="wsse:Nonce") from None
        return cls(
            username=user.strip(),
            password=None if pw is None or digest else pw.text or "",
            digest=digest,
            nonce=nonce,
            created=created.strip(),
            password_value=pw.text if pw is not None else None,
        )

    def verify(self, password: str) -> bool:
        """Whether the token carries ``password`` (compared in constant time)."""
        # bytes: compare_digest refuses str holding a non-ASCII character (TypeError)
        if self.digest:
            expected = password_digest(password, self.nonce, self.created)
            return hmac.compare_digest(expected.encode(), (self.password_value or "").strip().encode("utf-8", "replace"))
        return self.password is not None and hmac.compare_digest(self.password.encode("utf-8", "replace"),
                                                                 password.encode("utf-8", "replace"))


class SecurityError(CouplerError):
    """A UsernameToken that is malformed or refused (its reason is logged, never sent back)."""


class TokenExpired(SecurityError):
    """A UsernameToken whose Created lies outside the freshness window."""


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?"
)


def parse_created(text: str) -> datetime:
    """``wsu:Created`` (xs:dateTime; without a zone it is read as UTC) as an aware datetime."""
    m = _DATETIME.fullmatch(text.strip())
    if m is None:
        raise SecurityError(f"Created {text[:40]!r} is not an xs:dateTime", where="wsu:Created")
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    try:
        tz = UTC
        if zone and zone != "Z":  # a zone of 24 hours or more: ValueError
            sign = -1 if zone[0] == "-" else 1
            tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        return datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second),
            int((fraction or "0").ljust(6, "0")[:6]), tzinfo=tz,
        )
    except ValueError as exc:
        raise SecurityError(f"Created {text[:40]!r} is not a valid time: {exc}", where="wsu:Created") from None


@dataclass(frozen=True)
class TokenPolicy:
    """How a server checks UsernameTokens."""

    #: seconds a token's Created may lie in the past (WSS4J ``utTimeToLive``)
    ttl: float = 300.0
    #: seconds it may lie in the future: the clock-skew allowance (WSS4J ``utFutureTimeToLive``)
    future_ttl: float = 60.0
    #: accept PasswordText on a connection without TLS (the password travels in clear)
    allow_password_text_over_http: bool = False

    @property
    def window(self) -> float:
        """How long a nonce must be remembered: as long as its token can be fresh."""
        return self.ttl + self.future_ttl


def check_token(
    token: UsernameToken | None,
    password_of: Callable[[str], str | None],
    policy: TokenPolicy,
    *,
    secure: bool,
    now: datetime | None = None,
) -> None:
    """Raise :class:`SecurityError` with the reason unless ``token`` authenticates a user.

    ``password_of(username)`` is the user's password (None: no such user); ``secure`` says
    whether the request came over TLS. The nonce is not checked here (see :func:`replay_key`).
    """
    if token is None:
        raise SecurityError("no UsernameToken")
    if not token.digest and not secure and not policy.allow_password_text_over_http:
        raise SecurityError(
            f"user {token.username!r} sent a PasswordText over plain HTTP",
            hint="use TLS (options.tls), PasswordDigest, or allow_password_text_over_http = true",
        )
    if token.digest and not (token.nonce and token.created):
        raise SecurityError(f"user {token.username!r}: a PasswordDigest needs a Nonce and a Created")
    if token.created:
        created = parse_created(token.created)
        moment = now or datetime.now(UTC)
        age = (moment - created).total_seconds()
        if age > policy.ttl:
            raise TokenExpired(f"user {token.username!r}: the token was created {age:.0f} s ago (more than {policy.ttl:g} s)")
        if -age > policy.future_ttl:
            raise TokenExpired(
                f"user {token.username!r}: the token is created {-age:.0f} s in the future (more than {policy.future_ttl:g} s)"
            )
    password = password_of(token.username)
    # an unknown user costs the same comparison as a known one
    if not token.verify(password if password is not None else "\x00" + os.urandom(8).hex()) or password is None:
        raise SecurityError(f"user {token.username!r}: wrong user name or password")


def replay_key(token: UsernameToken) -> str | None:
    """What identifies the token's nonce for the replay cache (None when it has none)."""
    if not token.nonce:
        return None
    return hashlib.sha256(token.username.encode("utf-8", "replace") + b"\x00" + token.nonce).hexdigest()
