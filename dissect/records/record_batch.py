# cython: annotation_typing=False
"""Magic 2 record batches: the 61-byte header and the varint-encoded records after it.

Plain Python that setup.py also compiles (Cython's pure-Python mode, record_batch.pxd): `decode_records` runs for
every record with --records, and compiled it is the same code without the interpreter's dispatch. Its arithmetic
stays Python's (no C types): lengths and varints come from hostile bytes, where a C integer could wrap.
"""

from __future__ import annotations

import struct

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol.wire import read_uvarint
from kafkatap.dissect.records.record import Record

HEADER = struct.Struct(">qiibIhiqqqhii")
"""base_offset, batch_length, partition_leader_epoch, magic, crc, attributes, last_offset_delta, base_timestamp,
max_timestamp, producer_id, producer_epoch, base_sequence, records_count."""
HEADER_SIZE = HEADER.size  # 61
CRC_START = 21
"""The crc32c covers everything from the attributes field to the end of the batch."""

_INT32_MAX = 0x7FFFFFFF


def decode_records(b: bytes, pos: int, end: int, count: int, base_offset: int, base_timestamp: int,
                   log_append_time: int | None, base_sequence: int, where: int) -> list[Record]:
    """Decode `count` records from `b[pos:end]`.

    `log_append_time` replaces every record timestamp when the batch says LogAppendTime. `where` is added to the
    position of a failure so the error's offset points into the caller's data (for compressed batches, the caller
    passes the start of the compressed payload since positions in decompressed data mean nothing on the wire).
    """
    if count < 0:
        raise DecodeError("negative_length", where, f"records_count {count}")
    out: list[Record] = []
    append = out.append
    new = tuple.__new__  # Record(...) would add a Python-level __new__ call per record
    start = pos
    try:
        for _ in range(count):
            if pos >= end:  # `b` may go on past `end` (the next batch): stop here, not there
                raise IndexError
            x = b[pos]
            if x < 0x80:
                pos += 1
            elif b[pos + 1] < 0x80:
                x, pos = (x & 0x7F) | b[pos + 1] << 7, pos + 2
            else:
                x, pos = read_uvarint(b, pos, 10)
            length = (x >> 1) ^ -(x & 1)
            rec_end = pos + length
            if length < 6 or rec_end > end:
                raise DecodeError("length_too_large" if length > 0 else "negative_length", where + pos - start,
                                  f"record length {length} with {end - pos} bytes left")
            pos += 1  # record attributes: unused
            x = b[pos]
            if x < 0x80:
                pos += 1
            elif b[pos + 1] < 0x80:
                x, pos = (x & 0x7F) | b[pos + 1] << 7, pos + 2
            else:
                x, pos = read_uvarint(b, pos, 10)
            ts_delta = (x >> 1) ^ -(x & 1)
            x = b[pos]
            if x < 0x80:
                pos += 1
            elif b[pos + 1] < 0x80:
                x, pos = (x & 0x7F) | b[pos + 1] << 7, pos + 2
            else:
                x, pos = read_uvarint(b, pos, 10)
            offset_delta = (x >> 1) ^ -(x & 1)
            x = b[pos]
            if x < 0x80:
                pos += 1
            elif b[pos + 1] < 0x80:
                x, pos = (x & 0x7F) | b[pos + 1] << 7, pos + 2
            else:
                x, pos = read_uvarint(b, pos, 10)
            n = (x >> 1) ^ -(x & 1)
            if n >= 0:
                key, pos = b[pos : pos + n], pos + n
            else:
                key = None
            x = b[pos]
            if x < 0x80:
                pos += 1
            elif b[pos + 1] < 0x80:
                x, pos = (x & 0x7F) | b[pos + 1] << 7, pos + 2
            else:
                x, pos = read_uvarint(b, pos, 10)
            n = (x >> 1) ^ -(x & 1)
            if n >= 0:
                value, pos = b[pos : pos + n], pos + n
            else:
                value = None
            x = b[pos]
            if x == 0:
                headers, pos = [], pos + 1
            else:
                if x < 0x80:
                    pos += 1
                else:
                    x, pos = read_uvarint(b, pos, 10)
                headers, pos = _headers(b, pos, (x >> 1) ^ -(x & 1), rec_end, where - start)
            if pos != rec_end:
                raise DecodeError("length_too_large" if pos > rec_end else "trailing_bytes", where + pos - start,
                                  f"record fields end at {pos - start}, its length says {rec_end - start}")
            if base_sequence < 0:
                sequence = -1
            elif base_sequence > _INT32_MAX - offset_delta:
                sequence = offset_delta - (_INT32_MAX - base_sequence) - 1
            else:
                sequence = base_sequence + offset_delta
            append(new(Record, (base_offset + offset_delta,
                                base_timestamp + ts_delta if log_append_time is None else log_append_time,
                                key, value, headers, offset_delta, sequence)))
    except IndexError:
        raise DecodeError("truncated", where + end - start, f"record {len(out)} of {count} cut short") from None
    except DecodeError as e:
        if e.reason != "bad_varint":
            raise
        raise DecodeError("bad_varint", where + e.offset - start, e.detail) from None  # read_uvarint knows only `b`
    if pos != end:
        raise DecodeError("trailing_bytes", where + pos - start, f"{end - pos} bytes after the last of {count} records")
    return out


def _headers(b: bytes, pos: int, count: int, rec_end: int, shift: int) -> tuple[list[tuple[str, bytes | None]], int]:
    if count < 0 or count > rec_end - pos:
        raise DecodeError("negative_length" if count < 0 else "length_too_large", shift + pos, f"{count} headers")
    headers = []
    for _ in range(count):
        x = b[pos]
        if x < 0x80:
            pos += 1
        else:
            x, pos = read_uvarint(b, pos, 10)
        n = (x >> 1) ^ -(x & 1)
        if n < 0:
            raise DecodeError("null_not_allowed", shift + pos, "null record header key")
        try:
            key = b[pos : pos + n].decode()
        except UnicodeDecodeError:
            raise DecodeError("bad_utf8", shift + pos, "record header key") from None
        pos += n
        x = b[pos]
        if x < 0x80:
            pos += 1
        else:
            x, pos = read_uvarint(b, pos, 10)
        n = (x >> 1) ^ -(x & 1)
        if n >= 0:
            headers.append((key, b[pos : pos + n]))
            pos += n
        else:
            headers.append((key, None))
    return headers, pos
