"""Record data written by real producers decodes to exactly what they were asked to send.

The golden files come from tests/data/records/make_golden.py: librdkafka (confluent-kafka) Produce requests captured
through a proxy in front of a Tansu broker, kafka-python's own record builders, for every codec, and the Fetch
response record data (with the broker's transaction markers) a read_committed consumer received.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

from kafkatap.dissect.records import split_batches
from kafkatap.dissect.records.legacy import parse_message
from tests.support import paths

DATA = paths.DATA / "records"
CASES = sorted(p.stem for p in DATA.glob("*.bin") if p.stem.startswith(("librdkafka_", "kafkapython_")))


def expected(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def as_json(records) -> list[dict]:
    b64 = lambda b: None if b is None else base64.b64encode(b).decode()  # noqa: E731
    return [{"key": b64(r.key), "value": b64(r.value), "timestamp": r.timestamp,
             "headers": [[k, b64(v)] for k, v in r.headers]} for r in records]


def test_every_producer_and_codec_is_covered() -> None:
    wanted = {f"{client}_v2_{codec}" for client in ("librdkafka", "kafkapython")
              for codec in ("none", "gzip", "snappy", "lz4", "zstd")}
    wanted |= {f"kafkapython_v{m}_{c}" for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")}
    wanted |= {f"librdkafka_v0_{c}" for c in ("none", "gzip", "snappy", "lz4")}
    assert wanted <= set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_golden_batches_decode_to_what_the_producer_sent(name: str) -> None:
    data = (DATA / f"{name}.bin").read_bytes()
    batches, partial, error = split_batches(data)
    assert (partial, error) == (0, None)
    assert sum(b.size for b in batches) == len(data)
    magic = int(name.split("_v")[1][0])
    codec = name.rsplit("_", 1)[1]
    assert {b.magic for b in batches} == {magic}
    assert {b.compression for b in batches} == {codec}
    assert all(b.crc_ok for b in batches)
    records = [r for b in batches for r in b.records()]
    assert as_json(records) == expected(name)["messages"]
    assert sum(b.record_count for b in batches) == len(records)
    # Produce requests carry offsets from 0 (legacy sets as several messages, or relative inside one wrapper).
    assert [r.offset for r in records] == list(range(len(records)))
    for b in batches:
        inside = [r for r in records if b.base_offset <= r.offset <= b.last_offset]
        assert len(inside) == b.record_count
        assert b.first_timestamp == inside[0].timestamp
        assert b.max_timestamp == max(r.timestamp for r in inside)


@pytest.mark.parametrize("name", ["librdkafka_v2_gzip", "librdkafka_v2_zstd", "kafkapython_v2_lz4"])
def test_idempotent_producer_state_and_sequences(name: str) -> None:
    info = expected(name)
    (batch,), _, _ = split_batches((DATA / f"{name}.bin").read_bytes())
    if name.startswith("kafkapython"):
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, 77)
    else:
        assert batch.producer_id >= 0 and batch.producer_epoch == 0 and batch.base_sequence == 0
    assert [r.sequence for r in batch.records()] == [batch.base_sequence + i for i in range(len(info["messages"]))]
    assert batch.last_offset == batch.base_offset + batch.record_count - 1
    assert not batch.is_transactional and not batch.is_control and batch.control_type() is None


def test_not_idempotent_batches_have_no_sequences() -> None:
    (batch,), _, _ = split_batches((DATA / "librdkafka_v2_none.bin").read_bytes())
    assert (batch.producer_id, batch.base_sequence) == (-1, -1)
    assert {r.sequence for r in batch.records()} == {-1}


def test_both_snappy_framings_are_covered() -> None:
    """kafka-java and kafka-python write xerial-framed snappy, librdkafka raw snappy."""
    xerial = (DATA / "kafkapython_v2_snappy.bin").read_bytes()
    raw = (DATA / "librdkafka_v2_snappy.bin").read_bytes()
    assert xerial[61:69] == b"\x82SNAPPY\x00"
    assert raw[61:69] != b"\x82SNAPPY\x00"


@pytest.mark.parametrize("name", ["kafkapython_v0_lz4", "librdkafka_v0_lz4"])
def test_magic0_lz4_with_kafkas_old_header_checksum(name: str) -> None:
    """Both clients still write magic 0 lz4 with the header checksum over the magic number too (KAFKA-3160)."""
    from kafkatap.dissect.errors import DecodeError
    from kafkatap.dissect.records import compression

    data = (DATA / f"{name}.bin").read_bytes()
    value = parse_message(data, 0, len(data))[6]
    with pytest.raises(DecodeError, match="bad_compression"):
        compression.lz4(value)
    assert len(compression.lz4(value, legacy_header=True)) > 0


def test_memoryview_and_bytearray_inputs_decode_the_same() -> None:
    data = (DATA / "librdkafka_v2_lz4.bin").read_bytes() + (DATA / "librdkafka_v2_none.bin").read_bytes()
    want = [b.records() for b in split_batches(data)[0]]
    for form in (memoryview(data), bytearray(data), memoryview(b"xx" + data)[2:]):
        batches, partial, error = split_batches(form)
        assert (partial, error) == (0, None)
        assert [b.records() for b in batches] == want
        assert [b.raw() for b in batches] == [data[: batches[0].size], data[batches[0].size :]]


def test_broker_written_transaction_markers_from_a_fetch_response() -> None:
    info = expected("tansu_fetch_transactions")
    batches, partial, error = split_batches((DATA / "tansu_fetch_transactions.bin").read_bytes())
    assert (partial, error) == (0, None)
    assert [b.control_type() for b in batches] == [b["control"] for b in info["batches"]]
    producer_ids = {b.producer_id for b in batches}
    assert len(producer_ids) == 1 and producer_ids.pop() >= 0
    next_offset = 0
    for batch, want in zip(batches, info["batches"], strict=True):
        assert batch.crc_ok and batch.is_transactional and batch.magic == 2
        assert batch.base_offset == next_offset  # offsets the broker assigned, markers included
        next_offset = batch.last_offset + 1
        if want["control"] is None:
            assert batch.compression == "lz4" and not batch.is_control
            assert as_json(batch.records()) == want["messages"]
        else:
            assert batch.is_control and batch.record_count == 1
            assert batch.records()[0].key == struct.pack(">hh", 0, {"abort": 0, "commit": 1}[want["control"]])
