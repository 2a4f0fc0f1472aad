"""Generic extraction of the frames table's entity columns from decoded messages, by field name.

One walk per message instead of per-api code: the codec names fields exactly as Kafka's schemas do (snake_cased),
so `group_id`, `member_epoch` or `producer_id` mean the same thing in every api that carries them. The same walk
makes the message ready for JSON: record data is replaced by its size (batches/ and records/ hold it), secrets
(SASL auth_bytes, delegation-token HMACs, SCRAM salts) by `{"$redacted": N}` so they never reach any output, and
other bytes by `{"$bytes": base64}` exactly as `dissect.protocol.to_json` writes them, so `dumps` can hand the
message straight to the C JSON encoder instead of converting it a second time (a test checks both agree).

Speed: a decoded struct's key names fix what each key can hold, so the walk keeps, per tuple of keys (a struct
shape), a plan listing only the keys that matter; the many scalar keys (offsets, indexes) are never looked at.
"""

from __future__ import annotations

import base64
import json
import math
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, NamedTuple

from kafkatap.dissect import native
from kafkatap.dissect.protocol.generated.api_keys import ApiKey

REQUEST_FIELDS = ("group_id", "member_id", "group_instance_id", "generation_id", "member_epoch", "group_epoch",
                  "share_session_epoch", "producer_id", "producer_epoch", "transactional_id")
"""Taken from the first place they occur anywhere in the request."""

RESPONSE_FIELDS = ("member_id", "generation_id", "member_epoch", "group_epoch", "producer_id", "producer_epoch",
                   "throttle_time_ms", "error_code")
"""Taken from the response's top level only: nested ones describe other members (DescribeGroups) or partitions."""

REQUEST_TOP = ("acks",)
"""Read from a request's top level: a Produce with acks=0 gets no response."""


class Collect(NamedTuple):
    """Rows taken from a message's topics and their partitions: for each partition of each topic in the top-level
    array `path[0]`, its topic's `topic` fields then its own `partition` fields (None where the version has none)."""

    path: tuple[str, str]
    topic: tuple[str, ...]
    partition: tuple[str, ...]


_FETCHED = Collect(("responses", "partitions"), ("topic", "topic_id"),
                   ("partition_index", "records", "high_watermark", "error_code"))
COLLECT = {
    (ApiKey.PRODUCE, False): Collect(("topic_data", "partition_data"), ("name", "topic_id"), ("index", "records")),
    (ApiKey.PRODUCE, True): Collect(("responses", "partition_responses"), ("name", "topic_id"),
                                    ("index", "error_code", "base_offset")),
    (ApiKey.FETCH, False): Collect(("topics", "partitions"), ("topic", "topic_id"), ("partition", "fetch_offset")),
    (ApiKey.FETCH, True): _FETCHED,
    (ApiKey.SHARE_FETCH, True): _FETCHED,
}
"""By (api_key, response): the partition rows the batches/ table reads (record data, offsets, errors), so that
record data never has to be found in a decoded message by api-specific code."""


def collect(message: dict, spec: Collect | None) -> list[tuple]:
    """The rows `spec` asks for (taken before `walk` replaces record data by its size)."""
    rows: list[tuple] = []
    if spec is None:
        return rows
    outer, inner = spec.path
    for topic in message.get(outer) or ():
        head = tuple(topic.get(name) for name in spec.topic)
        for part in topic.get(inner) or ():
            rows.append(head + tuple(part.get(name) for name in spec.partition))
    return rows


SECRET_FIELDS = frozenset({"auth_bytes", "hmac", "salt", "salted_password"})
RECORD_FIELDS = frozenset({"records", "unaligned_records"})
FLOAT_FIELDS = frozenset({"value"})
"""Names of the schema's float64 fields (a test holds this to the schema table), whose non-finite values are written
as {"$float": repr}. Known by name as well as by the value a struct shape first showed: DescribeClientQuotas' `value`
(a float64) and a streams group member's client tag `value` (a string) are structs of the same keys, and whichever
came first decided for both."""
NULL_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
ALIASES = {
    "v3_and_below_transactional_id": "transactional_id",
    "v3_and_below_producer_id": "producer_id",
    "v3_and_below_producer_epoch": "producer_epoch",
    "generation_id_or_member_epoch": "generation_id",
}
"""Schema names that carry a wanted field under another name. AddPartitionsToTxn v4 renamed its v0-3 fields; Kafka
4 renamed OffsetCommit's and TxnOffsetCommit's generation_id, which holds the member epoch for KIP-848 groups (the
pipelines read it as such for those groups)."""

_ANY, _WANTED, _ERROR, _TOPIC, _FLOAT = range(5)
_PLANS: dict[tuple[str, ...], dict[tuple, tuple]] = {}  # wanted fields -> struct keys -> plan
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_C_ENCODE = (c_make_encoder(None, _ENCODER.default, encode_basestring, None, ": ", ", ", False, False, True)
             if c_make_encoder is not None else None)
"""json's own C encoder with json.dumps' settings, built once: `JSONEncoder.encode` builds one per call and keeps
a circular-reference table, half its cost on small messages (decoded messages are trees, never circular)."""


