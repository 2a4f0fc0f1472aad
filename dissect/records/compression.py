"""Decompression of Kafka record data: one function per codec, over cramjam, with an output cap.

Every codec decompresses with cramjam's `decompress_into` into a buffer no larger than the cap: cramjam fails when
the output does not fit, so a decompression bomb costs at most `limit` bytes of memory and becomes
`DecodeError("bad_compression")` instead of exhausting the machine. The buffer is sized from what the data itself
declares (snappy lengths, lz4 / zstd block headers, the gzip trailer) so small batches do not pay for a large buffer;
a declaration that lies makes the data not fit, which is reported the same way.
"""

from __future__ import annotations

import struct

import cramjam

from kafkatap.dissect.errors import DecodeError

DEFAULT_MAX_DECOMPRESSED = 64 << 20
"""Default cap on the decompressed size of one batch (or one legacy wrapper message)."""

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
"""Compression names by the codec id in the low 3 attribute bits."""

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_DEFLATE_MAX_RATIO = 1032
_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 << 10
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I32_BE = struct.Struct(">i")


def _bad(detail: str) -> DecodeError:
    return DecodeError("bad_compression", 0, detail)


def _into(module, data: bytes | memoryview, size: int, limit: int, raw: bool = False) -> bytes:
    """Decompress into a buffer of `min(size, limit)` bytes; not fitting means a lying header or a bomb."""
    out = bytearray(min(size, limit))
    try:
        n = (module.decompress_raw_into if raw else module.decompress_into)(data, out)
    except cramjam.DecompressionError as e:
        if "whole buffer" in str(e):
            if size >= limit:
                raise _bad(f"decompressed data exceeds the cap of {limit} bytes") from None
            raise _bad(f"decompressed data exceeds the {size} bytes its headers declare") from None
        raise _bad(str(e)) from None
    del out[n:]
    return bytes(out)


