"""The classic consumer protocol inside JoinGroup and SyncGroup messages, decoded beside its bytes.

Classic groups carry their members' subscriptions (JoinGroup request `protocols[].metadata`, response
`members[].metadata`) and assignments (SyncGroup request `assignments[].assignment`, response `assignment`) as bytes
whose layout depends on the group's protocol_type. For "consumer" groups the message's JSON keeps the bytes and gains
their decoded form beside them:

    {"$bytes": "<base64>", "$consumer": {"version": 0, "assigned_partitions": [{"topic": "clicks",
     "partitions": [0, 1]}], "user_data": null}}

The protocol_type is the message's own, else its request's, else the one the group's last JoinGroup request named
(SyncGroup before v5 and JoinGroup responses before v7 do not repeat it). Bytes of a "consumer" group that do not
decode keep `$bytes`, get `"$consumer_error": "<reason> at offset N"` and become an anomaly row
(`malformed_consumer_protocol`); bytes of a group whose protocol_type is unknown are decoded only when they decode
cleanly, whole and at a known version, and otherwise left as bytes; other protocol types (connect, ...) and empty
bytes (error responses) are left alone. Only JoinGroup and SyncGroup messages pay anything.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.kafka.extract import Found, walk
from kafkatap.dissect.protocol import embedded
from kafkatap.dissect.protocol.embedded import ASSIGNMENT, SUBSCRIPTION
from kafkatap.dissect.protocol.generated.api_keys import ApiKey

APIS = frozenset({ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})
CONSUMER = "consumer"
ANOMALY = "malformed_consumer_protocol"
"""Anomaly kind: bytes that a "consumer" group's protocol says are a subscription or assignment but do not decode."""


class Spot(NamedTuple):
    """One bytes field that may hold the consumer protocol, found before `walk` replaces the bytes."""

    holder: dict
    key: str
    raw: bytes
    kind: str  # embedded.ASSIGNMENT or embedded.SUBSCRIPTION
    label: str  # where in the message, for anomaly details: `protocols[0].metadata`


class Pending(NamedTuple):
    protocol_type: str | None
    spots: list[Spot]


class ConsumerProtocol:
    """The protocol types the capture's JoinGroup requests named, by group (a group has one protocol type: the
    broker refuses members naming another)."""

    __slots__ = ("types",)

    def __init__(self) -> None:
        self.types: dict[str, str] = {}

    def pending(self, api_key: int, body: dict, request: dict | None) -> Pending | None:
        """The bytes fields of a JoinGroup / SyncGroup body (request: `request` is None) to decode after `walk`, or
        None when there are none or the group's protocol is not the consumer protocol."""
        response = request is not None
        group_id = (request if response else body).get("group_id")
        if api_key == ApiKey.JOIN_GROUP and not response and isinstance(body.get("protocol_type"), str):
            self.types[group_id] = body["protocol_type"]
        protocol_type = body.get("protocol_type") or (request or {}).get("protocol_type") or self.types.get(group_id)
        if protocol_type is not None and protocol_type != CONSUMER:
            return None
        found = _spots(api_key, body, response)
        return Pending(protocol_type, found) if found else None


def _spots(api_key: int, body: dict, response: bool) -> list[Spot]:
    if api_key == ApiKey.SYNC_GROUP and response:
        raw = body.get("assignment")
        return [Spot(body, "assignment", raw, ASSIGNMENT, "assignment")] if raw else []
    if api_key == ApiKey.SYNC_GROUP:
        items, key, kind, name = body.get("assignments"), "assignment", ASSIGNMENT, "assignments"
    else:
        items, key, kind = body.get("members" if response else "protocols"), "metadata", SUBSCRIPTION
        name = "members" if response else "protocols"
    return [Spot(item, key, item[key], kind, f"{name}[{i}].{key}")
            for i, item in enumerate(items or ()) if item.get(key)]


def finish(pending: Pending, found: Found) -> list[tuple[Spot, DecodeError]]:
    """Decode the spots of a walked message: add `$consumer` beside each `$bytes` and the topics named to `found`;
    returns the bytes that should have been the consumer protocol but are not (the caller reports them)."""
    problems = []
    strict = pending.protocol_type == CONSUMER
    for spot in pending.spots:
        try:
            decoded = embedded.decode(spot.kind, spot.raw)
        except DecodeError as exc:
            if strict:
                spot.holder[spot.key]["$consumer_error"] = f"{exc.reason} at offset {exc.offset}"
                problems.append((spot, exc))
            continue
        if not strict and decoded["version"] > embedded.NEWEST[spot.kind]:
            continue  # not sure it is the consumer protocol: only a known version, read whole, says so
        found.topics.extend(_topics(decoded))
        walk(decoded, ())  # user_data bytes -> {"$bytes": ...}, as everywhere else in the JSON
        spot.holder[spot.key]["$consumer"] = decoded
    return problems


def _topics(decoded: dict[str, Any]) -> list[str]:
    """Topic names an assignment or subscription states, in order."""
    out = list(decoded.get("topics") or ())
    for key in ("assigned_partitions", "owned_partitions"):
        out.extend(tp["topic"] for tp in decoded.get(key) or ())
    return out
