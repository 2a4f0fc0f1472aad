# cython: annotation_typing=False
"""One batch of record data: its header fields, read at split time, and its records, decoded on request.

Plain Python that setup.py also compiles (Cython's pure-Python mode, batch.pxd), as it does record_batch.py and
tables/batches.py: the record path of --records, one source for both.
"""

from __future__ import annotations

from typing import NamedTuple

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records.compression import CODECS, DEFAULT_MAX_DECOMPRESSED, decompress
from kafkatap.dissect.records.record import Record
from kafkatap.dissect.records.record_batch import HEADER_SIZE, decode_records

CONTROL_TYPES = {0: "abort", 1: "commit", 2: "leader_change", 3: "snapshot_header", 4: "snapshot_footer",
                 5: "kraft_version", 6: "kraft_voters"}
"""Kafka's ControlRecordType ids; transaction markers are 0 and 1, the others appear in KRaft metadata logs."""
TRANSACTIONAL, CONTROL = 0x10, 0x20
"""Bits of a magic 2 batch's attributes (the compiled row builders read them too)."""


class Batch(NamedTuple):
    """A magic 2 record batch, or one top-level legacy (magic 0/1) message.

    A tuple so that splitting a Fetch response builds one cheap object per batch. Legacy messages have
    partition_leader_epoch, producer_id, producer_epoch and base_sequence -1.
    """

    offset_in_data: int
    """Where the batch starts in the data given to split_batches."""
    size: int
    """Bytes on the wire (12-byte offset/length prefix included)."""
    magic: int
    base_offset: int
    last_offset: int
    record_count: int | None
    """Records in the batch: magic 2 header's records_count; 1 for a plain legacy message; for a compressed legacy
    wrapper the count of inner messages (decompressed at split time), None if they could not be decoded."""
    partition_leader_epoch: int
    crc: int
    crc_ok: bool
    """crc32c (magic 2) or crc32 (magic 0/1) matched; a mismatch is reported here, never raised."""
    attributes: int
    first_timestamp: int
    """Milliseconds; magic 2 base_timestamp (the delete horizon when has_delete_horizon), -1 when unknown."""
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    data: bytes | memoryview
    """The buffer given to split_batches (not a copy): records() decodes from it."""
    inner: list[Record] | DecodeError | None
    """Legacy only: the already decoded records, or why they could not be decoded."""

    @property
    def compression(self) -> str:
        """`none`, `gzip`, `snappy`, `lz4`, `zstd`, or `unknown_<id>` for codec ids 5-7."""
        codec = self.attributes & 7
        return CODECS[codec] if codec < 5 else f"unknown_{codec}"

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime, -1 for magic 0 (no timestamps), as Kafka's TimestampType ids."""
        return -1 if self.magic == 0 else (self.attributes >> 3) & 1

    @property
    def is_transactional(self) -> bool:
        return self.magic == 2 and bool(self.attributes & TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic == 2 and bool(self.attributes & CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic == 2 and bool(self.attributes & 0x40)

    def raw(self) -> bytes:
        """The batch's bytes as on the wire."""
        return bytes(self.data[self.offset_in_data : self.offset_in_data + self.size])

    def records(self, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> list[Record]:
        """Decompress and decode the records; raises DecodeError (offsets into the split data) if malformed."""
        if self.magic < 2:
            if isinstance(self.inner, DecodeError):
                raise self.inner
            return list(self.inner)
        start = self.offset_in_data + HEADER_SIZE
        end = self.offset_in_data + self.size
        codec = self.attributes & 7
        log_append = self.max_timestamp if self.attributes & 0x08 else None
        args = (self.record_count, self.base_offset, self.first_timestamp, log_append, self.base_sequence)
        if codec == 0:
            data = self.data
            if isinstance(data, bytes):
                return decode_records(data, start, end, *args, start)
            return decode_records(bytes(data[start:end]), 0, end - start, *args, start)
        try:
            payload = decompress(codec, self.data[start:end], max_decompressed)
        except DecodeError as e:
            raise DecodeError(e.reason, start, e.detail) from None
        try:
            return decode_records(payload, 0, len(payload), *args, start)
        except DecodeError as e:
            raise DecodeError(e.reason, start, f"{e.detail} (at byte {e.offset - start} of the decompressed records)"
                              ) from None

    def control_type(self) -> str | None:
        """`commit` or `abort` (or another ControlRecordType name) for a control batch, None for data batches."""
        if not self.is_control:
            return None
        records = self.records()
        if not records or records[0].key is None or len(records[0].key) < 4:
            raise DecodeError("truncated", self.offset_in_data + HEADER_SIZE, "control batch without a control key")
        kind = int.from_bytes(records[0].key[2:4], "big", signed=True)
        return CONTROL_TYPES.get(kind, f"unknown_{kind}")
