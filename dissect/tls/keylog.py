"""NSS key log files (the SSLKEYLOGFILE format): the secrets a TLS library wrote for each connection, found again by
the connection's ClientHello.random.

Each line is `LABEL <client_random hex> <secret hex>`; `#` starts a comment. Several files merge into one KeyLog (a
client and a broker may each write one). A line that does not parse is counted in `malformed` and skipped: key logs
appended to by several processes at once, or cut short by a crash, are normal, and one bad line must not cost the other
connections their keys. Labels this package does not use (EXPORTER_SECRET, CLIENT_EARLY_TRAFFIC_SECRET, ...) are
counted in `ignored`.

The files are followed: when a connection's secret is missing, the whole lines appended to them since they were read
are read first. A live capture is dissected while its clients still write their key log (`kafkatap capture
--dissect --tls-keylog`), so connections opened after the run started find their secrets too.

Secrets never reach any output: KeyLog and Secrets print labels and counts only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

RANDOM_LENGTH = 32
CLIENT_RANDOM = "CLIENT_RANDOM"  # TLS 1.2: the 48-byte master secret
CLIENT_HANDSHAKE_TRAFFIC_SECRET = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
SERVER_HANDSHAKE_TRAFFIC_SECRET = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
CLIENT_TRAFFIC_SECRET_0 = "CLIENT_TRAFFIC_SECRET_0"
SERVER_TRAFFIC_SECRET_0 = "SERVER_TRAFFIC_SECRET_0"
# label -> the secret lengths it may have (TLS 1.3 secrets are one hash long: SHA-256 or SHA-384)
LENGTHS = {
    CLIENT_RANDOM: (48,),
    CLIENT_HANDSHAKE_TRAFFIC_SECRET: (32, 48),
    SERVER_HANDSHAKE_TRAFFIC_SECRET: (32, 48),
    CLIENT_TRAFFIC_SECRET_0: (32, 48),
    SERVER_TRAFFIC_SECRET_0: (32, 48),
}


class Secrets:
    """The secrets logged for one client_random, by label."""

    __slots__ = ("_by_label",)

    def __init__(self) -> None:
        self._by_label: dict[str, bytes] = {}

    def get(self, label: str) -> bytes | None:
        return self._by_label.get(label)

    def add(self, label: str, secret: bytes) -> bool:
        """Keep the first secret of a label; False when this one differs from it."""
        return self._by_label.setdefault(label, secret) == secret

    @property
    def labels(self) -> list[str]:
        return sorted(self._by_label)

    def __repr__(self) -> str:
        return f"Secrets({', '.join(self.labels)})"


class KeyLog:
    """Every secret of one or more key log files, looked up by client_random (32 bytes)."""

    __slots__ = ("_entries", "_files", "lines", "malformed", "ignored", "conflicts")

    def __init__(self) -> None:
        self._entries: dict[bytes, Secrets] = {}
        self._files: dict[str, int] = {}  # path -> bytes read so far
        self.lines = 0  # lines that carried a secret of a label used here
        self.malformed = 0  # lines that are neither comments, blank, nor `LABEL hex hex`
        self.ignored = 0  # well-formed lines of labels not used here
        self.conflicts = 0  # lines repeating a (client_random, label) with another secret: the first one is kept

    @classmethod
    def from_files(cls, paths: Iterable[str | os.PathLike[str]]) -> KeyLog:
        keylog = cls()
        for path in paths:
            keylog.read(path)
        return keylog

    def read(self, path: str | os.PathLike[str]) -> None:
        """Merge one key log file in, and follow it. A file that cannot be opened raises OSError; its lines never
        raise."""
        with open(path, "rb") as file:
            data = file.read()
        self._files[os.fspath(path)] = len(data)
        self.add_lines(data.splitlines())

    def add_lines(self, lines: Iterable[bytes | str]) -> None:
        for line in lines:
            self._add(line.decode("ascii", "replace") if isinstance(line, bytes) else line)

    def _add(self, line: str) -> None:
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            return
        if len(fields) != 3:
            self.malformed += 1
            return
        label, random_hex, secret_hex = fields
        try:
            client_random, secret = bytes.fromhex(random_hex), bytes.fromhex(secret_hex)
        except ValueError:
            self.malformed += 1
            return
        if len(client_random) != RANDOM_LENGTH or not secret:
            self.malformed += 1
        elif label not in LENGTHS:
            self.ignored += 1
        elif len(secret) not in LENGTHS[label]:
            self.malformed += 1
        else:
            self.lines += 1
            if not self._entries.setdefault(client_random, Secrets()).add(label, secret):
                self.conflicts += 1

    def get(self, client_random: bytes) -> Secrets | None:
        return self._entries.get(bytes(client_random))

    def secret(self, client_random: bytes, label: str) -> bytes | None:
        """One connection's secret of one label; when it is missing, after reading what the files gained since."""
        secrets = self._entries.get(bytes(client_random))
        found = secrets.get(label) if secrets else None
        if found is None and self._catch_up():
            secrets = self._entries.get(bytes(client_random))
            found = secrets.get(label) if secrets else None
        return found

    def _catch_up(self) -> bool:
        """Read the whole lines appended to the files since they were last read (a line still being written is
        left for later); True if there were any."""
        grew = False
        for path, done in self._files.items():
            try:
                if os.stat(path).st_size <= done:
                    continue
                with open(path, "rb") as file:
                    file.seek(done)
                    data = file.read()
            except OSError:  # deleted or replaced meanwhile: what was read stays
                continue
            end = data.rfind(b"\n") + 1
            if end:
                self._files[path] = done + end
                self.add_lines(data[:end].splitlines())
                grew = True
        return grew

    def __contains__(self, client_random: object) -> bool:
        return isinstance(client_random, (bytes, bytearray, memoryview)) and bytes(client_random) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (f"KeyLog(client_randoms={len(self)}, secrets={self.lines}, malformed={self.malformed}, "
                f"ignored={self.ignored}, conflicts={self.conflicts})")
