# cython: annotation_typing=False
"""The record data of Produce requests and Fetch / ShareFetch responses: split into batches (their batches/ rows are
laid out by batch_row.py) and, with --records, the records/ rows.

Batch headers come from `dissect.records.split_batches` (headers only); records are decoded only with --records.
Record keys and values are reduced to sizes and 64-bit BLAKE2b hashes (signed, to fit int64) unless --payloads, and
each batch's records to its fingerprint column.

Plain Python that setup.py also compiles (Cython's pure-Python mode, batches.pxd): `record_rows` runs for every
record with --records (on a 228k-frame capture of one-record batches, its loop and the record decoder were a quarter
of the dissect); compiled, the same code without the interpreter's dispatch.
"""

from __future__ import annotations

from collections.abc import Callable
from hashlib import blake2b
from struct import Struct
from typing import Any

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol.generated.api_keys import ApiKey
from kafkatap.dissect.records import Batch, split_batches
from kafkatap.dissect.tables.batch_row import MAX_MS

FETCHES = frozenset({ApiKey.FETCH, ApiKey.SHARE_FETCH})
"""The apis whose responses carry record data."""

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


def ms_to_us(ms: int | None) -> int | None:
    """Kafka's millisecond timestamps as microseconds; -1 (unknown) and values past int64 as null."""
    return None if ms is None or ms < 0 or ms > MAX_MS else ms * 1000


def hash64(data: bytes | None) -> int | None:
    if data is None:
        return None
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "big", signed=True)


_RECORD_PRINT = Struct("<Qiiqq").pack
"""What of a record the batch's fingerprint covers: its offset delta, key and value sizes (-1 for null) and hashes."""
_MASK64 = (1 << 64) - 1


def record_rows(batch: Batch, head: tuple, topic: str, partition: int, payloads: bool,
                problem: Problem) -> tuple[list[tuple], int | None]:
    """records/ rows of one batch, and the batch's fingerprint (None without a readable record); head = (conn_id,
    correlation_id, direction, ts, client_id)."""
    try:
        records = batch.records()
    except DecodeError as e:
        problem("malformed_batch", f"records of batch at base offset {batch.base_offset} unreadable: {e}", batch.size)
        return [], None
    rows, prints = [], []
    for r in records:
        key, value = r.key, r.value
        key_size, value_size = -1 if key is None else len(key), -1 if value is None else len(value)
        key_hash, value_hash = hash64(key), hash64(value)
        # the records in the batch's order, one hash for all: each record hashed on its own and XORed cost twice
        prints.append(_RECORD_PRINT((r.offset - batch.base_offset) & _MASK64, key_size, value_size, key_hash or 0,
                                    value_hash or 0))
        rows.append(head + (
            topic, partition, batch.base_offset, r.offset, r.sequence, batch.producer_id, ms_to_us(r.timestamp),
            key_size, value_size, key_hash, value_hash, [h[0] for h in r.headers],
            key if payloads else None, value if payloads else None,
        ))
    return rows, hash64(b"".join(prints)) if rows else None
