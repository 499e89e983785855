"""Pieces shared by the file drop and SFTP Channel Adapters.

``options`` (typed option reading with key-path errors), ``jail`` (the directory jail),
``naming`` (file name templates), ``fs`` (a small file-system interface with a local
implementation), ``writer`` (temporary name + atomic rename, ``file_exists`` policies, done
files), ``readiness`` (strategies: stable size, done marker, renamed into place), ``selection``
(include/exclude globs, hidden files, order), ``state`` (the durable per-file seen-state),
``payload`` (whole file, lines, fixed records, copybook records, repeated XML elements),
``inbound`` (the poll pipeline both inbound adapters run) and ``poller`` (the poll thread
with idle backoff).
"""
