"""KIP-932 share-group rows: ranges a ShareFetch response acquired, and the acknowledgements clients sent.

An acknowledgement batch carries either one type for its whole range or one type per offset; it becomes one row per
run of equal types, so a row always means "offsets first..last were acknowledged as ack_type".
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkatap.dissect.protocol.generated.api_keys import ApiKey

SHARE_APIS = (ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE)
"""The apis whose messages give share/ rows."""
ACK_TYPES = {0: "gap", 1: "accept", 2: "release", 3: "reject", 4: "renew"}


def ack_runs(first: int, last: int, types: list[int]) -> Iterator[tuple[int, int, str]]:
    """(first_offset, last_offset, ack_type) per run of equal types."""
    if not types:
        return
    if len(types) == 1:
        yield first, last, ACK_TYPES.get(types[0], f"unknown_{types[0]}")
        return
    start = 0
    for i in range(1, len(types) + 1):
        if i == len(types) or types[i] != types[start]:
            t = types[start]
            yield first + start, min(first + i - 1, last), ACK_TYPES.get(t, f"unknown_{t}")
            start = i


def ack_error_codes(api_key: int, response: dict | None) -> dict[tuple[str, int], int]:
    """(topic_id, partition) -> error of the acknowledgement, from the paired response."""
    field = "acknowledge_error_code" if api_key == ApiKey.SHARE_FETCH else "error_code"
    out = {}
    for topic in (response or {}).get("responses") or ():
        for part in topic.get("partitions") or ():
            out[(topic.get("topic_id"), part.get("partition_index"))] = part.get(field)
    return out


def acks(request: dict) -> Iterator[tuple[str, int, int, int, str]]:
    """(topic_id, partition, first_offset, last_offset, ack_type) of a ShareFetch / ShareAcknowledge request."""
    for topic in request.get("topics") or ():
        for part in topic.get("partitions") or ():
            for batch in part.get("acknowledgement_batches") or ():
                for first, last, ack_type in ack_runs(batch["first_offset"], batch["last_offset"],
                                                      batch.get("acknowledge_types") or []):
                    yield topic.get("topic_id"), part.get("partition_index"), first, last, ack_type


def acquired(response: dict) -> Iterator[tuple[str, int, int, int, int, int]]:
    """(topic_id, partition, first_offset, last_offset, delivery_count, error_code) of a ShareFetch response."""
    for topic in response.get("responses") or ():
        for part in topic.get("partitions") or ():
            for rng in part.get("acquired_records") or ():
                yield (topic.get("topic_id"), part.get("partition_index"), rng["first_offset"], rng["last_offset"],
                       rng.get("delivery_count"), part.get("error_code"))
