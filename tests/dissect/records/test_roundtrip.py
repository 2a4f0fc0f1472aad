"""Property round-trip: kafka-python's record builders (what its KafkaProducer runs) encode generated records, we
decode them, and the records come back unchanged; kafka-python's own reader is a second oracle (offsets, headers)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkatap.dissect.records import split_batches

AVAILABLE = {"none": True, "gzip": True, "snappy": kafka_codec.has_snappy(), "lz4": kafka_codec.has_lz4(),
             "zstd": kafka_codec.has_zstd()}
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def codec_param(name: str, legacy: bool = False):
    # kafka-python writes magic 0 lz4 with the old Kafka header checksum, which needs xxhash.
    missing = not AVAILABLE[name] or (legacy and name == "lz4" and kafka_codec.xxhash is None)
    return pytest.param(name, marks=pytest.mark.skipif(
        missing, reason=f"kafka-python cannot write {name} here (needs lz4 / python-snappy / zstandard / xxhash)"))


blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=10), blobs), max_size=3)
records = st.lists(st.tuples(blobs, blobs, headers, st.integers(0, 10**6)), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(recs=records, producer=st.sampled_from([(-1, -1, -1), (1234, 2, 0), (7, 0, 0x7FFFFFF0)]),
       base_ts=st.integers(0, 2**41), transactional=st.booleans())
@pytest.mark.parametrize("codec", [codec_param(c) for c in CODEC_IDS])
def test_magic2_round_trip(codec: str, recs: list, producer: tuple, base_ts: int, transactional: bool) -> None:
    producer_id, epoch, base_sequence = producer
    builder = DefaultRecordBatchBuilder(2, CODEC_IDS[codec], transactional and producer_id >= 0, producer_id, epoch,
                                        base_sequence, 10 << 20)
    for i, (key, value, hdrs, ts_delta) in enumerate(recs):
        assert builder.append(i, base_ts + ts_delta, key, value, hdrs) is not None
    data = bytes(builder.build())  # build() once: a second call would compress the compressed buffer again
    (batch,), partial, error = split_batches(data)
    assert (partial, error) == (0, None)
    assert batch.crc_ok and batch.magic == 2 and batch.record_count == len(recs)
    assert batch.compression in (codec, "none")  # kafka-python keeps a batch plain when compressing does not help
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional == (transactional and producer_id >= 0)
    assert batch.first_timestamp == base_ts + recs[0][3]
    assert batch.max_timestamp == max(base_ts + r[3] for r in recs)
    decoded = batch.records()
    assert [(r.key, r.value, [(k, v) for k, v in r.headers], r.timestamp) for r in decoded] == \
        [(k, v, [(hk, hv) for hk, hv in h], base_ts + t) for k, v, h, t in recs]
    assert [r.offset for r in decoded] == list(range(len(recs)))
    assert [r.sequence for r in decoded] == [_sequence(base_sequence, i) for i in range(len(recs))]
    oracle = list(MemoryRecords(data).next_batch())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in oracle] == \
        [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded]


def _sequence(base: int, delta: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from int32 max to 0."""
    if base < 0:
        return -1
    return (base + delta) % (2**31)


@settings(max_examples=30, deadline=None)
@given(recs=st.lists(st.tuples(blobs, blobs, st.integers(0, 10**6)), min_size=1, max_size=20),
       wrapper_offset=st.sampled_from([None, 1000]))
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [codec_param(c, legacy=True) for c in ("none", "gzip", "snappy", "lz4")])
def test_legacy_round_trip(codec: str, magic: int, recs: list, wrapper_offset: int | None) -> None:
    builder = LegacyRecordBatchBuilder(magic, CODEC_IDS[codec], 10 << 20)
    base_ts = 1_700_000_000_000
    for i, (key, value, ts) in enumerate(recs):
        assert builder.append(i, base_ts + ts if magic else None, key, value) is not None
    data = bytearray(builder.build())
    if wrapper_offset is not None and codec != "none":
        # As a broker writes it: the last inner absolute offset (the CRC does not cover the offset).
        data[0:8] = wrapper_offset.to_bytes(8, "big")
    batches, partial, error = split_batches(bytes(data))
    assert (partial, error) == (0, None)
    assert all(b.crc_ok and b.magic == magic for b in batches)
    decoded = [r for b in batches for r in b.records()]
    assert [(r.key, r.value) for r in decoded] == [(k, v) for k, v, _ in recs]
    assert [r.timestamp for r in decoded] == [base_ts + t if magic else -1 for _, _, t in recs]
    assert sum(b.record_count for b in batches) == len(recs)
    oracle = [r for batch in _oracle_batches(bytes(data)) for r in batch]
    assert [r.offset for r in decoded] == [r.offset for r in oracle]
    if wrapper_offset is not None and codec != "none":
        want = list(range(wrapper_offset - len(recs) + 1, wrapper_offset + 1)) if magic else list(range(len(recs)))
        assert [r.offset for r in decoded] == want
        assert (batches[0].base_offset, batches[0].last_offset) == (want[0], want[-1])


def _oracle_batches(data: bytes):
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        yield list(batch)
