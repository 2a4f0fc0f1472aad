"""Rows of the batches/ and records/ tables from the record data of Produce requests and Fetch / ShareFetch responses.

Batch headers come from `dissect.records.split_batches` (headers only); records are decoded only with --records.
Record keys and values are reduced to sizes and 64-bit BLAKE2b hashes (signed, to fit int64) unless --payloads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from hashlib import blake2b
from typing import Any

from dissect.errors import DecodeError
from dissect.records import Batch, split_batches

PartitionData = tuple[str | None, str | None, int, Any, dict]
"""(topic name, topic id, partition, records bytes, the partition's dict) for each partition carrying records."""

Problem = Callable[[str, str, int], None]
"""problem(kind, detail, nbytes): report an anomaly found in record data."""


def produce_partitions(request: dict) -> Iterator[PartitionData]:
    for topic in request.get("topic_data") or ():
        for part in topic.get("partition_data") or ():
            yield topic.get("name"), topic.get("topic_id"), part.get("index"), part.get("records"), part


def fetch_partitions(response: dict) -> Iterator[PartitionData]:
    """Fetch (topic name or id) and ShareFetch (id) responses share this shape."""
    for topic in response.get("responses") or ():
        for part in topic.get("partitions") or ():
            yield topic.get("topic"), topic.get("topic_id"), part.get("partition_index"), part.get("records"), part


def produce_results(response: dict | None) -> dict[tuple[str | None, int], tuple[int, int]]:
    """(topic name or id, partition) -> (error_code, assigned base_offset) from a Produce response."""
    out = {}
    for topic in (response or {}).get("responses") or ():
        key = topic.get("name") or topic.get("topic_id")
        for part in topic.get("partition_responses") or ():
            out[(key, part.get("index"))] = (part.get("error_code"), part.get("base_offset"))
    return out


def fetch_offsets(request: dict | None) -> dict[tuple[str | None, int], int]:
    """(topic name or id, partition) -> fetch_offset from a Fetch request."""
    out = {}
    for topic in (request or {}).get("topics") or ():
        key = topic.get("topic") or topic.get("topic_id")
        for part in topic.get("partitions") or ():
            out[(key, part.get("partition"))] = part.get("fetch_offset")
    return out


def split(data: Any, final: bool, problem: Problem) -> list[Batch]:
    """Batches of one partition's record data. A cut batch is normal at the end of a fetch (final=False)."""
    if not data:
        return []
    batches, partial, error = split_batches(data)
    if error is not None:
        problem("malformed_batch", f"record data unusable: {error}", len(data) - error.offset)
    elif partial and final:
        problem("malformed_batch", "record data ends inside a batch", partial)
    for batch in batches:
        if not batch.crc_ok:
            problem("crc_mismatch", f"batch at base offset {batch.base_offset}: CRC does not match", batch.size)
    return batches


def control_type(batch: Batch, problem: Problem) -> str | None:
    if not batch.is_control:
        return None
    try:
        return batch.control_type()
    except DecodeError as e:
        problem("malformed_batch", f"control batch unreadable: {e}", batch.size)
        return None


MAX_MS = (1 << 63) // 1000 - 1


def ms_to_us(ms: int | None) -> int | None:
    """Kafka's millisecond timestamps as microseconds; -1 (unknown) and values past int64 as null."""
    return None if ms is None or ms < 0 or ms > MAX_MS else ms * 1000


def hash64(data: bytes | None) -> int | None:
    if data is None:
        return None
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "big", signed=True)


def record_rows(batch: Batch, head: tuple, topic: str, partition: int, payloads: bool,
                problem: Problem) -> list[tuple]:
    """records/ rows of one batch; head = (conn_id, correlation_id, direction, ts, client_id)."""
    try:
        records = batch.records()
    except DecodeError as e:
        problem("malformed_batch", f"records of batch at base offset {batch.base_offset} unreadable: {e}", batch.size)
        return []
    rows = []
    for r in records:
        key, value = r.key, r.value
        rows.append(head + (
            topic, partition, batch.base_offset, r.offset, r.sequence, batch.producer_id, ms_to_us(r.timestamp),
            -1 if key is None else len(key), -1 if value is None else len(value), hash64(key), hash64(value),
            [h[0] for h in r.headers],
            key if payloads else None, value if payloads else None,
        ))
    return rows
