"""The decoded record: a tuple, so decoding a batch creates one small object per record and nothing else."""

from __future__ import annotations

from typing import NamedTuple


class Record(NamedTuple):
    """One record of a batch (or one message of a legacy message set)."""

    offset: int
    """Absolute offset: `base_offset + offset_delta` (in Produce requests base_offset is 0, the broker assigns it)."""
    timestamp: int
    """Milliseconds since the epoch; the batch's max_timestamp under LogAppendTime, -1 for magic 0."""
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    """Record headers in wire order (always empty for magic 0/1)."""
    offset_delta: int
    sequence: int
    """`base_sequence + offset_delta` wrapped at int32 as Kafka does, -1 when the producer is not idempotent."""
