"""Generic extraction of the frames table's entity columns from decoded messages, by field name.

One walk per message instead of per-api code: the codec names fields exactly as Kafka's schemas do (snake_cased),
so `group_id`, `member_epoch` or `producer_id` mean the same thing in every api that carries them. The same walk
makes the message safe for JSON: record data is replaced by its size (batches/ and records/ hold it) and secrets
(SASL auth_bytes, delegation-token HMACs, SCRAM salts) by `{"$redacted": N}` so they never reach any output.
"""

from __future__ import annotations

from typing import Any

REQUEST_FIELDS = ("group_id", "member_id", "group_instance_id", "generation_id", "member_epoch", "group_epoch",
                  "share_session_epoch", "producer_id", "producer_epoch", "transactional_id")
"""Taken from the first place they occur anywhere in the request."""

RESPONSE_FIELDS = ("member_id", "generation_id", "member_epoch", "group_epoch", "producer_id", "producer_epoch",
                   "throttle_time_ms", "error_code")
"""Taken from the response's top level only: nested ones describe other members (DescribeGroups) or partitions."""

SECRET_FIELDS = frozenset({"auth_bytes", "hmac", "salt", "salted_password"})
RECORD_FIELDS = frozenset({"records", "unaligned_records"})
NULL_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
LEGACY_PREFIX = "v3_and_below_"
"""AddPartitionsToTxn v4 renamed its v0-3 fields (v3_and_below_transactional_id, ...): same meaning."""


class Found:
    """What one walk collected."""

    __slots__ = ("fields", "topics", "topic_ids", "id_names", "first_error")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.topics: list[str] = []  # names, in order of appearance
        self.topic_ids: list[str] = []  # ids, in order of appearance
        self.id_names: list[tuple[str, str]] = []  # (topic_id, name) pairs the message states (Metadata, ...)
        self.first_error = 0  # first non-zero error code anywhere (error_code, partition_error_code, ...)


def walk(message: dict, wanted: tuple[str, ...]) -> Found:
    """Collect entity fields, topic names and ids, and errors, in wire order; redact secrets and record data in place.
    """
    found = Found()
    _visit(message, wanted, found, found.fields)
    return found


def _visit(d: dict, wanted: tuple[str, ...], found: Found, fields: dict[str, Any]) -> None:
    name = d.get("name")
    topic_context = isinstance(name, str) and ("topic_id" in d or _has_partitions(d))
    topic_id = d.get("topic_id")
    if topic_id is not None and topic_id != NULL_TOPIC_ID:
        found.topic_ids.append(topic_id)
        if topic_context:
            found.id_names.append((topic_id, name))
    if topic_context:
        found.topics.append(name)
    for key, value in d.items():
        if value is None:
            continue
        if isinstance(value, list):
            if value and isinstance(value[0], dict):
                for item in value:
                    _visit(item, wanted, found, fields)
            elif key.endswith("topic_names") and value and isinstance(value[0], str):
                found.topics.extend(value)
        elif isinstance(value, dict):
            _visit(value, wanted, found, fields)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            if key in SECRET_FIELDS:
                d[key] = {"$redacted": len(value)}
            elif key in RECORD_FIELDS:
                d[key] = {"$records": len(value)}
        elif key in wanted:
            if key not in fields:
                fields[key] = value
        elif key.startswith(LEGACY_PREFIX) and key[len(LEGACY_PREFIX):] in wanted:
            fields.setdefault(key[len(LEGACY_PREFIX):], value)
        elif value and not found.first_error and key.endswith("error_code"):
            found.first_error = value
        elif key in ("topic", "topic_name") and isinstance(value, str):
            found.topics.append(value)


def _has_partitions(d: dict) -> bool:
    for key in d:
        if "partition" in key:
            return True
    return False


def top_level(message: dict, wanted: tuple[str, ...]) -> dict[str, Any]:
    return {key: message[key] for key in wanted if message.get(key) is not None}


def error_code(response: dict, nested_first_error: int) -> int | None:
    """The response's top-level error_code if non-zero, else its first non-zero nested one (any field named
    `*error_code`, e.g. AddPartitionsToTxn's partition_error_code), else 0 if it has any error field, else None."""
    top = response.get("error_code")
    if top:
        return top
    if nested_first_error:
        return nested_first_error
    if top is not None:
        return 0
    return 0 if _has_error_field(response) else None


def _has_error_field(obj: Any) -> bool:
    stack = [obj]
    while stack:
        d = stack.pop()
        for key, value in d.items():
            if isinstance(key, str) and key.endswith("error_code"):
                return True
            if isinstance(value, list) and value and isinstance(value[0], dict):
                stack.extend(value)
            elif isinstance(value, dict):
                stack.append(value)
    return False
