"""Record protection: one direction's records opened with its traffic keys and sequence number.

TLS 1.3 (RFC 8446 §5.2, §5.3): nonce = write_iv XOR the 64-bit sequence number, additional data = the record header,
the plaintext ends with the real content type followed by zero padding.
TLS 1.2 AES-GCM (RFC 5288 §3): nonce = the implicit 4-byte salt || the record's explicit 8-byte nonce;
TLS 1.2 ChaCha20-Poly1305 (RFC 7905 §2): nonce = write_IV XOR the sequence number, no explicit part;
both: additional data = seq_num || type || version || plaintext length (RFC 5246 §6.2.3.3).

A record that fails authentication (or is too short to carry a tag) raises cryptography's InvalidTag and leaves the
sequence number where it was, so the caller decides whether that record counted (a damaged record: skip() it) or was
never under these keys (0-RTT data the server skipped too).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag

from kafkatap.dissect.tls.keyschedule import next_traffic_secret, traffic_keys
from kafkatap.dissect.tls.records import Record
from kafkatap.dissect.tls.suites import TAG_LENGTH, CipherSuite

NONCE_LENGTH = 12


class Tls13Decrypter:
    """One direction under one TLS 1.3 traffic secret at a time (KeyUpdate moves it to the next)."""

    __slots__ = ("suite", "seq", "_secret", "_aead", "_iv")

    def __init__(self, suite: CipherSuite, secret: bytes) -> None:
        self.suite = suite
        self._rekey(secret)

    def _rekey(self, secret: bytes) -> None:
        key, iv = traffic_keys(self.suite, secret)
        self._secret = secret
        self._aead = self.suite.aead(key)
        self._iv = int.from_bytes(iv, "big")
        self.seq = 0

    def update(self) -> None:
        """A KeyUpdate was sent: the next records are under application_traffic_secret_N+1, from sequence 0."""
        self._rekey(next_traffic_secret(self.suite, self._secret))

    def open(self, record: Record) -> tuple[int, bytes]:
        """(inner content type, content) of a TLSCiphertext; the type is 0 when the plaintext is all padding."""
        if len(record.fragment) < TAG_LENGTH + 1:
            raise InvalidTag
        nonce = (self._iv ^ self.seq).to_bytes(NONCE_LENGTH, "big")
        inner = self._aead.decrypt(nonce, record.fragment, record.header).rstrip(b"\0")
        self.seq += 1
        return (inner[-1], inner[:-1]) if inner else (0, b"")

    def skip(self) -> None:
        self.seq += 1


class Tls12Decrypter:
    """One direction of a TLS 1.2 AEAD connection, from its ChangeCipherSpec on."""

    __slots__ = ("suite", "seq", "_aead", "_iv")

    def __init__(self, suite: CipherSuite, key: bytes, iv: bytes) -> None:
        self.suite = suite
        self.seq = 0
        self._aead = suite.aead(key)
        self._iv = iv

    def open(self, record: Record) -> bytes:
        explicit = self.suite.record_iv_length
        length = len(record.fragment) - explicit - TAG_LENGTH
        if length < 0:
            raise InvalidTag
        seq = self.seq.to_bytes(8, "big")
        if explicit:
            nonce = self._iv + record.fragment[:explicit]
            ciphertext = memoryview(record.fragment)[explicit:]
        else:
            nonce = (int.from_bytes(self._iv, "big") ^ self.seq).to_bytes(NONCE_LENGTH, "big")
            ciphertext = memoryview(record.fragment)
        plaintext = self._aead.decrypt(nonce, ciphertext, seq + record.header[:3] + length.to_bytes(2, "big"))
        self.seq += 1
        return plaintext

    def skip(self) -> None:
        self.seq += 1
