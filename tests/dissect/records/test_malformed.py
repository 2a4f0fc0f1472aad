"""Bad record data is reported, never crashes: truncation, absurd lengths, bad magic, bad CRC, bombs, bad codecs."""

from __future__ import annotations

import struct
import zlib

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import DEFAULT_MAX_DECOMPRESSED, split_batches
from tests.support import paths

DATA = paths.DATA / "records"
GOLDEN = {p.stem: p.read_bytes() for p in DATA.glob("*.bin")}
HEADER = struct.Struct(">qiibIhiqqqhii")


def kafka_python_batch(n: int = 5, codec: int = 0, base_sequence: int = -1, producer_id: int = -1) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, False, producer_id, 0 if producer_id >= 0 else -1, base_sequence,
                                        1 << 20)
    for i in range(n):
        builder.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"value %d" % i, [("h", b"v")])
    return bytes(builder.build())


def patch_batch(batch: bytes, *, attributes: int | None = None, count: int | None = None,
                payload: bytes | None = None, max_timestamp: int | None = None, base_sequence: int | None = None,
                fix_crc: bool = True) -> bytes:
    """Rewrite header fields (and the records payload) of a magic 2 batch, keeping batch_length and CRC right."""
    fields = list(HEADER.unpack_from(batch))
    body = batch[HEADER.size :] if payload is None else payload
    for index, value in ((5, attributes), (12, count), (8, max_timestamp), (11, base_sequence)):
        if value is not None:
            fields[index] = value
    fields[1] = HEADER.size - 12 + len(body)
    out = bytearray(HEADER.pack(*fields) + body)
    if fix_crc:
        struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def check_never_crashes(data: bytes) -> None:
    """split_batches and every decode either succeed or raise DecodeError."""
    batches, partial, error = split_batches(data)
    assert error is None or isinstance(error, DecodeError)
    assert sum(b.size for b in batches) + partial <= len(data)
    for batch in batches:
        try:
            batch.records(max_decompressed=1 << 20)
            batch.control_type()
        except DecodeError:
            pass


# --- framing ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["librdkafka_v0_none", "kafkapython_v1_none", "librdkafka_v2_zstd",
                                  "kafkapython_v1_gzip"])
def test_truncation_at_every_offset_is_a_partial_batch(name: str) -> None:
    data = GOLDEN[name] * 2
    sizes = [b.size for b in split_batches(data)[0]]
    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    for cut in range(len(data) + 1):
        batches, partial, error = split_batches(data[:cut])
        complete = [e for e in ends if e <= cut]
        assert error is None
        assert len(batches) == len(complete)
        assert partial == cut - (complete[-1] if complete else 0)


def test_partial_batch_at_the_end_keeps_the_batches_before_it() -> None:
    one = kafka_python_batch()
    batches, partial, error = split_batches(one + one + one[:100])
    assert (len(batches), partial, error) == (2, 100, None)
    assert [b.offset_in_data for b in batches] == [0, len(one)]


@pytest.mark.parametrize("length, reason", [(-5, "negative_length"), (10, "truncated"), (48, "truncated")])
def test_impossible_batch_length_stops_the_split_with_the_good_batches(length: int, reason: str) -> None:
    one = kafka_python_batch()
    bad = bytearray(one)
    struct.pack_into(">i", bad, 8, length)
    batches, partial, error = split_batches(one + bytes(bad) + one)
    assert len(batches) == 1 and partial == 0
    assert error.reason == reason and error.offset == len(one)


def test_huge_batch_length_at_the_end_is_a_partial_batch() -> None:
    one = kafka_python_batch()
    bad = bytearray(one)
    struct.pack_into(">i", bad, 8, 0x7FFFFFFF)
    assert split_batches(one + bytes(bad))[1:] == (len(one), None)


@pytest.mark.parametrize("magic", [3, 0x7F, 0xFF])
def test_bad_magic_mid_stream(magic: int) -> None:
    one = kafka_python_batch()
    bad = bytearray(one)
    bad[16] = magic
    batches, partial, error = split_batches(one + one + bytes(bad) + one)
    assert len(batches) == 2 and partial == 0
    assert (error.reason, error.offset) == ("bad_magic", 2 * len(one))


def test_empty_and_tiny_inputs() -> None:
    assert split_batches(b"") == ([], 0, None)
    assert split_batches(b"\x00" * 16) == ([], 16, None)


# --- CRC --------------------------------------------------------------------------------------------------------