class Found:
    """What one walk collected."""

    __slots__ = ("fields", "topics", "topic_ids", "id_names", "first_error", "has_error")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.topics: list[str] = []  # names, in order of appearance
        self.topic_ids: list[str] = []  # ids, in order of appearance
        self.id_names: list[tuple[str, str]] = []  # (topic_id, name) pairs the message states (Metadata, ...)
        self.first_error = 0  # first non-zero error code anywhere (error_code, partition_error_code, ...)
        self.has_error = False  # the message has any error code field


_compiled = native.extension("kafkatap.dissect.kafka._found")
if native.compiled and _compiled is not None:  # its compiled twin, which the compiled message path reads in C
    Found = _compiled.Found  # type: ignore[misc]


def walk(message: dict, wanted: tuple[str, ...]) -> Found:
    """Collect entity fields, topic names and ids, and errors, in wire order; prepare the message for `dumps` in
    place (records, secrets and bytes replaced)."""
    found = Found()
    plans = _PLANS.get(wanted)
    if plans is None:
        plans = _PLANS[wanted] = {}
    _visit(message, wanted, found, plans)
    return found


def dumps(message: dict) -> str:
    """JSON of a message `walk` has prepared: the same text `dissect.protocol.to_json` gives."""
    if _C_ENCODE is None:
        return _ENCODER.encode(message)
    return "".join(_C_ENCODE(message, 0))


def _plan(keys: tuple, d: dict, wanted: tuple[str, ...], plans: dict) -> tuple:
    """(topic_context_possible, [(key, kind, wanted_name)]) for one struct shape, from its key names and the value
    types seen the first time (a key's type is fixed by the schema; None means 'look each time')."""
    steps = []
    for key in keys:
        value = d[key]
        if not isinstance(key, str):
            steps.append((key, _ANY, None))
        elif key in wanted:
            steps.append((key, _WANTED, key))
        elif ALIASES.get(key) in wanted:
            steps.append((key, _WANTED, ALIASES[key]))
        elif key.endswith("error_code"):
            steps.append((key, _ERROR, None))
        elif key in ("topic", "topic_name"):
            steps.append((key, _TOPIC, None))
        elif isinstance(value, float) or key in FLOAT_FIELDS:
            steps.append((key, _FLOAT, None))
        elif value is None or isinstance(value, (list, dict, bytes, bytearray, memoryview)):
            steps.append((key, _ANY, None))
    topic_context = "name" in keys and ("topic_id" in keys or any(
        isinstance(k, str) and "partition" in k for k in keys))
    plan = (topic_context, "topic_id" in keys, tuple(steps))
    plans[keys] = plan
    return plan


def _visit(d: dict, wanted: tuple[str, ...], found: Found, plans: dict) -> None:
    keys = tuple(d)
    plan = plans.get(keys) or _plan(keys, d, wanted, plans)
    topic_context, has_topic_id, steps = plan
    if has_topic_id:
        topic_id = d["topic_id"]
        if topic_id is not None and topic_id != NULL_TOPIC_ID:
            found.topic_ids.append(topic_id)
            if topic_context and isinstance(d["name"], str):
                found.id_names.append((topic_id, d["name"]))
    if topic_context and isinstance(d["name"], str):
        found.topics.append(d["name"])
    for key, kind, name in steps:
        value = d[key]
        if value is None:
            continue
        if kind == _ANY:
            if isinstance(value, list):
                if value:
                    first = value[0]
                    if isinstance(first, dict):
                        for item in value:
                            _visit(item, wanted, found, plans)
                    elif isinstance(first, str):
                        if key.endswith("topic_names"):
                            found.topics.extend(value)
                    elif isinstance(first, (bytes, bytearray, memoryview)):
                        d[key] = [_bytes(v) for v in value]
            elif isinstance(value, dict):
                _visit(value, wanted, found, plans)
            elif isinstance(value, (bytes, bytearray, memoryview)):
                if key in SECRET_FIELDS:
                    d[key] = {"$redacted": len(value)}
                elif key in RECORD_FIELDS:
                    d[key] = {"$records": len(value)}
                else:
                    d[key] = _bytes(value)
        elif kind == _WANTED:
            if name not in found.fields:
                found.fields[name] = value
        elif kind == _ERROR:
            found.has_error = True
            if value and not found.first_error:
                found.first_error = value
        elif kind == _TOPIC:
            if isinstance(value, str):
                found.topics.append(value)
        elif isinstance(value, float) and not math.isfinite(value):
            d[key] = {"$float": repr(value)}


def _bytes(value: Any) -> Any:
    if value is None:
        return None
    return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}


def top_level(message: dict, wanted: tuple[str, ...]) -> dict[str, Any]:
    return {key: message[key] for key in wanted if message.get(key) is not None}


def error_code(response: dict, found: Found) -> int | None:
    """The response's top-level error_code if non-zero, else its first non-zero nested one (any field named
    `*error_code`, e.g. AddPartitionsToTxn's partition_error_code), else 0 if it has any error field, else None."""
    top = response.get("error_code")
    if top:
        return top
    if found.first_error:
        return found.first_error
    return 0 if found.has_error else None
