"""The SFTP drop box of the life batch system: a real OpenSSH sshd on a loopback port.

``/usr/sbin/sshd -D -e -f <generated sshd_config>`` with a generated host key and a generated
client key for the current user (``internal-sftp``, public keys only). :class:`SftpDropBox`
starts it and gives the login Coupler's ``sftp`` adapter needs (host, port, user, key,
known_hosts); :func:`sshd_available` says whether it can run here at all.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def sshd_available() -> str | None:
    """None when an sshd can be started here, else why not."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (`make test` installs openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path), "-C", "coupler-demo"],
                   check=True, capture_output=True)
    return path


class SftpDropBox:
    """An sshd serving SFTP on 127.0.0.1 to the current user, keys in ``root``."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        for name in ("ssh_host_ed25519_key", "id_ed25519"):
            for p in (root / name, root / f"{name}.pub"):
                p.unlink(missing_ok=True)
        self.port = _free_port()
        self.user = getpass.getuser()
        host_key = _keygen(root / "ssh_host_ed25519_key")
        self.private_key = _keygen(root / "id_ed25519")
        authorized = root / "authorized_keys"
        authorized.write_text(Path(f"{self.private_key}.pub").read_text())
        pub = Path(f"{host_key}.pub").read_text().split()
        self.known_hosts = root / "known_hosts"
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n")
        self.config = root / "sshd_config"
        self.config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {root / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {authorized}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
            "Subsystem sftp internal-sftp\nLogLevel INFO\nMaxStartups 20\nMaxSessions 20\n"
        )
        self.log = root / "sshd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10) -> SftpDropBox:
        with contextlib.suppress(OSError):
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdout=log, stderr=log,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.proc.returncode}: {self.log.read_text()[-500:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                if s.recv(4).startswith(b"SSH-"):
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"sshd did not come up on port {self.port}: {self.log.read_text()[-500:]}")

    def stop(self) -> None:
        """Stop sshd and the sessions it serves (its own process group)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None
