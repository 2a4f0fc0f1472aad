"""The codec's public functions: headers, message bodies (compiled at first use and cached), and their encoders."""

from __future__ import annotations

import struct
from typing import Callable

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import registry, wire
from kafkatap.dissect.protocol.compiler import compile_struct
from kafkatap.dissect.protocol.encoder import Encoder, compile_encoder
from kafkatap.dissect.protocol.registry import request_header_version, response_header_version

_HEADER = struct.Struct(">hhi")
_DECODERS: dict[tuple[int, int, bool], Callable] = {}
_ENCODERS: dict[tuple[int, int, bool], Encoder] = {}
_NO_TAGS: dict = {}
_REQUEST_HEADER_VERSION = registry.REQUEST_HEADER_VERSIONS.get


def _bytes(buf: bytes | bytearray | memoryview) -> bytes:
    return buf if type(buf) is bytes else bytes(buf)


def _check_known(api_key: int, api_version: int, size: int, pos: int) -> None:
    if registry.api_name(api_key) is None:
        raise DecodeError("unknown_api", pos, f"api key {api_key} v{api_version}, {size} bytes")
    if not registry.is_known(api_key, api_version):
        raise DecodeError("unknown_version", pos, f"{registry.api_name(api_key)} v{api_version}, {size} bytes")


def decoder(api_key: int, api_version: int, response: bool) -> Callable:
    """The compiled body decoder of one (api_key, version, direction); DecodeError if the schemas lack it."""
    key = (api_key, api_version, response)
    fn = _DECODERS.get(key)
    if fn is None:
        _check_known(api_key, api_version, 0, 0)
        fields, flexible = registry.body_fields(api_key, api_version, response)
        label = f"{registry.api_name(api_key)} v{api_version} {'response' if response else 'request'}"
        fn = _DECODERS[key] = compile_struct(fields, flexible, label)
    return fn


def decode_request(api_key: int, api_version: int, buf: bytes, pos: int = 0) -> tuple[dict, int]:
    """Decode a request body (after its header); returns the dict and the position after the last field."""
    fn = _DECODERS.get((api_key, api_version, False))
    if fn is None:
        _check_known(api_key, api_version, len(buf) - pos, pos)
        fn = decoder(api_key, api_version, False)
    return fn(_bytes(buf), pos)


def decode_response(api_key: int, api_version: int, buf: bytes, pos: int = 0) -> tuple[dict, int]:
    """Decode a response body (after its header); returns the dict and the position after the last field."""
    fn = _DECODERS.get((api_key, api_version, True))
    if fn is None:
        _check_known(api_key, api_version, len(buf) - pos, pos)
        fn = decoder(api_key, api_version, True)
    return fn(_bytes(buf), pos)


def decode_request_header(buf: bytes, pos: int = 0) -> tuple[dict, int]:
    """api_key, api_version, correlation_id, client_id (None when null, and in header v0 which has none).

    Hand-written rather than compiled because every frame goes through it and the contract names its first two
    keys api_key/api_version (RequestApiKey/RequestApiVersion in the schema). Unknown keys/versions use header v1.
    """
    buf = _bytes(buf)
    end = len(buf)
    try:
        api_key, api_version, correlation_id = _HEADER.unpack_from(buf, pos)
        pos += 8
        version = _REQUEST_HEADER_VERSION((api_key, api_version), 1)
        header = {"api_key": api_key, "api_version": api_version, "correlation_id": correlation_id,
                  "client_id": None}
        if version == 0:
            return header, pos
        n, = wire.I16.unpack_from(buf, pos)
        pos += 2
        if n >= 0:
            if n > end - pos:
                raise DecodeError("length_too_large", pos - 2, f"request header client_id of {n}, {end - pos} left")
            header["client_id"] = buf[pos:pos + n].decode()
            pos += n
        elif n != -1:
            raise DecodeError("negative_length", pos - 2, f"request header client_id length {n}")
        if version == 2:
            if buf[pos]:
                pos = wire.read_tag_section(buf, pos, header, _NO_TAGS)
            else:
                pos += 1
        return header, pos
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise wire.convert(exc, pos, "request header", end) from None


def decode_response_header(api_key: int, api_version: int, buf: bytes, pos: int = 0) -> tuple[dict, int]:
    """correlation_id (plus unknown tagged fields, if a flexible response header sends any)."""
    buf = _bytes(buf)
    try:
        correlation_id, = wire.I32.unpack_from(buf, pos)
        pos += 4
        header = {"correlation_id": correlation_id}
        if response_header_version(api_key, api_version) == 1:
            count, pos = wire.read_uvarint(buf, pos)
            if count:
                pos = wire.read_tagged(buf, pos, count, header, _NO_TAGS)
        return header, pos
    except (IndexError, struct.error) as exc:
        raise wire.convert(exc, pos, "response header", len(buf)) from None


def encoder(api_key: int, api_version: int, response: bool) -> Encoder:
    key = (api_key, api_version, response)
    enc = _ENCODERS.get(key)
    if enc is None:
        _check_known(api_key, api_version, 0, 0)
        fields, flexible = registry.body_fields(api_key, api_version, response)
        enc = _ENCODERS[key] = compile_encoder(fields, flexible)
    return enc


def encode_request(api_key: int, api_version: int, obj: dict) -> bytes:
    """A request body; fields missing from obj get their schema default, tagged ones are sent only if present."""
    out = bytearray()
    encoder(api_key, api_version, False)(out, obj)
    return bytes(out)


def encode_response(api_key: int, api_version: int, obj: dict) -> bytes:
    out = bytearray()
    encoder(api_key, api_version, True)(out, obj)
    return bytes(out)


def encode_request_header(header: dict) -> bytes:
    """The inverse of decode_request_header (same keys; header version from api_key/api_version)."""
    api_key, api_version = header["api_key"], header["api_version"]
    version = request_header_version(api_key, api_version)
    fields, flexible = registry.header_fields(False, version)
    out = bytearray()
    body = {"request_api_key": api_key, "request_api_version": api_version,
            "correlation_id": header["correlation_id"], "client_id": header.get("client_id")}
    if "_unknown_tagged_fields" in header:
        body["_unknown_tagged_fields"] = header["_unknown_tagged_fields"]
    compile_encoder(fields, flexible)(out, body)
    return bytes(out)


def encode_response_header(api_key: int, api_version: int, header: dict) -> bytes:
    fields, flexible = registry.header_fields(True, response_header_version(api_key, api_version))
    out = bytearray()
    compile_encoder(fields, flexible)(out, header)
    return bytes(out)
