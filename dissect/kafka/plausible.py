"""What the start of a Kafka frame looks like, per direction: used to resynchronise, to find Kafka on unknown ports
and to tell the client from the broker when the capture missed the SYN.

A request is plausible when its size fits, its api key and version are known, its correlation id is not negative (and
after the last one seen: clients count up per connection), its client id decodes and, once the whole frame is there,
its body decodes to exactly the frame's size. A response is plausible when its correlation id is one the connection
is waiting for and its body decodes as the answer to that request. Decoding the candidate is what makes a false
match in record data or zero padding practically impossible; it only runs while resynchronising.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.kafka.framing import MAX_FRAME, MORE, NO, YES
from kafkatap.dissect.protocol import (decode_request, decode_request_header, decode_response, decode_response_header,
                                       is_known, request_header_version)
from kafkatap.dissect.protocol.generated.api_keys import ApiKey

_REQUEST_HEAD = struct.Struct(">ihhih").unpack_from  # size, api_key, api_version, correlation_id, client_id length
_RESPONSE_HEAD = struct.Struct(">ii").unpack_from  # size, correlation_id

TRAILING_SLACK = 8
"""Bytes after a decoded body still accepted while resynchronising: some brokers (librdkafka's mock cluster) end
flexible responses with an extra empty tag buffer. The engine reports such bytes as `trailing_bytes` anomalies."""

_REQUEST_CANDIDATE = re.compile(rb"(?=[\x00-\x06].{3}\x00[\x00-\x7f]\x00[\x00-\x3f])", re.S)
"""Bytes that could start a request: size < 112 MiB (first byte <= 6), api key and version < 128 and < 64."""


def request_check(buf: bytes | bytearray, pos: int, last_correlation_id: int | None = None, *,
                  body: bool = True, known: bool = True) -> int:
    """YES / NO / MORE: does buf[pos:] start with a plausible request (size prefix included)?

    body=False checks the header only (needed for frames over MAX_FRAME). known=False also accepts an api key or
    version the schemas lack: only where a frame must start (a stream's first byte after its SYN), so that a newer
    client's request is reported as such instead of being skipped."""
    if len(buf) - pos < 14:
        return MORE
    size, api_key, api_version, correlation_id, client_id_len = _REQUEST_HEAD(buf, pos)
    if size < 8 or correlation_id < 0 or api_key < 0 or api_version < 0:
        return NO
    if known and not is_known(api_key, api_version):
        return NO
    if last_correlation_id is not None and not 0 < correlation_id - last_correlation_id < 1 << 20:
        return NO
    if request_header_version(api_key, api_version) > 0:
        if client_id_len < -1 or 10 + max(client_id_len, 0) > size:
            return NO
        if client_id_len > 0:
            if len(buf) - pos < 14 + client_id_len:
                return MORE
            try:
                bytes(buf[pos + 14:pos + 14 + client_id_len]).decode()
            except UnicodeDecodeError:
                return NO
    if not body or size > MAX_FRAME:
        return YES
    if len(buf) - pos < 4 + size:
        return MORE
    frame = bytes(buf[pos + 4:pos + 4 + size])
    try:
        _, at = decode_request_header(frame, 0)
        _, end = decode_request(api_key, api_version, frame, at)
    except DecodeError:
        return NO
    return YES if size - TRAILING_SLACK <= end <= size else NO


def decode_answer(api_key: int, api_version: int, frame: bytes) -> tuple[dict, int]:
    """Decode a response frame (header and body) as the answer to (api_key, api_version): (body, end offset).

    A broker that does not support the client's ApiVersions version answers in v0 (KIP-511), so clients retry
    ApiVersions decoding as v0; so do we."""
    try:
        _, at = decode_response_header(api_key, api_version, frame, 0)
        return decode_response(api_key, api_version, frame, at)
    except DecodeError:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        return decode_response(ApiKey.API_VERSIONS, 0, frame, 4)


REQUEST_MIN_SIZE = 8
"""The smallest request frame: api_key, api_version, correlation_id."""
RESPONSE_MIN_SIZE = 4
"""The smallest response frame: the correlation id."""


class RequestSync:
    """Sync for the client's direction: the request header's shape, confirmed by decoding the body."""

    __slots__ = ("last_correlation_id", "min_size")

    def __init__(self) -> None:
        self.last_correlation_id: int | None = None
        self.min_size = REQUEST_MIN_SIZE  # 0 while raw SASL tokens may come

    def check(self, buf: bytes | bytearray, pos: int) -> int:
        return request_check(buf, pos, self.last_correlation_id)

    def check_start(self, buf: bytes | bytearray, pos: int) -> int:
        """At a stream's first byte after its SYN a frame must start: a request-shaped header is enough."""
        return request_check(buf, pos, body=False, known=False)

    def scan(self, buf: bytes | bytearray, pos: int) -> int:
        m = _REQUEST_CANDIDATE.search(buf, pos)
        return m.start() if m else -1


class ResponseSync:
    """Sync for the broker's direction: a correlation id some request is waiting for, and a body that decodes as
    that request's answer."""

    __slots__ = ("awaited", "raw_tokens", "min_size")

    def __init__(self, awaited: Callable[[], dict[int, tuple[int, int]]]) -> None:
        self.awaited = awaited  # correlation id -> (api_key, api_version) of the oldest in-flight requests
        self.raw_tokens = False  # after SaslHandshake v0 the broker sends size-prefixed raw SASL tokens
        self.min_size = RESPONSE_MIN_SIZE  # 0 while raw SASL tokens may come

    def check(self, buf: bytes | bytearray, pos: int) -> int:
        if len(buf) - pos < 8:
            return MORE
        size, correlation_id = _RESPONSE_HEAD(buf, pos)
        if size < self.min_size:
            return NO
        api = self.awaited().get(correlation_id)
        if api is None:
            return YES if self.raw_tokens and size <= MAX_FRAME else NO
        api_key, api_version = api
        if size > MAX_FRAME or not is_known(api_key, api_version):
            return YES
        if len(buf) - pos < 4 + size:
            return MORE
        try:
            _, end = decode_answer(api_key, api_version, bytes(buf[pos + 4:pos + 4 + size]))
        except DecodeError:
            return NO
        return YES if size - TRAILING_SLACK <= end <= size else NO

    def check_start(self, buf: bytes | bytearray, pos: int) -> int:
        """A response stream is never anchored (after a SYN its framer starts synced): the same as `check`."""
        return self.check(buf, pos)

    def scan(self, buf: bytes | bytearray, pos: int) -> int:
        best = -1
        for correlation_id in self.awaited():
            at = buf.find(correlation_id.to_bytes(4, "big", signed=True), pos + 4)
            if at >= 0 and (best < 0 or at - 4 < best):
                best = at - 4
        return best