def test_bad_crc_is_a_flag_not_an_exception() -> None:
    one = kafka_python_batch()
    flipped = bytearray(one)
    flipped[-1] ^= 0x01  # last byte of the last header value
    batches, _, error = split_batches(one + bytes(flipped))
    assert error is None
    assert [b.crc_ok for b in batches] == [True, False]
    assert len(batches[1].records()) == 5


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_bad_crc_is_a_flag(magic: int) -> None:
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    builder.append(0, 1_700_000_000_000 if magic else None, b"k", b"value")
    data = bytearray(builder.build())
    data[-1] ^= 0xFF
    (batch,), _, _ = split_batches(bytes(data))
    assert not batch.crc_ok
    assert batch.records()[0].value == b"valu" + bytes([ord("e") ^ 0xFF])


# --- records inside a batch -------------------------------------------------------------------------------------

def test_every_internal_truncation_of_the_records_raises_decode_error() -> None:
    one = kafka_python_batch(n=4)
    body = one[HEADER.size :]
    for cut in range(len(body)):
        (batch,), _, error = split_batches(patch_batch(one, payload=body[:cut]))
        assert error is None and batch.crc_ok
        with pytest.raises(DecodeError) as info:
            batch.records()
        assert info.value.reason in {"truncated", "length_too_large", "trailing_bytes", "negative_length"}


def test_record_count_that_disagrees_with_the_bytes() -> None:
    one = kafka_python_batch(n=4)
    (more,), _, _ = split_batches(patch_batch(one, count=5))
    with pytest.raises(DecodeError, match="truncated"):
        more.records()
    (fewer,), _, _ = split_batches(patch_batch(one, count=3))
    with pytest.raises(DecodeError, match="trailing_bytes"):
        fewer.records()
    (negative,), _, _ = split_batches(patch_batch(one, count=-1))
    with pytest.raises(DecodeError, match="negative_length"):
        negative.records()


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_id(codec: int) -> None:
    (batch,), _, _ = split_batches(patch_batch(kafka_python_batch(), attributes=codec))
    assert batch.compression == f"unknown_{codec}"
    with pytest.raises(DecodeError, match="bad_compression"):
        batch.records()


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_compressed_payload(codec: int) -> None:
    (batch,), _, _ = split_batches(patch_batch(kafka_python_batch(), attributes=codec, payload=b"\x00garbage" * 9))
    with pytest.raises(DecodeError) as info:
        batch.records()
    assert info.value.reason == "bad_compression" and info.value.offset == HEADER.size


COMPRESSORS = {1: cramjam.gzip.compress, 2: cramjam.snappy.compress_raw, 3: cramjam.lz4.compress,
               4: cramjam.zstd.compress}


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_bomb_is_capped(codec: int) -> None:
    bomb = bytes(COMPRESSORS[codec](b"\x00" * (4 << 20)))
    assert len(bomb) < 300_000
    (batch,), _, _ = split_batches(patch_batch(kafka_python_batch(), attributes=codec, payload=bomb))
    with pytest.raises(DecodeError) as info:
        batch.records(max_decompressed=1 << 20)
    assert info.value.reason == "bad_compression" and "cap" in info.value.detail
    with pytest.raises(DecodeError, match="trailing_bytes|length_too_large|negative_length|bad_varint"):
        batch.records(max_decompressed=8 << 20)  # under a larger cap it decompresses: zeros are not records


def test_default_cap_stops_a_zstd_bomb() -> None:
    bomb = bytes(cramjam.zstd.compress(b"\x00" * (DEFAULT_MAX_DECOMPRESSED + 1)))
    (batch,), _, _ = split_batches(patch_batch(kafka_python_batch(), attributes=4, payload=bomb))
    with pytest.raises(DecodeError, match="bad_compression"):
        batch.records()


def test_legacy_wrapper_bomb_is_capped_at_split_time() -> None:
    bomb = bytes(cramjam.gzip.compress(b"\x00" * (2 << 20)))
    body = struct.pack(">bbq", 1, 1, 1_700_000_000_000) + struct.pack(">i", -1) + struct.pack(">i", len(bomb)) + bomb
    message = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    (batch,), _, error = split_batches(message, max_decompressed=1 << 20)
    assert error is None and batch.crc_ok and batch.record_count is None
    with pytest.raises(DecodeError, match="bad_compression"):
        batch.records()