def gzip(data: bytes | memoryview, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """gzip (codec 1). The trailer's ISIZE sizes the first try; if it is wrong (or there are several members) the
    second try uses deflate's largest possible expansion (1032:1), still capped."""
    if len(data) < 18:
        raise _bad("gzip data shorter than its header and trailer")
    declared = _U32.unpack_from(data, len(data) - 4)[0]
    if declared < limit:
        try:
            return _into(cramjam.gzip, data, declared, limit)
        except DecodeError:
            pass
    return _into(cramjam.gzip, data, _DEFLATE_MAX_RATIO * len(data), limit)


def snappy(data: bytes | memoryview, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """snappy (codec 2): raw snappy (librdkafka) or xerial framing (kafka-java's SnappyOutputStream)."""
    if bytes(data[:8]) != _XERIAL_MAGIC:
        return _snappy_raw(data, limit)
    # xerial: magic, version int32, compatible version int32, then [int32 length][raw snappy block] repeated.
    pos, n, parts, total = 16, len(data), [], 0
    while pos < n:
        if pos + 4 > n:
            raise _bad("xerial snappy block length cut short")
        length = _I32_BE.unpack_from(data, pos)[0]
        if length < 0 or pos + 4 + length > n:
            raise _bad(f"xerial snappy block length {length} exceeds the data")
        part = _snappy_raw(data[pos + 4 : pos + 4 + length], limit - total)
        total += len(part)
        parts.append(part)
        pos += 4 + length
    return b"".join(parts)


def _snappy_raw(data: bytes | memoryview, limit: int) -> bytes:
    try:
        declared = cramjam.snappy.decompress_raw_len(data)
    except cramjam.DecompressionError as e:
        raise _bad(f"snappy: {e}") from None
    if declared > limit:
        raise _bad(f"snappy block declares {declared} bytes, over the cap of {limit}")
    return _into(cramjam.snappy, data, declared, limit, raw=True)


def lz4(data: bytes | memoryview, limit: int = DEFAULT_MAX_DECOMPRESSED, *, legacy_header: bool = False) -> bytes:
    """lz4 frame format (codec 3). The block headers bound the output before anything is decompressed.

    `legacy_header`: magic 0 messages from Kafka before 0.10 computed the frame header checksum over the magic
    number too (KAFKA-3160); the checksum is then recomputed so the standard frame decoder accepts it.
    """
    if legacy_header:
        data = _fix_lz4_header_checksum(data)
    return _into(cramjam.lz4, data, _lz4_bound(data), limit)


def _lz4_bound(data: bytes | memoryview) -> int:
    """Upper bound of a (sequence of) lz4 frame(s)' output: content size if declared, else per-block maxima."""
    pos, n, bound = 0, len(data), 0
    try:
        while pos < n:
            if _U32.unpack_from(data, pos)[0] != _LZ4_MAGIC:
                raise _bad("not an lz4 frame (bad magic number)")
            flg, bd = data[pos + 4], data[pos + 5]
            block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
            if flg >> 6 != 1 or block_max is None:
                raise _bad("lz4 frame descriptor has an unknown version or block size")
            pos += 6
            content_size = None
            if flg & 0x08:
                content_size = _U64.unpack_from(data, pos)[0]
                pos += 8
            pos += (4 if flg & 0x01 else 0) + 1
            frame = 0
            while True:
                word = _U32.unpack_from(data, pos)[0]
                pos += 4
                if word == 0:
                    break
                size = word & 0x7FFFFFFF
                frame += size if word & 0x80000000 else block_max
                pos += size + (4 if flg & 0x10 else 0)
            pos += 4 if flg & 0x04 else 0
            bound += frame if content_size is None else min(frame, content_size)
    except (struct.error, IndexError):
        raise _bad("lz4 frame cut short") from None
    return bound


def _fix_lz4_header_checksum(data: bytes | memoryview) -> bytes:
    buf = bytearray(data)
    if len(buf) < 7:
        raise _bad("lz4 frame cut short")
    end = 6 + (8 if buf[4] & 0x08 else 0) + (4 if buf[4] & 0x01 else 0)
    if end >= len(buf):
        raise _bad("lz4 frame cut short")
    buf[end] = (_xxh32(bytes(buf[4:end])) >> 8) & 0xFF
    return bytes(buf)


def _xxh32(data: bytes) -> int:
    """xxHash32 (seed 0) of a frame descriptor (at most 15 bytes): hand-written since only lz4's header needs it."""
    p1, p2, p3, p4, p5, mask = 2654435761, 2246822519, 3266489917, 668265263, 374761393, 0xFFFFFFFF
    h = (p5 + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        h = (h + _U32.unpack_from(data, i)[0] * p3) & mask
        h = (((h << 17) | (h >> 15)) & mask) * p4 & mask
        i += 4
    for byte in data[i:]:
        h = (h + byte * p5) & mask
        h = (((h << 11) | (h >> 21)) & mask) * p1 & mask
    h = ((h ^ (h >> 15)) * p2) & mask
    h = ((h ^ (h >> 13)) * p3) & mask
    return h ^ (h >> 16)


def zstd(data: bytes | memoryview, limit: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """zstd (codec 4). The block headers bound the output (raw and RLE blocks exactly, others at 128 KiB)."""
    return _into(cramjam.zstd, data, _zstd_bound(data), limit)


def _zstd_bound(data: bytes | memoryview) -> int:
    pos, n, bound = 0, len(data), 0
    try:
        while pos < n:
            magic = _U32.unpack_from(data, pos)[0]
            if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
                pos += 8 + _U32.unpack_from(data, pos + 4)[0]
                continue
            if magic != _ZSTD_MAGIC:
                raise _bad("not a zstd frame (bad magic number)")
            fhd = data[pos + 4]
            single_segment = fhd & 0x20
            pos += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3]
            fcs_size = (1 if single_segment else 0, 2, 4, 8)[fhd >> 6]
            content_size = int.from_bytes(data[pos : pos + fcs_size], "little") if fcs_size else None
            if fcs_size == 2:
                content_size += 256
            pos += fcs_size
            frame = 0
            while True:
                header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
                pos += 3
                block_type, size = (header >> 1) & 3, header >> 3
                if block_type == 0:
                    frame, pos = frame + size, pos + size
                elif block_type == 1:
                    frame, pos = frame + size, pos + 1
                elif block_type == 2:
                    frame, pos = frame + _ZSTD_BLOCK_MAX, pos + size
                else:
                    raise _bad("zstd block of the reserved type")
                if header & 1:
                    break
            pos += 4 if fhd & 0x04 else 0
            bound += frame if content_size is None else min(frame, content_size)
    except (struct.error, IndexError):
        raise _bad("zstd frame cut short") from None
    return bound


def decompress(codec: int, data: bytes | memoryview, limit: int = DEFAULT_MAX_DECOMPRESSED,
               *, legacy_lz4: bool = False) -> bytes:
    """Decompress by codec id (attributes & 7); an id other than 1-4 is `bad_compression`."""
    if codec == 1:
        return gzip(data, limit)
    if codec == 2:
        return snappy(data, limit)
    if codec == 3:
        return lz4(data, limit, legacy_header=legacy_lz4)
    if codec == 4:
        return zstd(data, limit)
    raise _bad(f"unknown compression codec id {codec}")
