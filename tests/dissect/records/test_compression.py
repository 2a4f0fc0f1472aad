"""The codec functions: every framing Kafka clients use, and the output cap against lying headers and bombs."""

from __future__ import annotations

import os
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import compression

PAYLOADS = [b"", b"a", os.urandom(3000), b"kafka record data " * 20000]


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: str(len(p)))
@pytest.mark.parametrize("codec, compress", [(1, cramjam.gzip.compress), (2, cramjam.snappy.compress_raw),
                                             (3, cramjam.lz4.compress), (4, cramjam.zstd.compress)])
def test_cramjam_round_trip(codec: int, compress, payload: bytes) -> None:
    assert compression.decompress(codec, bytes(compress(payload))) == payload
    assert compression.decompress(codec, memoryview(b"..." + bytes(compress(payload)))[3:]) == payload


def xerial(payload: bytes, block: int) -> bytes:
    """kafka-java's SnappyOutputStream framing: magic, version 1, compatible version 1, [int32 length][block]..."""
    out = [b"\x82SNAPPY\x00", struct.pack(">ii", 1, 1)]
    for i in range(0, len(payload), block):
        chunk = bytes(cramjam.snappy.compress_raw(payload[i : i + block]))
        out += [struct.pack(">i", len(chunk)), chunk]
    return b"".join(out)


def test_xerial_snappy_blocks() -> None:
    payload = os.urandom(1000) * 100
    assert compression.snappy(xerial(payload, 32 * 1024)) == payload
    assert compression.snappy(xerial(b"", 10)) == b""
    with pytest.raises(DecodeError, match="cap"):
        compression.snappy(xerial(payload, 32 * 1024), limit=50_000)
    with pytest.raises(DecodeError, match="bad_compression"):
        compression.snappy(xerial(payload, 32 * 1024)[:-5])


def test_multi_member_gzip() -> None:
    data = bytes(cramjam.gzip.compress(b"first " * 100)) + bytes(cramjam.gzip.compress(b"second " * 100))
    assert compression.gzip(data) == b"first " * 100 + b"second " * 100


def test_gzip_trailer_lying_about_the_size_is_caught_by_the_cap() -> None:
    data = bytearray(cramjam.gzip.compress(b"\x00" * (2 << 20)))
    struct.pack_into("<I", data, len(data) - 4, 100)
    with pytest.raises(DecodeError, match="bad_compression"):
        compression.gzip(bytes(data), limit=1 << 20)


def test_snappy_length_header_lying_small() -> None:
    data = bytes(cramjam.snappy.compress_raw(b"x" * 5000))
    lying = b"\x0a" + data[2:]  # the varint length 5000 (2 bytes) replaced by 10
    with pytest.raises(DecodeError, match="bad_compression"):
        compression.snappy(lying)


def test_lz4_frame_options() -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    payload = b"lz4 frame " * 50_000
    for linked in (True, False):
        for checksum in (True, False):
            for store_size in (True, False):
                data = lz4_frame.compress(payload, block_linked=linked, content_checksum=checksum,
                                          block_checksum=checksum, store_size=store_size,
                                          block_size=lz4_frame.BLOCKSIZE_MAX64KB)
                assert compression.lz4(data) == payload
                with pytest.raises(DecodeError, match="cap"):
                    compression.lz4(data, limit=100_000)


def test_lz4_content_size_lying_small() -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    data = bytearray(lz4_frame.compress(b"y" * 100_000, store_size=True))
    struct.pack_into("<Q", data, 6, 10)
    with pytest.raises(DecodeError, match="bad_compression"):
        compression.lz4(bytes(data))


def test_zstd_with_and_without_content_size() -> None:
    zstandard = pytest.importorskip("zstandard")
    payload = os.urandom(500) * 1000
    for write_size in (True, False):
        data = zstandard.ZstdCompressor(write_content_size=write_size).compress(payload)
        assert compression.zstd(data) == payload
    stream = zstandard.ZstdCompressor().compressobj()
    data = stream.compress(payload) + stream.flush()
    assert compression.zstd(data) == payload
    with pytest.raises(DecodeError, match="cap"):
        compression.zstd(data, limit=100_000)


@pytest.mark.parametrize("fn", [compression.gzip, compression.snappy, compression.lz4, compression.zstd])
@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff" * 40, b"\x04\x22\x4d\x18\x64", b"\x28\xb5\x2f\xfd\x00"])
def test_garbage_is_bad_compression(fn, data: bytes) -> None:
    try:
        out = fn(data)
    except DecodeError as e:
        assert e.reason == "bad_compression"
    else:
        assert out == b""  # an empty snappy block is valid


def test_xxh32_matches_the_reference_vectors() -> None:
    assert compression._xxh32(b"") == 0x02CC5D05
    assert compression._xxh32(b"a") == 0x550D7456
    assert compression._xxh32(b"abc") == 0x32D153FF


@settings(max_examples=400, deadline=None)
@given(prefix=st.sampled_from([b"", b"\x1f\x8b\x08\x00", b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01",
                               b"\x04\x22\x4d\x18", b"\x28\xb5\x2f\xfd", b"\x50\x2a\x4d\x18"]),
       body=st.binary(max_size=64), codec=st.integers(0, 7), legacy_lz4=st.booleans())
def test_arbitrary_bytes_raise_only_decode_error(prefix: bytes, body: bytes, codec: int, legacy_lz4: bool) -> None:
    try:
        compression.decompress(codec, prefix + body, 1 << 20, legacy_lz4=legacy_lz4)
    except DecodeError as e:
        assert e.reason == "bad_compression"
