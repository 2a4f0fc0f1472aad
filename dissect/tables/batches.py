"""Rows of the batches/ and records/ tables from the record data of Produce requests and Fetch / ShareFetch responses.

Batch headers come from `dissect.records.split_batches` (headers only); records are decoded only with --records.
Record keys and values are reduced to sizes and 64-bit BLAKE2b hashes (signed, to fit int64) unless --payloads.
"""

from __future__ import annotations

from collections.abc import Callable
from hashlib import blake2b
from typing import Any

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import Batch, split_batches
from kafkatap.dissect.records.batch import CONTROL, TRANSACTIONAL
from kafkatap.dissect.records.compression import CODECS

Problem = Callable[[str, str, int], None]
"""problem(kind, detail, nbytes): report an anomaly found in record data."""


def produce_results(rows: list[tuple]) -> dict[tuple[str | None, int], tuple[int, int]]:
    """(topic name or id, partition) -> (error_code, assigned base_offset), from the rows extract.COLLECT takes
    from a Produce response."""
    return {(name or topic_id, index): (error, base_offset) for name, topic_id, index, error, base_offset in rows}


def fetch_offsets(rows: list[tuple]) -> dict[tuple[str | None, int], int]:
    """(topic name or id, partition) -> fetch_offset, from the rows extract.COLLECT takes from a Fetch request."""
    return {(topic or topic_id, partition): offset for topic, topic_id, partition, offset in rows}


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
COMPRESSION = CODECS + tuple(f"unknown_{codec}" for codec in range(len(CODECS), 8))
"""Batch.compression by codec id (attributes & 7), without a property call per batch."""


def ms_to_us(ms: int | None) -> int | None:
    """Kafka's millisecond timestamps as microseconds; -1 (unknown) and values past int64 as null."""
    return None if ms is None or ms < 0 or ms > MAX_MS else ms * 1000


def batch_rows(head: tuple, batches: list[Batch], tail: tuple, problem: Problem) -> list[tuple]:
    """batches/ rows of one partition's batches: head = conn_id .. partition, tail = fetch_offset .. error, the
    columns every batch of the partition shares (built once per partition, not per batch)."""
    rows = []
    for batch in batches:
        # one unpack instead of a dozen attribute lookups (Batch is a NamedTuple of 17 fields)
        (_, size, magic, base_offset, last_offset, record_count, _, _, crc_ok, attributes, first, last, producer_id,
         producer_epoch, base_sequence, _, _) = batch
        rows.append(head + (
            magic, base_offset, last_offset, record_count, producer_id, producer_epoch, base_sequence,
            bool(attributes & TRANSACTIONAL), bool(attributes & CONTROL),
            control_type(batch, problem) if attributes & CONTROL else None, COMPRESSION[attributes & 7], size,
            first * 1000 if 0 <= first <= MAX_MS else None,
            last * 1000 if 0 <= last <= MAX_MS else None, crc_ok,
        ) + tail)
    return rows


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
