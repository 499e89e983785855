"""A real OpenSSH sshd for the SFTP tests, on a free loopback port, keys in a temp dir.

Runs ``/usr/sbin/sshd -D -e -f <generated sshd_config>`` with generated host keys, an
``AuthorizedKeysFile`` in the temporary directory (user keys: Ed25519 with a passphrase,
RSA, ECDSA), ``internal-sftp`` and, for password authentication, a dedicated local user
created with ``useradd``/``chpasswd`` (tests run as root) and removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
PASSWORD_USER = "coupler-sftp-test"
PASSPHRASE = "correct horse"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, kind: str, passphrase: str = "", bits: int | None = None) -> Path:
    cmd = ["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-f", str(path), "-C", f"coupler-test-{kind}"]
    if bits:
        cmd += ["-b", str(bits)]
    subprocess.run(cmd, check=True, capture_output=True)
    return path


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (sshd's per-connection children call setsid)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


class Sshd:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.host_key = keygen(root / "ssh_host_ed25519_key", "ed25519")
        self.keys = {
            "ed25519": keygen(root / "id_ed25519", "ed25519", PASSPHRASE),
            "rsa": keygen(root / "id_rsa", "rsa", bits=2048),
            "ecdsa": keygen(root / "id_ecdsa", "ecdsa"),
        }
        authorized = root / "authorized_keys"
        authorized.write_text("".join(Path(f"{k}.pub").read_text() for k in self.keys.values()))
        self.known_hosts = root / "known_hosts"
        pub = (root / "ssh_host_ed25519_key.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n")
        self.fingerprint = subprocess.run(
            ["ssh-keygen", "-lf", str(root / "ssh_host_ed25519_key.pub")], check=True, capture_output=True, text=True
        ).stdout.split()[1]
        self.config = root / "sshd_config"
        self.config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"PidFile {root / 'sshd.pid'}\nAuthorizedKeysFile {authorized}\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication yes\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin yes\nSubsystem sftp internal-sftp\n"
            "LogLevel INFO\nMaxStartups 50\nMaxSessions 50\n"
        )
        self.log = root / "sshd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Sshd:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.proc.returncode}: {self.log.read_text()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                if s.recv(4).startswith(b"SSH-"):
                    return self
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not come up on port {self.port}: {self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL the server and every session it serves (a crash, mid-transfer)."""
        if self.proc is None:
            return
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        children = descendants(self.proc.pid)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None


def create_password_user(home: Path, password: str, name: str = PASSWORD_USER) -> str | None:
    """A local user ``name`` with ``password`` and home ``home``; None when users cannot be
    created. Each test that makes one names its own, so that two workers never share it."""
    if os.geteuid() != 0:
        return None
    subprocess.run(["userdel", name], capture_output=True)
    made = subprocess.run(
        ["useradd", "-M", "-d", str(home), "-s", "/bin/sh", name], capture_output=True
    )
    if made.returncode != 0:
        return None
    subprocess.run(["chpasswd"], input=f"{name}:{password}".encode(), check=True)
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(["chown", name, str(home)], check=True)
    return name


def remove_password_user(name: str = PASSWORD_USER) -> None:
    subprocess.run(["userdel", name], capture_output=True)
