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
"""

from __future__ import annotations

from collections import deque

from paramiko import SFTPAttributes, SFTPClient
from paramiko.sftp import CMD_CLOSE, CMD_HANDLE, CMD_NAME, CMD_OPENDIR, CMD_READDIR, SFTPError


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
