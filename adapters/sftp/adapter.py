"""The SFTP adapter (paramiko): polls a remote directory (inbound), uploads files (outbound).

Options (``[adapters.options]``): see docs/adapters/sftp.md.
"""

from __future__ import annotations

import functools
from typing import Any

from coupler.bus.api import CommandFault, Int, Str, option, record_of
from coupler.canonical.errors import CouplerError

from ..common.base import FileAdapterBase, FileAdapterOptions
from ..common.errors import AdapterConfigError
from ..common.inbound import InboundPipeline
from ..common.outbound import FileWriter
from .connection import ConnectionOptions, SftpConnection, read_connection_settings
from .remote import SftpFS, Staging, check_encoding


class SftpOptions(FileAdapterOptions, ConnectionOptions):
    """``[adapters.options]`` of ``type = "sftp"`` (docs/adapters/sftp.md)."""

    remote_directory: Str = option("The directory on the server polled (inbound) or written (outbound).",
                                   default=".")
    remote_output_directory: Str | None = option("The outbound directory when `direction = \"both\"`.",
                                                 default=None)
    list_page_size: Int = option("READDIR requests kept in flight while a directory is listed (each answer holds a page of names).", default=100, ge=1)
    filename_encoding: Str = option(
        "The encoding of the file names on the server (`cp1252`, `latin-1`, ...); bytes of a name "
        "not valid in it are kept as they are (`\\xNN` in messages).", default="utf-8")


class SftpAdapter(FileAdapterBase):
    """Files on an SFTP server to the bus, and documents from the bus to files on it."""

    type_name = "sftp"
    #: local files only (remote directories are paths on the server); relative ones are
    #: relative to the directory of site.toml (the daemon resolves them)
    path_options = ("private_key", "known_hosts", "copybook", "batch_dir")
    output_option = "remote_output_directory"
    options_model = SftpOptions
    output_what = "uploads"

    def read_options(self, opts: SftpOptions) -> None:
        self.settings = read_connection_settings(opts, self.name)
        self.remote_directory = opts.remote_directory
        self.remote_output_directory = opts.remote_output_directory
        self.page_size = opts.list_page_size
        where = f"adapters[{self.name}].options"
        self.filename_encoding = check_encoding(opts.filename_encoding, where=f"{where}.filename_encoding")
        for key in ("remote_directory", "remote_output_directory", "archive_dir", "error_dir"):
            value = getattr(opts, key, None)
            try:
                (value or "").encode(self.filename_encoding)
            except UnicodeEncodeError:
                raise AdapterConfigError(
                    f"{value!r} cannot be written in filename_encoding {self.filename_encoding}",
                    where=f"{where}.{key}") from None
        self.conn: SftpConnection | None = None

    def _connection(self) -> SftpConnection:
        if self.conn is None:
            self.conn = SftpConnection(self.settings, self.log)
        return self.conn

    def _fs(self, root: str) -> SftpFS:
        return SftpFS(self._connection(), root, page_size=self.page_size, encoding=self.filename_encoding,
                      adapter=self.name)

    def open_inbound(self) -> InboundPipeline:
        assert self.state is not None and self.context is not None
        fs = self._fs(self.remote_directory)
        return InboundPipeline(
            name=self.name, fs=fs, settings=self.inbound, state=self.state, context=self.context,
            local=Staging(fs, self.data_dir / "staging"), format=lambda: self.format,
            claims_dir=self.data_dir / "claims",
        )

    def open_outbound(self) -> FileWriter:
        assert self.state is not None
        fs = self._fs(self.remote_output_directory or self.remote_directory)
        writer = FileWriter(self.name, fs, self.outbound, self.state, self.log)
        context = self.context
        writer.record = lambda envelope: record_of(envelope, context)  # {body.FIELD}: the site's schemas
        return writer

    def close_connections(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def check(self) -> dict[str, str]:
        """Ping: connect (verifying the host key) and stat the remote directories."""
        conn = self._connection()
        try:
            for directory in filter(None, (self.remote_directory, self.remote_output_directory)):
                conn.call(f"stat {directory}", functools.partial(_stat, path=directory.encode(self.filename_encoding)))
        except (CouplerError, OSError) as exc:
            raise CommandFault(f"{self.settings.label}: {exc}", code="failed") from exc
        return {"server": self.settings.label}

    def health(self) -> dict[str, Any]:
        """The poll's health and the connection's: ``down`` while the server cannot be reached
        (the last attempt failed or the connection was lost and not re-opened yet), with the
        time left before the next attempt while the adapter backs off."""
        health = super().health()
        if self.conn is not None:
            conn = self.conn.health()
            health["connection"] = conn
            if not conn["connected"] and conn["last_connect_error"]:
                wait = conn["next_attempt_in"]
                retry = f"; next attempt in {wait:.1f} s" if wait else ""
                label = self.settings.label
                error = conn["last_connect_error"].removeprefix(f"{label}: ")  # a connect error names it already
                health["problems"].append(f"disconnected from {label}: {error}{retry}")
                health["status"] = "down"
        return health

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["server"] = self.settings.label
        return info


def _stat(sftp: Any, path: bytes) -> Any:
    return sftp.stat(path)
