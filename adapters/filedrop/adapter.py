"""The file drop adapter: polls a local directory (inbound) and writes files (outbound).

Options (``[adapters.options]``): see docs/adapters/filedrop.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from coupler.bus.api import Bool, CommandFault, Str, option, record_of

from ..common.base import FileAdapterBase, FileAdapterOptions
from ..common.errors import AdapterConfigError
from ..common.fs import FileInfo, LocalFS, directory_mode, make_directory
from ..common.inbound import InboundPipeline
from ..common.outbound import FileWriter


class _InPlace:
    """A local file is read where it lies."""

    owned = False

    def __init__(self, fs: LocalFS):
        self.fs = fs

    def fetch(self, info: FileInfo) -> Path:
        return self.fs.path(info.path)

    def discard(self, info: FileInfo) -> None:
        pass


class FileDropOptions(FileAdapterOptions):
    """``[adapters.options]`` of ``type = "filedrop"`` (docs/adapters/filedrop.md)."""

    directory: Str = option("The drop directory (inbound) / the output root (outbound), relative to site.toml.")
    output_directory: Str | None = option("The outbound root when `direction = \"both\"`.", default=None)
    create_directories: Bool = option("Create missing directories.", default=True)
    fsync: Bool = option("fsync written files and directories.", default=True)


class FileDropAdapter(FileAdapterBase):
    """Files in a local directory to the bus, and documents from the bus to files."""

    type_name = "filedrop"
    #: relative ones are relative to the directory of site.toml (the daemon resolves them)
    path_options = ("directory", "output_directory", "copybook", "batch_dir")
    output_option = "output_directory"
    options_model = FileDropOptions

    def read_options(self, opts: FileDropOptions) -> None:
        self.directory = Path(opts.directory)
        self.output_directory = Path(opts.output_directory) if opts.output_directory else None
        self.create_directories = opts.create_directories
        self.durable = opts.fsync

    def _root(self, path: Path, file_mode: int | None = None) -> LocalFS:
        if not path.is_dir():
            if not self.create_directories:
                raise AdapterConfigError(
                    f"directory {path} does not exist", where=f"adapters[{self.name}].options.directory",
                    hint="create it, or set create_directories = true",
                )
            if file_mode is None:
                path.mkdir(parents=True, exist_ok=True)
            else:  # readable by whoever may read the files it will hold
                make_directory(path, directory_mode(file_mode))
        return LocalFS(path, durable=self.durable)

    def open_inbound(self) -> InboundPipeline:
        assert self.state is not None and self.context is not None
        fs = self._root(self.directory)
        return InboundPipeline(
            name=self.name, fs=fs, settings=self.inbound, state=self.state, context=self.context,
            local=_InPlace(fs), format=lambda: self.format, claims_dir=self.data_dir / "claims",
        )

    def open_outbound(self) -> FileWriter:
        assert self.state is not None
        fs = self._root(self.output_directory or self.directory, self.outbound.chmod)
        writer = FileWriter(self.name, fs, self.outbound, self.state, self.log)
        context = self.context
        writer.record = lambda envelope: record_of(envelope, context)  # {body.FIELD}: the site's schemas
        return writer

    def check(self) -> dict[str, str]:
        details = {}
        for role, path in (("directory", self.directory), ("output_directory", self.output_directory)):
            if path is None:
                continue
            if not path.is_dir():
                raise CommandFault(f"{role} {path} does not exist", code="failed")
            if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
                raise CommandFault(f"{role} {path} is not readable and writable by this process", code="failed")
            details[role] = str(path)
        return details
