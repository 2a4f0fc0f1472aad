"""Real TLS conversations for the tests: Python's ssl (OpenSSL) on both sides, joined by memory BIOs, with the client
writing a real key log. What each direction put on the wire is kept byte for byte, beside the application data sent.

Python cannot pin TLS 1.3 suites nor send a KeyUpdate, so those conversations run in a child process: the suites come
from an OpenSSL config file (OPENSSL_CONF, Ciphersuites = ...), the KeyUpdate from OpenSSL's SSL_key_update through
ctypes (a crash there costs the child, not the test run).
"""

from __future__ import annotations

import datetime
import functools
import os
import pickle
import random
import ssl
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

ROOT = Path(__file__).resolve().parents[3]
SSL_KEY_UPDATE_REQUESTED = 1


@dataclass(frozen=True)
class Conversation:
    wire: tuple[bytes, bytes]  # client -> server, server -> client, as sent
    sent: tuple[bytes, bytes]  # application data each direction sent
    keylog: bytes  # the client's key log file
    version: str  # as ssl reports it: "TLSv1.3"
    cipher: str  # OpenSSL's name
    flights: tuple[tuple[int, bytes], ...] = ()  # (direction, bytes) in the order the peers sent them


def script(seed: int = 7) -> list[tuple[int, bytes]]:
    """(direction, message): one 40 KB message each way (several records), then 200 small ones, both ways."""
    rng = random.Random(seed)
    messages = [(0, rng.randbytes(40_000)), (1, rng.randbytes(40_000))]
    messages += [(rng.randrange(2), rng.randbytes(rng.randrange(1, 300))) for _ in range(200)]
    return messages


@functools.lru_cache(maxsize=None)
def _certificate(key_type: str) -> tuple[bytes, bytes]:
    """A self-signed (certificate PEM, key PEM), RSA or ECDSA P-256."""
    key = rsa.generate_private_key(65537, 2048) if key_type == "rsa" else ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker.kafkatap.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


class _Link:
    """A client and a server SSLObject, each one's output going to the other's input and to the wire copy."""

    def __init__(self, client: ssl.SSLContext, server: ssl.SSLContext) -> None:
        self.bios = [(ssl.MemoryBIO(), ssl.MemoryBIO()) for _ in range(2)]  # (incoming, outgoing) per side
        self.ends = (client.wrap_bio(*self.bios[0], server_hostname="broker.kafkatap.test"),
                     server.wrap_bio(*self.bios[1], server_side=True))
        self.wire = (bytearray(), bytearray())
        self.flights: list[tuple[int, bytes]] = []
        self.received = (bytearray(), bytearray())  # application data each side read, indexed by sender
        self.done = [False, False]  # handshake finished, per side

    def pump(self) -> None:
        moved = True
        while moved:
            moved = False
            for side in (0, 1):
                data = self.bios[side][1].read()
                if data:
                    self.wire[side].extend(data)
                    self.flights.append((side, data))
                    self.bios[1 - side][0].write(data)
                    moved = True
            for side in (0, 1):
                moved |= self._read(side)

    def _read(self, side: int) -> bool:
        end, got = self.ends[side], False
        if not self.done[side]:
            return False
        while True:
            try:
                data = end.read(1 << 16)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                return got
            if not data:
                return got
            self.received[1 - side].extend(data)
            got = True

    def handshake(self) -> None:
        while not all(self.done):
            for side in (0, 1):
                if not self.done[side]:
                    try:
                        self.ends[side].do_handshake()
                        self.done[side] = True
                    except ssl.SSLWantReadError:
                        pass
            self.pump()

    def close(self) -> None:
        """Each side sends close_notify."""
        for side in (0, 1):
            try:
                self.ends[side].unwrap()
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
            self.pump()


def _key_update(end: ssl.SSLObject) -> None:
    """SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) on the SSL* inside the SSLObject: CPython's PySSLSocket is
    PyObject_HEAD, the Python socket, then the SSL*."""
    import ctypes
    import ctypes.util

    libssl = ctypes.CDLL(ctypes.util.find_library("ssl"))
    libssl.SSL_version.argtypes = [ctypes.c_void_p]
    libssl.SSL_key_update.argtypes = [ctypes.c_void_p, ctypes.c_int]
    pointer = ctypes.c_void_p.from_address(id(end._sslobj) + 3 * ctypes.sizeof(ctypes.c_void_p)).value
    if libssl.SSL_version(pointer) != 0x0304 or libssl.SSL_key_update(pointer, SSL_KEY_UPDATE_REQUESTED) != 1:
        raise RuntimeError("SSL_key_update refused")


def converse(*, key_type: str = "rsa", maximum_version: ssl.TLSVersion | None = None, ciphers: str | None = None,
             messages: list[tuple[int, bytes]] | None = None, key_update: bool = False) -> Conversation:
    """Run one conversation in this process (TLS 1.3 suites: whatever OpenSSL's configuration allows)."""
    messages = script() if messages is None else messages
    with tempfile.TemporaryDirectory() as tmp:
        cert_pem, key_pem = _certificate(key_type)
        (Path(tmp) / "cert.pem").write_bytes(cert_pem)
        (Path(tmp) / "key.pem").write_bytes(key_pem)
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(Path(tmp) / "cert.pem", Path(tmp) / "key.pem")
        client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client.check_hostname = False
        client.verify_mode = ssl.CERT_NONE
        client.keylog_filename = str(Path(tmp) / "keylog.txt")
        for context in (client, server):
            if maximum_version is not None:
                context.maximum_version = maximum_version
            if ciphers is not None:
                context.set_ciphers(ciphers)
        link = _Link(client, server)
        link.handshake()
        sent = (bytearray(), bytearray())
        for index, (side, message) in enumerate(messages):
            if key_update and index == len(messages) // 2:
                _key_update(link.ends[0])
            link.ends[side].write(message)
            sent[side].extend(message)
            link.pump()
        link.close()
        assert link.received == sent, "the TLS peers themselves disagree"
        version, cipher = link.ends[0].version(), link.ends[0].cipher()[0]
        keylog = (Path(tmp) / "keylog.txt").read_bytes()
    return Conversation((bytes(link.wire[0]), bytes(link.wire[1])), (bytes(sent[0]), bytes(sent[1])), keylog,
                        version, cipher, tuple(link.flights))


def converse_apart(*, tls13_suite: str | None = None, key_update: bool = False, **options: object) -> Conversation:
    """converse() in a child process: TLS 1.3 pinned to one suite through an OpenSSL config file, and/or a KeyUpdate.
    Raises RuntimeError with the child's stderr when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        if tls13_suite is not None:
            config = Path(tmp) / "openssl.cnf"
            config.write_text("openssl_conf = conf\n[conf]\nssl_conf = ssl\n[ssl]\nsystem_default = tls\n"
                              f"[tls]\nCiphersuites = {tls13_suite}\n")
            env["OPENSSL_CONF"] = str(config)
        out = Path(tmp) / "conversation.pickle"
        (Path(tmp) / "options.pickle").write_bytes(pickle.dumps(dict(options, key_update=key_update)))
        done = subprocess.run([sys.executable, "-m", "tests.dissect.tls.conversations", tmp], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"conversation child failed ({done.returncode}): {done.stderr[-2000:]}")
        return Conversation(**pickle.loads(out.read_bytes()))


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    result = converse(**pickle.loads((folder / "options.pickle").read_bytes()))
    (folder / "conversation.pickle").write_bytes(pickle.dumps(vars(result)))  # plain types: no __main__ class
