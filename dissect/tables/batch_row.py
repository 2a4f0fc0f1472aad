# cython: annotation_typing=False
"""The batches/ row, written in one place: `batch_rows` lays out the columns of dissect/tables/schema.py's BATCHES
for every builder of the row (rows.Rows and the compiled row builders of _rows.pyx), so a column is added here and
in schema.py, nowhere else.

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


def control_type(batch: Batch, problem: Problem) -> str | None:
    """A control batch's record type (`commit`, `abort`); an unreadable one is reported and has none."""
    try:
        return batch.control_type()
    except DecodeError as e:
        problem("malformed_batch", f"control batch unreadable: {e}", batch.size)
        return None


def batch_rows(head: tuple, batches: list[Batch], tail: tuple, problem: Problem) -> list[tuple]:
    """batches/ rows of one partition's batches: head = conn_id .. partition, tail = fetch_offset .. error, the
    columns every batch of the partition shares (built once per partition, not per batch)."""
    rows = []
    for batch in batches:
        # A Batch (a NamedTuple of 17 fields) sliced is a plain tuple, whose fields the compiled module unpacks in C
        # (a tuple subclass goes through Python's iterator protocol instead); one unpack, not a dozen lookups.
        fields = batch[:]
        (_, size, magic, base_offset, last_offset, record_count, _, _, crc_ok, attributes, first, last, producer_id,
         producer_epoch, base_sequence, _, _) = fields
        rows.append(head + (
            magic, base_offset, last_offset, record_count, producer_id, producer_epoch, base_sequence,
            True if attributes & TRANSACTIONAL else False, True if attributes & CONTROL else False,
            control_type(batch, problem) if attributes & CONTROL else None, COMPRESSION[attributes & 7], size,
            first * 1000 if 0 <= first <= _MAX_MS else None, last * 1000 if 0 <= last <= _MAX_MS else None, crc_ok,
        ) + tail)
    return rows