def test_legacy_wrapper_with_nested_compression_is_rejected() -> None:
    inner = LegacyRecordBatchBuilder(1, 1, 1 << 20)
    inner.append(0, 1_700_000_000_000, b"k", b"v")
    nested = bytes(cramjam.gzip.compress(bytes(inner.build())))
    body = struct.pack(">bbq", 1, 1, 1_700_000_000_000) + struct.pack(">i", -1) + struct.pack(">i", len(nested))
    message = struct.pack(">qiI", 0, len(body) + len(nested) + 4, zlib.crc32(body + nested)) + body + nested
    (batch,), _, _ = split_batches(message)
    assert batch.record_count is None
    with pytest.raises(DecodeError, match="nested"):
        batch.records()


def test_legacy_message_with_a_key_longer_than_the_message() -> None:
    builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
    builder.append(0, 1_700_000_000_000, b"key", b"value")
    data = bytearray(builder.build())
    struct.pack_into(">i", data, 12 + 4 + 2 + 8, 1000)
    (batch,), _, error = split_batches(bytes(data))
    assert error is None and batch.record_count == 1 and not batch.crc_ok
    with pytest.raises(DecodeError, match="length_too_large"):
        batch.records()


# --- batch semantics --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, name", [(0, "abort"), (1, "commit"), (5, "kraft_version"), (42, "unknown_42")])
def test_control_batches(kind: int, name: str) -> None:
    builder = DefaultRecordBatchBuilder(2, 0, True, 9, 1, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 7), [])
    (batch,), _, _ = split_batches(patch_batch(bytes(builder.build()), attributes=0x30))
    assert batch.is_control and batch.is_transactional
    assert batch.control_type() == name


def test_log_append_time_replaces_record_timestamps() -> None:
    (batch,), _, _ = split_batches(patch_batch(kafka_python_batch(), attributes=0x08, max_timestamp=42))
    assert batch.timestamp_type == 1
    assert {r.timestamp for r in batch.records()} == {42}


def test_sequence_wraps_at_int32_like_kafka() -> None:
    (batch,), _, _ = split_batches(patch_batch(kafka_python_batch(n=3, producer_id=5, base_sequence=0),
                                               base_sequence=0x7FFFFFFF - 1))
    assert [r.sequence for r in batch.records()] == [0x7FFFFFFE, 0x7FFFFFFF, 0]


def test_bad_header_key_utf8_and_null_header_key() -> None:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, 1_700_000_000_000, b"k", b"v", [("hk", b"hv")])
    good = bytes(builder.build())
    at = good.index(b"hk")
    (bad_utf8,), _, _ = split_batches(patch_batch(good, payload=good[HEADER.size : at] + b"\xff\xfe" + good[at + 2 :]))
    with pytest.raises(DecodeError, match="bad_utf8"):
        bad_utf8.records()
    body = good[HEADER.size : at - 1] + b"\x01" + b"\x00\x00" + good[at + 2 :]  # key length -1, then 2 filler bytes
    (null_key,), _, _ = split_batches(patch_batch(good, payload=body))
    with pytest.raises(DecodeError, match="null_not_allowed"):
        null_key.records()


# --- fuzz -------------------------------------------------------------------------------------------------------

SEEDS = [GOLDEN[n] for n in ("librdkafka_v2_none", "tansu_fetch_transactions", "kafkapython_v2_snappy",
                             "kafkapython_v1_gzip", "librdkafka_v0_lz4", "kafkapython_v2_zstd")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)),
                                                   min_size=1, max_size=4), fix_crc=st.booleans())
def test_mutated_batches_never_crash(seed: bytes, flips: list[tuple[int, int]], fix_crc: bool) -> None:
    data = bytearray(seed)
    for where, xor in flips:
        data[where % len(data)] ^= xor
    if fix_crc and data[16] == 2 and len(data) >= 61:
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    check_never_crashes(bytes(data))


def test_overlong_varint_is_bad_varint_at_its_offset_in_the_data() -> None:
    one = kafka_python_batch(n=1)
    body = one[HEADER.size :]
    overlong = body[:2] + b"\xff" * 11 + body[13:]  # record length, attributes, then an 11-byte timestamp delta
    data = one + patch_batch(one, payload=overlong)
    for form in (data, memoryview(data), bytearray(data)):
        (_, bad), _, _ = split_batches(form)
        with pytest.raises(DecodeError) as info:
            bad.records()
        assert info.value.reason == "bad_varint"
        assert info.value.offset == len(one) + HEADER.size + 2  # where the overlong varint starts
