"""Errors of the file adapters (all :class:`~coupler.canonical.errors.CouplerError`)."""

from __future__ import annotations

from coupler.canonical.errors import CouplerError


class AdapterConfigError(CouplerError):
    """An adapter option that is missing, of the wrong type or out of range."""


class PathTraversalError(CouplerError):
    """A file name (from a header, property or template) that would leave the adapter's root."""


class FileExistsPolicyError(CouplerError):
    """The target file exists and the ``file_exists`` policy is ``fail``."""


class PayloadError(CouplerError):
    """A file whose content cannot be split into messages (bad record, bad XML, bad encoding)."""


class HostKeyError(CouplerError):
    """An SFTP server whose host key is unknown or changed; the message shows its fingerprint."""


class RemoteError(CouplerError):
    """An SFTP server that cannot be reached, refuses the login or fails an operation."""


class FileChanged(OSError):
    """A file that changed (grew, shrank, was replaced or removed) between its listing and the
    end of its reading: not this file's fault, and not yet taken; the next poll takes it again
    once it is stable."""
