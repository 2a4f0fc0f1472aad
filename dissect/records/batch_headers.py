"""Splitting record data (a Produce request's or a Fetch response's `records` bytes) into batches, headers only.

Named for what it reads, a batch's headers: `split` alone means a capture file's byte ranges (`packets/splits.py`)."""

from __future__ import annotations

import struct

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import compression
from kafkatap.dissect.records.batch import Batch
from kafkatap.dissect.records.legacy import MIN_SIZE, legacy_batch
from kafkatap.dissect.records.record_batch import CRC_START, HEADER, HEADER_SIZE

_LENGTH = struct.Struct(">i")
_MIN_LENGTH = (MIN_SIZE[0], MIN_SIZE[1], HEADER_SIZE - 12)


def _crc32c(data: memoryview) -> int:
    """crc32c.crc32c, imported at the first batch and then bound in its place. Importing the package reads its
    installed metadata (20 ms), which a run of the compiled core, whose splitter checks small batches itself, would
    otherwise pay at start-up."""
    global _crc32c
    from crc32c import crc32c
    _crc32c = crc32c
    return crc32c(data)


def split_batches(data: bytes | bytearray | memoryview,
                  max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED
                  ) -> tuple[list[Batch], int, DecodeError | None]:
    """Split record data into batches: (complete batches, trailing partial bytes, error or None).

    A batch whose length runs past the end is a partial batch (normal at the end of a Fetch response): its bytes
    are counted, not raised. A bad magic or an impossible batch_length stops the split: the batches before it are
    returned with the error, whose offset is the start of the bad batch (the bytes from there to the end are
    unusable: nothing says where a next batch would start). Magic 2 records are not decoded here; legacy wrappers
    are decompressed (bounded by `max_decompressed`) to count their messages.
    """
    view = memoryview(data)
    n = len(view)
    out: list[Batch] = []
    append = out.append
    unpack_header = HEADER.unpack_from
    new = tuple.__new__  # Batch(...) would add a Python-level __new__ call per batch
    pos = 0
    while pos < n:
        left = n - pos
        if left < 17:
            return out, left, None
        length = _LENGTH.unpack_from(data, pos + 8)[0]
        magic = view[pos + 16]
        if magic > 2:
            return out, 0, DecodeError("bad_magic", pos, f"magic byte {magic} (at {pos + 16})")
        if length < _MIN_LENGTH[magic]:
            reason = "negative_length" if length < 0 else "truncated"
            return out, 0, DecodeError(reason, pos, f"batch_length {length} cannot hold a magic {magic} header")
        size = length + 12
        if size > left:
            return out, left, None
        if magic == 2:
            (base_offset, _, leader_epoch, _, crc, attributes, last_delta, base_ts, max_ts, producer_id,
             producer_epoch, base_sequence, count) = unpack_header(data, pos)
            append(new(Batch, (pos, size, 2, base_offset, base_offset + last_delta, count, leader_epoch, crc,
                               _crc32c(view[pos + CRC_START : pos + size]) == crc, attributes, base_ts, max_ts,
                               producer_id, producer_epoch, base_sequence, data, None)))
        else:
            append(legacy_batch(data, view, pos, size, max_decompressed))
        pos += size
    return out, 0, None
