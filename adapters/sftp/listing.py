"""A remote directory listed with its names as the server sent them (bytes).

paramiko decodes every name of a READDIR answer strictly as UTF-8 (``Message.get_text`` in
``SFTPClient.listdir``, ``listdir_attr`` and ``listdir_iter``, the same from paramiko 3.4 to
5.1; paramiko issue #546, open since 2015) and has no call that gives the names as bytes: one
name a legacy system wrote in Latin-1 or cp1252 raises ``UnicodeDecodeError`` and no file of
the directory can be listed. This module is the one place the adapter goes below paramiko's
public API: the OPENDIR / READDIR / CLOSE requests ``listdir_iter`` sends, through
``SFTPClient``'s message layer (``_async_request``, ``_read_response``, ``_request``, present
unchanged since paramiko 1.x), reading each name with ``Message.get_binary``; the attributes
are parsed by ``SFTPAttributes._from_msg`` as paramiko does. Every other call takes the bytes
path it is given as it is (``SFTPClient._adjust_cwd`` keeps bytes).

Downloads go below it too (:func:`download`). ``SFTPFile.readv`` asks for the bytes the
listing promised; when the file was cut short meanwhile, the requests past its new end get
the status "end of file", which its prefetch does not take as an answer: the read waited for
``read_timeout``, then the connection was dropped as lost and the server shown ``down``, for
a file being rewritten. :func:`download` sends the same pipelined READ requests (at most
``window`` in flight, their answers read in order, by request number) and takes "end of file"
for what it is: the file is shorter than listed. It then FSTATs the open file, so that one
that grew or was rewritten while it was read is not published from the bytes listed.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable

from paramiko import SFTPAttributes, SFTPClient, SSHException
from paramiko.sftp import (
    CMD_ATTRS,
    CMD_CLOSE,
    CMD_DATA,
    CMD_FSTAT,
    CMD_HANDLE,
    CMD_NAME,
    CMD_OPEN,
    CMD_OPENDIR,
    CMD_READ,
    CMD_READDIR,
    SFTP_FLAG_READ,
    SFTPError,
    int64,
)


def listdir_bytes(sftp: SFTPClient, path: bytes, window: int = 100) -> list[tuple[bytes, SFTPAttributes]]:
    """The entries of ``path`` but ``.`` and ``..``: each name (bytes) and its attributes.
    Up to ``window`` READDIR requests are in flight (each answer holds a page of names), as
    ``listdir_iter(read_aheads=window)``; their answers are read in order, by request number,
    so an answer never goes to another request."""
    t, msg = sftp._request(CMD_OPENDIR, path)
    if t != CMD_HANDLE:
        raise SFTPError("Expected handle")
    handle = msg.get_binary()
    entries: list[tuple[bytes, SFTPAttributes]] = []
    pending: deque[int] = deque(sftp._async_request(type(None), CMD_READDIR, handle) for _ in range(window))
    end = False
    while pending:
        num = pending.popleft()
        try:
            t, msg = sftp._read_response(num)
        except EOFError:  # the status "end of directory": the requests still in flight get it too
            end = True
            continue
        if t != CMD_NAME:
            raise SFTPError("Expected name response")
        for _ in range(msg.get_int()):
            name = msg.get_binary()
            msg.get_binary()  # the `ls -l` line (it holds the name too)
            attrs = SFTPAttributes._from_msg(msg)
            if name not in (b".", b".."):
                entries.append((name, attrs))
        if not end:
            pending.append(sftp._async_request(type(None), CMD_READDIR, handle))
    sftp._request(CMD_CLOSE, handle)
    return entries


class ShortFile(Exception):
    """The file ended at ``size`` bytes, before the end the download asked for."""

    def __init__(self, size: int):
        super().__init__(f"ends at {size} bytes")
        self.size = size


def download(sftp: SFTPClient, path: bytes, start: int, end: int, write: Callable[[bytes], object], *,
             request: int, window: int, flush: Callable[[], object] = lambda: None) -> SFTPAttributes:
    """Bytes ``start`` to ``end`` of the file ``path``, in order, to ``write`` (``flush`` after
    each window's worth); then the open file's attributes (FSTAT: its size and mtime now).
    :class:`ShortFile` when it ends before ``end``. A short answer that is not the end (a
    server may send less than asked) is asked for again from where it stopped."""
    t, msg = sftp._request(CMD_OPEN, path, SFTP_FLAG_READ, SFTPAttributes())
    if t != CMD_HANDLE:
        raise SFTPError("Expected handle")
    handle = msg.get_binary()
    pending: deque[tuple[int, int, int]] = deque()  # request number, offset, length
    try:
        position = start  # the bytes before it are written, in order
        asked = start  # the bytes before it are asked for
        answered = 0
        while position < end:
            while len(pending) < window and asked < end:
                length = min(request, end - asked)
                pending.append((sftp._async_request(type(None), CMD_READ, handle, int64(asked), length), asked, length))
                asked += length
            num, offset, length = pending.popleft()
            try:
                t, msg = sftp._read_response(num)
            except EOFError:  # the status "end of file" at `offset`: the file is that long
                raise ShortFile(offset) from None
            if t != CMD_DATA:
                raise SFTPError("Expected data")
            data = msg.get_string()
            if not data:
                raise ShortFile(offset)
            write(data)
            position += len(data)
            answered += 1
            if answered % window == 0:
                flush()
            if len(data) < length:  # less than asked: the answers in flight would leave a gap
                _settle(sftp, pending)
                asked = position
        flush()
        t, msg = sftp._request(CMD_FSTAT, handle)
        if t != CMD_ATTRS:
            raise SFTPError("Expected attributes")
        attrs = SFTPAttributes._from_msg(msg)
    except BaseException as exc:
        if not isinstance(exc, SSHException | TimeoutError | ConnectionError | EOFError):
            # the session still answers (the file ended, the local disk is full): release the handle
            with contextlib.suppress(Exception):
                _settle(sftp, pending)
                sftp._request(CMD_CLOSE, handle)
        raise
    sftp._request(CMD_CLOSE, handle)
    return attrs


def _settle(sftp: SFTPClient, pending: deque[tuple[int, int, int]]) -> None:
    """Read and drop the answers of the requests still in flight."""
    while pending:
        num = pending.popleft()[0]
        try:
            sftp._read_response(num)
        except EOFError:
            pass
