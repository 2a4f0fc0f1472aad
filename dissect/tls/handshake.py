"""Handshake messages (RFC 8446 §4, RFC 5246 §7.4) reassembled from one direction's handshake content, and the two
read here: ClientHello (client_random, offered versions, early data) and ServerHello (server_random, cipher suite,
selected version; a HelloRetryRequest is a ServerHello with a fixed random, RFC 8446 §4.1.3).

The bytes are the peer's, possibly hostile: every read is checked against what is there, and anything that does not
fit raises Malformed.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

CLIENT_HELLO = 1
SERVER_HELLO = 2
FINISHED = 20
KEY_UPDATE = 24
EARLY_DATA = 42  # extension types
SUPPORTED_VERSIONS = 43
HELLO_RETRY_REQUEST_RANDOM = hashlib.sha256(b"HelloRetryRequest").digest()
KEPT = frozenset((CLIENT_HELLO, SERVER_HELLO, KEY_UPDATE))  # the messages whose bodies are read
MAX_KEPT = 1 << 17  # a hello's fields are 2-byte-length vectors: no real one comes near


class Malformed(ValueError):
    """Handshake bytes that break the message format."""


class ClientHello(NamedTuple):
    random: bytes
    versions: tuple[int, ...]  # supported_versions, else the legacy_version alone
    early_data: bool  # offers 0-RTT data (RFC 8446 §4.2.10)


class ServerHello(NamedTuple):
    random: bytes
    cipher_suite: int
    version: int  # supported_versions' selected_version, else the legacy_version
    retry: bool  # a HelloRetryRequest: another ClientHello and ServerHello follow


class _Cursor:
    """Reads of a message body, each checked against its length."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def take(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._data):
            raise Malformed(f"{n} bytes wanted at offset {self._pos} of a {len(self._data)}-byte field")
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def vector(self, length_size: int) -> bytes:
        return self.take(self.uint(length_size))

    @property
    def done(self) -> bool:
        return self._pos == len(self._data)


def _extensions(hello: _Cursor) -> dict[int, bytes]:
    """extension_type -> extension_data (absent extensions: an old-style hello, valid before TLS 1.3)."""
    found: dict[int, bytes] = {}
    if hello.done:
        return found
    block = _Cursor(hello.vector(2))
    while not block.done:
        extension_type = block.uint(2)
        found.setdefault(extension_type, block.vector(2))
    if not hello.done:
        raise Malformed("bytes after the extensions")
    return found


def parse_client_hello(body: bytes) -> ClientHello:
    hello = _Cursor(body)
    legacy_version = hello.uint(2)
    random = hello.take(32)
    hello.vector(1)  # legacy_session_id
    hello.vector(2)  # cipher_suites
    hello.vector(1)  # legacy_compression_methods
    extensions = _extensions(hello)
    versions: tuple[int, ...] = (legacy_version,)
    if SUPPORTED_VERSIONS in extensions:
        listed = _Cursor(extensions[SUPPORTED_VERSIONS]).vector(1)
        if not listed or len(listed) % 2:
            raise Malformed("supported_versions of odd length")
        versions = tuple(int.from_bytes(listed[i:i + 2], "big") for i in range(0, len(listed), 2))
    return ClientHello(random, versions, EARLY_DATA in extensions)


def parse_server_hello(body: bytes) -> ServerHello:
    hello = _Cursor(body)
    version = hello.uint(2)
    random = hello.take(32)
    hello.vector(1)  # legacy_session_id_echo
    cipher_suite = hello.uint(2)
    hello.uint(1)  # legacy_compression_method
    extensions = _extensions(hello)
    if SUPPORTED_VERSIONS in extensions:
        selected = _Cursor(extensions[SUPPORTED_VERSIONS])
        version = selected.uint(2)
        if not selected.done:
            raise Malformed("supported_versions longer than one version")
    return ServerHello(random, cipher_suite, version, random == HELLO_RETRY_REQUEST_RANDOM)


class HandshakeReader:
    """One direction's handshake messages from its handshake content, in order: a message may span records and a
    record may hold several. Bodies are kept only for KEPT messages; the others (a certificate chain, say) are skipped
    as they pass and cost no buffer."""

    __slots__ = ("_header", "_type", "_body", "_left")

    def __init__(self) -> None:
        self._header = bytearray()  # a message header being read
        self._type = -1  # the message being read; -1 between messages
        self._body: bytearray | None = None  # its body so far, when kept
        self._left = 0  # its body bytes still to come

    def feed(self, content: bytes) -> list[tuple[int, bytes | None]]:
        """The messages this content completes: (msg_type, body, or None when not kept)."""
        messages: list[tuple[int, bytes | None]] = []
        view = memoryview(content)
        while view:
            if self._type < 0:
                missing = 4 - len(self._header)
                self._header += view[:missing]
                view = view[missing:]
                if len(self._header) < 4:
                    break
                self._type = self._header[0]
                self._left = int.from_bytes(self._header[1:], "big")
                self._header.clear()
                if self._type in KEPT:
                    if self._left > MAX_KEPT:
                        raise Malformed(f"handshake message {self._type} of {self._left} bytes")
                    self._body = bytearray()
            step = min(self._left, len(view))
            if self._body is not None:
                self._body += view[:step]
            view = view[step:]
            self._left -= step
            if not self._left:
                messages.append((self._type, None if self._body is None else bytes(self._body)))
                self._type, self._body = -1, None
        return messages
