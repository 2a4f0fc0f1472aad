"""The classic consumer protocol: the bytes JoinGroup metadata and SyncGroup assignments carry for "consumer" groups.

Wire form (Kafka's ConsumerProtocol): an int16 version, then the ConsumerProtocolSubscription or
ConsumerProtocolAssignment struct at that version, never flexible. As Kafka's own reader does, a version newer than
the newest the schemas define is read with the newest layout (new versions may only append fields) and the bytes
after it, the newer fields, are left unread; at a known version leftover bytes are an error. The tables come from the
generator (`generated/consumer_protocol.py`) and are compiled by the same compiler as the api messages.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import wire
from kafkatap.dissect.protocol.compiler import compile_struct
from kafkatap.dissect.protocol.encoder import compile_encoder
from kafkatap.dissect.protocol.generated import consumer_protocol
from kafkatap.dissect.protocol.table import Field, fields_for, message_versions

ASSIGNMENT, SUBSCRIPTION = "assignment", "subscription"
_MESSAGES = {ASSIGNMENT: consumer_protocol.ASSIGNMENT, SUBSCRIPTION: consumer_protocol.SUBSCRIPTION}
NEWEST = {kind: message_versions(msg)[-1] for kind, msg in _MESSAGES.items()}
"""The newest version the schemas define, per kind: newer ones are read with its layout."""


@lru_cache(maxsize=None)
def fields(kind: str, version: int) -> tuple[Field, ...]:
    """The field list of one kind ("assignment" or "subscription") at a version the schemas define."""
    return fields_for(_MESSAGES[kind].fields, version, False)


@lru_cache(maxsize=None)
def _decoder(kind: str, version: int) -> Callable:
    return compile_struct(fields(kind, version), False, f"consumer protocol {kind} v{version}")


def decode(kind: str, buf: bytes) -> dict:
    """`{"version": v, <fields of the struct, snake_case>}` from the whole of buf; DecodeError (offset from the start
    of buf) when it is not a well-formed `kind` of the consumer protocol."""
    raw = buf if type(buf) is bytes else bytes(buf)
    if len(raw) < 2:
        raise DecodeError("truncated", 0, f"consumer protocol {kind}: {len(raw)} bytes, no version")
    version, = wire.I16.unpack_from(raw, 0)
    if version < 0:
        raise DecodeError("unknown_version", 0, f"consumer protocol {kind} version {version}")
    newest = NEWEST[kind]
    body, end = _decoder(kind, min(version, newest))(raw, 2)
    if end != len(raw) and version <= newest:
        raise DecodeError("trailing_bytes", end, f"{len(raw) - end} bytes after consumer protocol {kind} v{version}")
    return {"version": version, **body}


def decode_assignment(buf: bytes) -> dict:
    """A SyncGroup assignment: version, assigned_partitions [{topic, partitions}], user_data."""
    return decode(ASSIGNMENT, buf)


def decode_subscription(buf: bytes) -> dict:
    """A JoinGroup member metadata: version, topics, user_data, and by version owned_partitions [{topic,
    partitions}] (v1+), generation_id (v2+), rack_id (v3+)."""
    return decode(SUBSCRIPTION, buf)


def encode(kind: str, obj: dict) -> bytes:
    """The inverse of `decode` for the versions the schemas define (fields missing from obj get their defaults)."""
    version = obj.get("version", 0)
    if not 0 <= version <= NEWEST[kind]:
        raise DecodeError("bad_value", 0, f"consumer protocol {kind}: cannot encode version {version}")
    out = bytearray(wire.I16.pack(version))
    compile_encoder(fields(kind, version), False)(out, obj)
    return bytes(out)
