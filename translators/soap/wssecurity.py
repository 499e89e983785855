"""WS-Security UsernameToken (OASIS WSS 1.0), with text and digest passwords."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lxml import etree

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
        return cls(
            username=user.strip(),
            password=None if pw is None or digest else pw.text or "",
            digest=digest,
            nonce=base64.b64decode(nonce_text) if nonce_text else b"",
            created=created.strip(),
            password_value=pw.text if pw is not None else None,
        )

    def verify(self, password: str) -> bool:
        """Whether the token carries ``password`` (compared in constant time)."""
        if self.digest:
            expected = password_digest(password, self.nonce, self.created)
            return hmac.compare_digest(expected, (self.password_value or "").strip())
        return self.password is not None and hmac.compare_digest(self.password, password)
