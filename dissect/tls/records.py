"""TLS record framing (RFC 8446 §5.1, RFC 5246 §6.2): one direction's byte stream cut into records.

Each record is a 5-byte header (content type, legacy record version, length) and that many bytes. A header no TLS
peer could send (unknown content type, a version outside SSL 3.0 .. TLS 1.3, a length above 2^14 + 256, an empty
non-application record) means the stream is not TLS or is no longer framed where it should be: the buffer stops with
`error` set and never guesses where the next record starts.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

CHANGE_CIPHER_SPEC = 20
ALERT = 21
HANDSHAKE = 22
APPLICATION_DATA = 23
HEARTBEAT = 24  # RFC 6520; TLS 1.2 only
CONTENT_TYPES = frozenset((CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA, HEARTBEAT))
HEADER_LENGTH = 5
MAX_LENGTH = 2**14 + 256  # TLSCiphertext.length (RFC 8446 §5.2): a plaintext record's limit is lower
_HEADER = struct.Struct(">BHH")


class Record(NamedTuple):
    content_type: int  # the outer type: a TLS 1.3 record's real type is inside its encrypted fragment
    version: int  # legacy_record_version
    header: bytes  # the 5 header bytes, a TLS 1.3 record's additional data
    fragment: bytes

    @property
    def size(self) -> int:
        return HEADER_LENGTH + len(self.fragment)


def header_problem(content_type: int, version: int, length: int) -> str | None:
    """Why these header fields cannot start a TLS record, or None."""
    if content_type not in CONTENT_TYPES:
        return f"content type {content_type} is not a TLS record's"
    if not 0x0300 <= version <= 0x0304:
        return f"record version 0x{version:04x} is not SSL 3.0 .. TLS 1.3"
    if length > MAX_LENGTH:
        return f"record length {length} exceeds {MAX_LENGTH}"
    if length == 0 and content_type != APPLICATION_DATA:
        return f"empty record of content type {content_type}"
    return None


class RecordBuffer:
    """One direction's bytes in, whole records out, in order."""

    __slots__ = ("_buffer", "_start", "error")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._start = 0  # bytes of _buffer already handed out as records
        self.error: str | None = None  # why the next bytes are not a record

    def extend(self, data: bytes | bytearray | memoryview) -> None:
        if self._start:
            del self._buffer[:self._start]
            self._start = 0
        self._buffer += data

    @property
    def pending(self) -> int:
        """Buffered bytes not yet handed out."""
        return len(self._buffer) - self._start

    def peek(self) -> Record | None:
        """The next whole record, left in the buffer until pop(); None when incomplete or when `error` is set."""
        start = self._start
        if self.error is not None or len(self._buffer) - start < HEADER_LENGTH:
            return None
        content_type, version, length = _HEADER.unpack_from(self._buffer, start)
        self.error = header_problem(content_type, version, length)
        end = start + HEADER_LENGTH + length
        if self.error is not None or len(self._buffer) < end:
            return None
        with memoryview(self._buffer) as view:
            return Record(content_type, version, bytes(view[start:start + HEADER_LENGTH]),
                          bytes(view[start + HEADER_LENGTH:end]))

    def pop(self, record: Record) -> None:
        """Consume the record peek() returned."""
        self._start += record.size

    def drain(self) -> int:
        """Drop every buffered byte; return how many there were."""
        dropped = self.pending
        self._buffer.clear()
        self._start = 0
        return dropped
