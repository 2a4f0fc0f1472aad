"""Hand-built TLS 1.3 connections, for what Python's ssl cannot be made to send: 0-RTT records, a HelloRetryRequest,
a suite the package does not decrypt, padding, empty records, hellos split across records, KeyUpdates on demand.

The handshake messages are minimal but well-formed; only the records' protection is real. Its keys come from random
traffic secrets through an HKDF-Expand-Label written here with hashlib and hmac, apart from the package's own.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from kafkatap.dissect.tls import KeyLog

HRR_RANDOM = hashlib.sha256(b"HelloRetryRequest").digest()
# code -> (hash name, AEAD, key length); 0x1304 (TLS_AES_128_CCM_SHA256) is forged with GCM: it is never opened
SUITES = {0x1301: ("sha256", AESGCM, 16), 0x1302: ("sha384", AESGCM, 32), 0x1303: ("sha256", ChaCha20Poly1305, 32),
          0x1304: ("sha256", AESGCM, 16)}
LABELS = ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
          "SERVER_TRAFFIC_SECRET_0")


def expand_label(hash_name: str, secret: bytes, label: bytes, length: int) -> bytes:
    """RFC 8446 §7.1 over RFC 5869's HKDF-Expand, from hmac."""
    full = b"tls13 " + label
    info = struct.pack(">HB", length, len(full)) + full + b"\0"
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(secret, block + info + bytes([counter]), hash_name).digest()
        out += block
        counter += 1
    return out[:length]


def record(content_type: int, fragment: bytes, version: int = 0x0303) -> bytes:
    return struct.pack(">BHH", content_type, version, len(fragment)) + fragment


def message(msg_type: int, body: bytes) -> bytes:
    return bytes([msg_type]) + len(body).to_bytes(3, "big") + body


def extension(extension_type: int, data: bytes) -> bytes:
    return struct.pack(">HH", extension_type, len(data)) + data


def client_hello(random: bytes, early_data: bool = False) -> bytes:
    extensions = extension(43, b"\x02\x03\x04") + (extension(42, b"") if early_data else b"")
    body = (b"\x03\x03" + random + b"\x20" + bytes(32) + b"\x00\x06\x13\x01\x13\x02\x13\x03" + b"\x01\x00"
            + struct.pack(">H", len(extensions)) + extensions)
    return message(1, body)


def server_hello(random: bytes, suite: int) -> bytes:
    extensions = extension(43, b"\x03\x04")
    body = b"\x03\x03" + random + b"\x20" + bytes(32) + struct.pack(">HBH", suite, 0, len(extensions)) + extensions
    return message(2, body)


class Sealer:
    """One direction's TLS 1.3 record protection."""

    def __init__(self, suite: int, secret: bytes) -> None:
        self.hash_name, self.aead_type, self.key_length = SUITES[suite]
        self.rekey(secret)

    def rekey(self, secret: bytes) -> None:
        self.secret = secret
        self.aead = self.aead_type(expand_label(self.hash_name, secret, b"key", self.key_length))
        self.iv = int.from_bytes(expand_label(self.hash_name, secret, b"iv", 12), "big")
        self.seq = 0

    def update(self) -> None:
        self.rekey(expand_label(self.hash_name, self.secret, b"traffic upd", len(self.secret)))

    def seal(self, content_type: int, content: bytes, padding: int = 0) -> bytes:
        inner = content + bytes([content_type]) + bytes(padding)
        header = struct.pack(">BHH", 23, 0x0303, len(inner) + 16)
        nonce = (self.iv ^ self.seq).to_bytes(12, "big")
        self.seq += 1
        return header + self.aead.encrypt(nonce, inner, header)


class Tls13Forge:
    """A TLS 1.3 connection written record by record: wire[direction] grows as methods are called, sent[direction]
    holds the application data those records carry."""

    def __init__(self, suite: int = 0x1301, early_data: bool = False, retry: bool = False,
                 split_hello: bool = False) -> None:
        self.suite = suite
        length = hashlib.new(SUITES[suite][0]).digest_size
        self.secrets = {label: os.urandom(length) for label in LABELS}
        self.client_random = os.urandom(32)
        self.wire = [bytearray(), bytearray()]
        self.sent = [bytearray(), bytearray()]
        self.early_bytes = 0  # client bytes of 0-RTT records
        hello = client_hello(self.client_random, early_data)
        if split_hello:
            self.wire[0] += record(22, hello[:50], 0x0301) + record(22, hello[50:])
        else:
            self.wire[0] += record(22, hello, 0x0301)
        if early_data:
            early = Sealer(suite, os.urandom(length))
            records = early.seal(23, b"0-RTT request") + early.seal(22, message(5, b""))  # EndOfEarlyData
            self.wire[0] += records
            self.early_bytes = len(records)
        if retry:
            self.wire[1] += record(22, server_hello(HRR_RANDOM, suite)) + record(20, b"\x01")
            self.wire[0] += record(20, b"\x01") + record(22, client_hello(self.client_random))
        self.wire[1] += record(22, server_hello(os.urandom(32), suite))
        if not retry:
            self.wire[1] += record(20, b"\x01")
            self.wire[0] += record(20, b"\x01")
        self.sealers = [Sealer(suite, self.secrets[LABELS[0]]), Sealer(suite, self.secrets[LABELS[1]])]
        flight = message(8, b"\x00\x00") + message(11, os.urandom(20_000)) + message(15, os.urandom(80))
        for start in range(0, len(flight), 2**14):  # the certificate spans records
            self.wire[1] += self.sealers[1].seal(22, flight[start:start + 2**14])
        self.wire[1] += self.sealers[1].seal(22, message(20, os.urandom(length)))
        self.wire[0] += self.sealers[0].seal(22, message(20, os.urandom(length)))
        self.sealers = [Sealer(suite, self.secrets[LABELS[2]]), Sealer(suite, self.secrets[LABELS[3]])]
        self.wire[1] += self.sealers[1].seal(22, message(4, os.urandom(40)))  # NewSessionTicket

    def keylog(self, *labels: str) -> KeyLog:
        """A key log with these labels' secrets (all four by default)."""
        keylog = KeyLog()
        keylog.add_lines(f"{label} {self.client_random.hex()} {self.secrets[label].hex()}"
                         for label in labels or LABELS)
        return keylog

    def send(self, direction: int, data: bytes, padding: int = 0) -> None:
        for start in range(0, max(len(data), 1), 2**14 - padding):
            self.wire[direction] += self.sealers[direction].seal(23, data[start:start + 2**14 - padding], padding)
        self.sent[direction].extend(data)

    def key_update(self, direction: int, requested: bool = False) -> None:
        self.wire[direction] += self.sealers[direction].seal(22, message(24, bytes([requested])))
        self.sealers[direction].update()

    def sealed(self, direction: int, content_type: int, content: bytes, padding: int = 0) -> bytes:
        """A record as this direction would send it, appended to its wire; returned too."""
        sealed = self.sealers[direction].seal(content_type, content, padding)
        self.wire[direction] += sealed
        return sealed
