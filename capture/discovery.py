"""--bootstrap: ask one broker which brokers the cluster advertises, so the filter covers every broker port.

A plain socket and one Metadata v1 request (no topics): v1 is answered by every broker since Kafka 0.10 and still by
4.x, and lists each broker's advertised host and port.
"""

from __future__ import annotations

import socket
import struct

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import decode_response, decode_response_header, encode_request, encode_request_header
from kafkatap.dissect.protocol.generated.api_keys import ApiKey

METADATA_VERSION = 1
CORRELATION_ID = 1


class DiscoveryError(RuntimeError):
    """The bootstrap broker could not be reached or did not answer with usable Metadata."""


def parse_hostport(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise DiscoveryError(f"--bootstrap {value!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def metadata_request() -> bytes:
    """The whole request on the wire: length prefix, header v1, Metadata v1 body asking for no topics."""
    header = encode_request_header({"api_key": ApiKey.METADATA, "api_version": METADATA_VERSION,
                                    "correlation_id": CORRELATION_ID, "client_id": "kafkatap-capture"})
    message = header + encode_request(ApiKey.METADATA, METADATA_VERSION, {"topics": []})
    return struct.pack(">i", len(message)) + message


def _read_exact(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            raise DiscoveryError(f"the broker closed the connection after {len(buf)} of {size} bytes")
        buf += chunk
    return bytes(buf)


def discover(bootstrap: str, timeout: float = 5.0) -> list[tuple[int, str, int]]:
    """(node_id, host, port) of every broker the bootstrap broker advertises."""
    host, port = parse_hostport(bootstrap)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(metadata_request())
            size, = struct.unpack(">i", _read_exact(sock, 4))
            if not 0 < size <= 64 << 20:
                raise DiscoveryError(f"implausible response size {size} from {bootstrap}")
            response = _read_exact(sock, size)
    except OSError as exc:
        raise DiscoveryError(f"cannot ask {bootstrap} for its brokers: {exc}") from None
    try:
        header, pos = decode_response_header(ApiKey.METADATA, METADATA_VERSION, response)
        body, _ = decode_response(ApiKey.METADATA, METADATA_VERSION, response, pos)
    except DecodeError as exc:
        raise DiscoveryError(f"{bootstrap} answered Metadata v1 with undecodable bytes: {exc}") from None
    if header["correlation_id"] != CORRELATION_ID:
        raise DiscoveryError(f"{bootstrap} answered with correlation id {header['correlation_id']}")
    return [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]]
