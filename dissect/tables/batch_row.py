# cython: annotation_typing=False
"""The batches/ row, written in one place: `batch_rows` lays out the columns of dissect/tables/schema.py's BATCHES
for every builder of the row (rows.Rows and the compiled row builders of _rows.pyx), so a column is added here and
in schema.py, nowhere else. The one exception is the compiled rows of plain record data (_rows.pyx), written straight
from the batch headers without a Batch: they derive each value with this module's functions, write the header's
columns in the order of HEADER_COLUMNS, and refuse to import when the schema's differ.

Plain Python that setup.py also compiles (Cython's pure-Python mode: batch_row.pxd types its constants and locals),
so the compiled row builders call it in C while the pure-Python dissector imports this file: one source for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records.batch import CONTROL, TRANSACTIONAL
from kafkatap.dissect.records.compression import CODECS

if TYPE_CHECKING:
    from kafkatap.dissect.records import Batch
    from kafkatap.dissect.tables.batches import Problem

MAX_MS = (1 << 63) // 1000 - 1
"""The largest millisecond timestamp whose microseconds fit int64."""
_MAX_MS = MAX_MS  # a C int64 when compiled (batch_row.pxd), which a compiled module does not show to Python
COMPRESSION = CODECS + tuple(f"unknown_{codec}" for codec in range(len(CODECS), 8))
"""Batch.compression by codec id (attributes & 7), without a property call per batch."""


HEADER_COLUMNS = ("magic", "base_offset", "last_offset", "record_count", "producer_id", "producer_epoch",
                  "base_sequence", "is_transactional", "is_control", "control_type", "compression", "batch_bytes",
                  "first_timestamp", "max_timestamp", "crc_ok", "fingerprint")
"""Each batch's own columns, in the row's order: its header's, then its records' fingerprint (with --records);
after the carrying message's (head), before the partition's results (tail). `batch_rows` lays them out so, and the
compiled rows of plain record data (_rows.pyx, never with --records: no fingerprint) write them so."""


def is_transactional(attributes: int) -> bool:
    return True if attributes & TRANSACTIONAL else False


def is_control(attributes: int) -> bool:
    return True if attributes & CONTROL else False


def compression(attributes: int) -> str:
    """A batch's compression column, from its attributes."""
    return COMPRESSION[attributes & 7]


def timestamp_us(ms: int) -> int | None:
    """A batch's millisecond timestamp as its column's microseconds; None for one that has none there (-1, or past
    int64's microseconds)."""
    us = column_us(ms)
    return us if us >= 0 else None


def column_us(ms: int) -> int:
    """`timestamp_us` with -1 for None: the compiled rows of plain record data (_rows.pyx) write it as a C value,
    without an int object per timestamp."""
    return ms * 1000 if 0 <= ms <= _MAX_MS else -1


def control_type(batch: Batch, problem: Problem) -> str | None:
    """A control batch's record type (`commit`, `abort`); an unreadable one is reported and has none."""
    try:
        return batch.control_type()
    except DecodeError as e:
        problem("malformed_batch", f"control batch unreadable: {e}", batch.size)
        return None


def batch_rows(head: tuple, batches: list[Batch], tail: tuple, problem: Problem,
               prints: list | None = None) -> list[tuple]:
    """batches/ rows of one partition's batches: head = conn_id .. partition, tail = fetch_offset .. error, the
    columns every batch of the partition shares (built once per partition, not per batch); prints = each batch's
    fingerprint, when its records were read (--records)."""
    rows = []
    i = 0  # not enumerate: compiled, it would read a None list's length instead of raising
    for batch in batches:
        # A Batch (a NamedTuple of 17 fields) sliced is a plain tuple, whose fields the compiled module unpacks in C
        # (a tuple subclass goes through Python's iterator protocol instead); one unpack, not a dozen lookups.
        fields = batch[:]
        (_, size, magic, base_offset, last_offset, record_count, _, _, crc_ok, attributes, first, last, producer_id,
         producer_epoch, base_sequence, _, _) = fields
        rows.append(head + (
            magic, base_offset, last_offset, record_count, producer_id, producer_epoch, base_sequence,
            is_transactional(attributes), is_control(attributes),
            control_type(batch, problem) if attributes & CONTROL else None, compression(attributes), size,
            timestamp_us(first), timestamp_us(last), crc_ok, None if prints is None else prints[i],
        ) + tail)
        i += 1
    return rows
