"""Kafka record data: magic 2 record batches, legacy magic 0/1 message sets, and their compression codecs.

The contract with the dissector:

    split_batches(data: bytes | bytearray | memoryview, max_decompressed: int = 64 MiB)
        -> tuple[list[Batch], int, DecodeError | None]

    (batches, partial_bytes, error):
      batches        every complete batch before the first problem, in order (a top-level legacy message is one Batch)
      partial_bytes  bytes of a batch cut short at the end (normal at the end of a Fetch response; a bug in Produce)
      error          None, or the DecodeError (bad_magic, negative_length, truncated) that stopped the split; its
                     offset is the start of the bad batch, and the bytes from there to the end are unusable

    Batch.records(max_decompressed=64 MiB) -> list[Record]   decompresses and decodes; raises DecodeError whose
        offset points into `data` (for compressed batches: the start of the compressed records)
    Batch.control_type() -> "commit" | "abort" | other ControlRecordType name | None (data batch); may raise
    Batch.crc_ok is computed at split time (crc32c C code runs at GB/s); a mismatch never raises.
    Batch.timestamp_type: 0 CreateTime, 1 LogAppendTime, -1 magic 0.  Batch.raw() -> the batch's wire bytes.
    Batch keeps a reference to `data` (no copy), so holding batches holds the buffer.

Splitting reads headers only (one header read and one crc32c per batch, in C when the compiled core runs); magic 2
records are decoded when records() is called. Legacy messages are the exception: each is one record, decoded at split
time, and compressed wrappers are decompressed then so that record_count and base_offset are real numbers (legacy data
is rare and small). A wrapper that cannot be decoded has record_count None and records() raises the reason.
"""

from __future__ import annotations

from kafkatap.dissect import native
from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import batch_headers
from kafkatap.dissect.records.batch import Batch
from kafkatap.dissect.records.compression import DEFAULT_MAX_DECOMPRESSED
from kafkatap.dissect.records.record import Record

_compiled = native.extension("kafkatap.dissect.records._batch_headers")


def split_batches(data: bytes | bytearray | memoryview, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
                  ) -> tuple[list[Batch], int, DecodeError | None]:
    """batch_headers.split_batches, or its compiled twin (_batch_headers.pyx) when the compiled core runs."""
    return native.pick(batch_headers.split_batches, _compiled)(data, max_decompressed)


__all__ = ["Batch", "DEFAULT_MAX_DECOMPRESSED", "Record", "split_batches"]
