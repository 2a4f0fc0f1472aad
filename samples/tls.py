"""TLS in front of Tansu, which (0.6) does not complete a TLS handshake itself: a terminator on 127.0.0.1 accepts TLS
connections and forwards each one's Kafka frames, decrypted, to the broker, which advertises the terminator's port
(`Tansu(port, advertised=...)`) so that clients come back through it. With `users`, the terminator also plays the
broker's part of a SASL/PLAIN login (SaslHandshake v1, SaslAuthenticate v0-2; Tansu refuses PLAIN), so a capture can
hold SASL inside TLS. The clients write the key log: `client_context(keylog=...)` sets `SSLContext.keylog_filename`.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import struct
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

if TYPE_CHECKING:
    from kafkatap.samples.make import TlsSpec

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
SASL_AUTHENTICATION_FAILED = 58
_HEAD = struct.Struct(">hhi")


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost (RSA, so TLS 1.2 negotiates ECDHE_RSA), and its key: PEM files."""
    key = rsa.generate_private_key(65537, 2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafkatap TLS terminator")])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=7)).add_extension(names, critical=False)
            .sign(key, hashes.SHA256()))
    certfile, keyfile = folder / "terminator.crt", folder / "terminator.key"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return certfile, keyfile


def client_context(cafile: Path, keylog: Path, maximum_version: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """What a kafka-python client passes as `ssl_context`: trusts the terminator, writes its secrets to keylog."""
    context = ssl.create_default_context(cafile=str(cafile))
    context.keylog_filename = str(keylog)
    if maximum_version is not None:
        context.maximum_version = maximum_version
    return context


class TlsTerminator:
    """TLS on 127.0.0.1:port, forwarded in the clear to 127.0.0.1:upstream, while the block runs (in a thread)."""

    def __init__(self, port: int, upstream: int, certfile: Path, keyfile: Path,
                 users: dict[str, str] | None = None) -> None:
        self.port = port
        self.upstream = upstream
        self.bootstrap = f"127.0.0.1:{port}"
        self.users = users
        self.logins: list[tuple[str, bool]] = []  # (user, accepted) of each SASL/PLAIN login
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(certfile, keyfile)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def __enter__(self) -> TlsTerminator:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=self._context), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _serve(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        broker, to_broker = await asyncio.open_connection("127.0.0.1", self.upstream)
        try:
            await asyncio.gather(self._requests(client, to_client, to_broker), _pipe(broker, to_client))
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            for writer in (to_broker, to_client):
                writer.close()

    async def _requests(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter,
                        to_broker: asyncio.StreamWriter) -> None:
        """The client's frames to the broker, but SASL ones answered here (whole frames, so writes never mix)."""
        while (frame := await _frame(client)) is not None:
            api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 4)
            if self.users is not None and api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
                to_client.write(self._sasl(frame, api_key, api_version, correlation_id))
            else:
                to_broker.write(frame)
        to_broker.close()

    def _sasl(self, frame: bytes, api_key: int, api_version: int, correlation_id: int) -> bytes:
        if api_key == SASL_HANDSHAKE:
            return _sized(struct.pack(">ihi", correlation_id, 0, 1) + _string("PLAIN"))
        user, password = _plain(frame, api_version)
        accepted = self.users.get(user) == password
        self.logins.append((user, accepted))
        return _authenticate_response(correlation_id, api_version, accepted)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while (frame := await _frame(reader)) is not None:
        writer.write(frame)
        await writer.drain()
    writer.close()


async def _frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next whole frame (its size prefix included), or None at the end of the stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError:
        return None
    return head + await reader.readexactly(struct.unpack(">i", head)[0])


def _plain(frame: bytes, api_version: int) -> tuple[str, str]:
    """(user, password) of a SaslAuthenticate request's PLAIN token (`authzid NUL user NUL password`)."""
    pos = 4 + _HEAD.size
    client_id_length = struct.unpack_from(">h", frame, pos)[0]
    pos += 2 + max(client_id_length, 0)
    if api_version >= 2:  # flexible: the header's tagged fields (none), then compact bytes
        pos += 1
        length, pos = frame[pos] - 1, pos + 1
    else:
        length, pos = struct.unpack_from(">i", frame, pos)[0], pos + 4
    parts = frame[pos:pos + length].split(b"\0")
    return (parts[1].decode(), parts[2].decode()) if len(parts) == 3 else ("", "")


def _authenticate_response(correlation_id: int, api_version: int, accepted: bool) -> bytes:
    error = 0 if accepted else SASL_AUTHENTICATION_FAILED
    message = None if accepted else "wrong user or password"
    if api_version >= 2:  # flexible header (tagged fields) and body: compact string and bytes, tagged fields
        text = b"\0" if message is None else bytes([len(message) + 1]) + message.encode()
        return _sized(struct.pack(">ib", correlation_id, 0) + struct.pack(">h", error) + text + b"\x01"
                      + struct.pack(">q", 0) + b"\0")
    text = struct.pack(">h", -1) if message is None else _string(message)
    body = struct.pack(">ih", correlation_id, error) + text + struct.pack(">i", 0)
    return _sized(body + (struct.pack(">q", 0) if api_version >= 1 else b""))


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _sized(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


class TlsClients:
    """A sample's TLS side while it is made: a certificate, the terminator in front of Tansu, and the settings its
    kafka-python clients take (`config()`), which write their secrets to `keylog`."""

    def __init__(self, spec: TlsSpec, upstream: int, keylog: Path) -> None:
        self.spec = spec
        self.upstream = upstream
        self.keylog = keylog
        self.bootstrap = f"127.0.0.1:{spec.port}"
        self._folder = tempfile.TemporaryDirectory(prefix="kafkatap-tls-")
        self._terminator: TlsTerminator | None = None
        self.cafile = Path()

    def __enter__(self) -> TlsClients:
        self.cafile, keyfile = self_signed(Path(self._folder.name))
        users = dict(self.spec.sasl_users) or None
        self._terminator = TlsTerminator(self.spec.port, self.upstream, self.cafile, keyfile, users).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._terminator is not None:
            self._terminator.__exit__(*exc)
        self._folder.cleanup()

    @property
    def logins(self) -> list[tuple[str, bool]]:
        return self._terminator.logins if self._terminator is not None else []

    def config(self) -> dict:
        """kafka-python settings: TLS through the terminator (and SASL/PLAIN as its first user, if it has users)."""
        maximum = ssl.TLSVersion[self.spec.maximum_version] if self.spec.maximum_version else None
        config = {"bootstrap_servers": self.bootstrap, "ssl_context": client_context(self.cafile, self.keylog, maximum),
                  "security_protocol": "SASL_SSL" if self.spec.sasl_users else "SSL"}
        if self.spec.sasl_users:
            user, password = self.spec.sasl_users[0]
            config.update(sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=password)
        return config
