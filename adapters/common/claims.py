"""The Claim Check for whole files too large to carry in a message body.

The bus's transport takes message bodies as bytes, so a file over the adapter's
``claim_check_bytes`` is not read into memory: it is stored (streamed, fsynced) under the
adapter's data directory and the message carries its location in the ``coupler.claim-file``
property (and its size in ``coupler.claim-size``) with an empty body. An outbound file
adapter streams the claimed file to its destination; :func:`open_body` does that for any
consumer.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from coupler.canonical import Envelope
from coupler.canonical.claimcheck import CLAIM_PROPERTY, CLAIM_SIZE_PROPERTY, claim_path

from .errors import PayloadError

__all__ = ["CLAIM_PROPERTY", "CLAIM_SIZE_PROPERTY", "body_chunks", "prune_claims", "store_claim"]
_CHUNK = 1 << 20


def store_claim(claims_dir: Path, source: Path, *, move: bool, suffix: str = "") -> Path:
    """Put ``source`` (a local file) in ``claims_dir`` under a new unique name (ending with
    ``-suffix`` when given), moved when ``move`` (same file system). The file appears under
    its final name at once, complete: a copy is written as ``.part`` first."""
    claims_dir.mkdir(parents=True, exist_ok=True)
    target = claims_dir / (uuid.uuid4().hex + (f"-{suffix}" if suffix else ""))
    if move:
        os.replace(source, target)
    else:
        tmp = target.with_suffix(".part")
        with open(source, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, target)
    fd = os.open(claims_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return target


def body_chunks(envelope: Envelope, chunk: int = _CHUNK) -> Iterator[bytes]:
    """The message body, streamed from the claimed file when it carries a claim check."""
    try:
        claim = claim_path(envelope.properties)
    except ValueError as exc:
        raise PayloadError(f"message {envelope.message_id}: {exc}", hint="refused: only the bus's claim checks are read") from None
    if claim is None:
        yield envelope.body
        return
    try:
        with open(claim, "rb") as f:
            while block := f.read(chunk):
                yield block
    except FileNotFoundError as exc:
        raise PayloadError(
            f"message {envelope.message_id}: claim-checked body {claim} is missing",
            hint="claimed files are kept for the producing adapter's claim_retention_hours",
        ) from exc


def prune_claims(claims_dir: Path, older_than_seconds: float) -> int:
    """Remove claimed files older than ``older_than_seconds``; returns how many."""
    if not claims_dir.is_dir():
        return 0
    limit = time.time() - older_than_seconds
    removed = 0
    for path in claims_dir.iterdir():
        try:
            if path.stat().st_mtime < limit:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed
