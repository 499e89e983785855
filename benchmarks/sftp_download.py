"""The SFTP adapter's download against a real OpenSSH sshd on loopback: its pipelined READ
requests (``coupler.adapters.sftp.listing.download``, 64 requests of 32 KiB in flight, "end
of file" taken as the file's end, an FSTAT after the last byte) beside what it replaced,
paramiko's ``SFTPFile.readv`` over the same windows, in the same run, alternating.

Workload: one file of ``--size`` MiB of random bytes, downloaded ``--rounds`` times by each
method into a local file (written, flushed every window, as the staging does). Reported per
method: the median MB/s and the client's CPU seconds per GiB (this process's CPU: the SSH
transport's thread included; sshd's is its own). sshd is the test suite's
(``tests/adapters/sftp/sshd.py``: generated host and user keys, a free port).

Usage: .venv/bin/python benchmarks/sftp_download.py [--size 256] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test suite's sshd

from machine import memory_note  # noqa: E402

from coupler.adapters.sftp.connection import ConnectionSettings, SftpConnection  # noqa: E402
from coupler.adapters.sftp.listing import download  # noqa: E402
from coupler.adapters.sftp.remote import REQUEST, WINDOW  # noqa: E402
from tests.adapters.sftp.sshd import PASSPHRASE, Sshd  # noqa: E402


def by_download(sftp, path: bytes, size: int, local) -> None:
    download(sftp, path, 0, size, local.write, request=REQUEST, window=WINDOW, flush=local.flush)


def by_readv(sftp, path: bytes, size: int, local) -> None:
    """The code before h138: windows of ``readv``."""
    with sftp.open(path, "rb") as remote:
        position = 0
        while position < size:
            end = min(size, position + REQUEST * WINDOW)
            chunks = [(o, min(REQUEST, end - o)) for o in range(position, end, REQUEST)]
            for block in remote.readv(chunks):
                local.write(block)
                position += len(block)
            local.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="MiB (default 256)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-sftp-") as tmp:
        root = Path(tmp)
        server = Sshd(root / "sshd").start()
        try:
            remote = root / "remote.bin"
            block = os.urandom(1 << 20)
            with open(remote, "wb") as f:
                for _ in range(args.size):
                    f.write(block)
            size = args.size << 20
            conn = SftpConnection(ConnectionSettings(
                host="127.0.0.1", port=server.port, username="root", private_key=server.keys["ed25519"],
                passphrase=PASSPHRASE, known_hosts=server.known_hosts, read_timeout=60))
            sftp = conn.sftp()
            methods = {"download (pipelined READ)": by_download, "readv (before)": by_readv}
            rates: dict[str, list[float]] = {m: [] for m in methods}
            cpus: dict[str, list[float]] = {m: [] for m in methods}
            for _ in range(args.rounds):
                for name, method in methods.items():
                    target = root / "local.bin"
                    with open(target, "wb") as local:
                        wall, cpu = time.perf_counter(), time.process_time()
                        method(sftp, str(remote).encode(), size, local)
                        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    assert target.stat().st_size == size
                    target.unlink()
                    rates[name].append(size / wall / 1e6)
                    cpus[name].append(cpu / (size / (1 << 30)))
            conn.close()
        finally:
            server.stop()
    print(f"{args.size} MiB x {args.rounds} rounds each, alternating; load average {os.getloadavg()[0]:.2f}; "
          f"{memory_note()}")
    base = statistics.median(rates["readv (before)"])
    base_cpu = statistics.median(cpus["readv (before)"])
    for name in methods:
        rate, cpu = statistics.median(rates[name]), statistics.median(cpus[name])
        print(f"{name:28s} {rate:7.1f} MB/s (x{rate / base:.2f})   CPU {cpu:5.2f} s/GiB (x{cpu / base_cpu:.2f})   "
              f"runs: {', '.join(f'{r:.0f}' for r in rates[name])} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
