"""A batch's fingerprint (batches/ `fingerprint`, with --records) stands for its records' content: the same records
print the same wherever and whenever they were sent, any other content prints otherwise. The possible re-sends of
non-idempotent producers (pipelines' duplicates/producer.py) are batches that print the same."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from kafkatap.dissect.records import split_batches
from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tables.batches import record_rows
from kafkatap.samples.synthetic import record_batch
from tests.support.paths import SAMPLES

HEAD = ("c1", 1, "produce", 0, "app")


def fingerprint(data: bytes) -> int | None:
    [batch], _, _ = split_batches(data)
    problems: list[tuple] = []
    rows, print_ = record_rows(batch, HEAD, "t", 0, False, lambda *p: problems.append(p))
    assert problems == [] and len(rows) == batch.record_count
    return print_


def test_the_same_records_print_the_same_at_another_offset_and_time() -> None:
    records = [(b"k1", b"v1"), (None, b"v2"), (b"k3", None)]
    first = fingerprint(record_batch(0, records, 1_700_000_000_000))
    assert first is not None and -(1 << 63) <= first < 1 << 63  # an int64 column
    assert fingerprint(record_batch(500, records, 1_700_000_999_000)) == first


def test_other_content_prints_otherwise() -> None:
    records = [(b"k1", b"v1"), (b"k2", b"v2")]
    base = fingerprint(record_batch(0, records, 0))
    others = [
        [(b"k1", b"v1"), (b"k2", b"v3")],  # a value
        [(b"k1", b"v1")],  # a record fewer
        [(b"k2", b"v2"), (b"k1", b"v1")],  # the same records at other offset deltas
        [(b"k1", b"v1"), (b"", b"v2")],  # an empty key is not another record's
    ]
    prints = [fingerprint(record_batch(0, other, 0)) for other in others]
    prints.append(fingerprint(record_batch(0, [(b"k1", b"v1"), (None, b"v2")], 0)))
    assert base not in prints and len(set(prints)) == len(prints)
    # a null key and a null value in each other's place
    assert fingerprint(record_batch(0, [(None, b"x")], 0)) != fingerprint(record_batch(0, [(b"x", None)], 0))


def test_a_batch_without_readable_records_has_none() -> None:
    [batch], _, _ = split_batches(record_batch(0, [(b"k", b"v")], 0))
    broken = batch._replace(record_count=2)  # one record more than the batch holds
    problems: list[tuple] = []
    assert record_rows(broken, HEAD, "t", 0, False, lambda *p: problems.append(p)) == ([], None)
    assert [kind for kind, _, _ in problems] == ["malformed_batch"]
    [empty], _, _ = split_batches(record_batch(0, [], 0))
    assert record_rows(empty, HEAD, "t", 0, False, lambda *p: problems.append(p)) == ([], None)


def test_a_produced_batch_prints_as_the_batch_consumers_fetched(tmp_path) -> None:
    """On a real capture, every batch a consumer fetched prints as the batch its producer sent to that offset (the
    broker rewrote its base offset, not its records), and a capture dissected without --records has no prints."""
    sample = SAMPLES / "produce_consume.pcapng"
    ports = json.loads(sample.with_name("produce_consume.truth.json").read_text())["broker_ports"]
    dissect_captures([str(sample)], str(tmp_path / "out"), ports=ports, records=True, workers=1)
    rows = pq.read_table(tmp_path / "out" / "batches").to_pylist()
    produced = {(r["topic"], r["partition"], r["assigned_offset"]): r["fingerprint"]
                for r in rows if r["direction"] == "produce"}
    fetched = [r for r in rows if r["direction"] == "fetch"]
    assert fetched and all(r["fingerprint"] is not None for r in rows)
    assert all(produced[(r["topic"], r["partition"], r["base_offset"])] == r["fingerprint"] for r in fetched
               if (r["topic"], r["partition"], r["base_offset"]) in produced)
    assert sum((r["topic"], r["partition"], r["base_offset"]) in produced for r in fetched) >= len(produced) // 2
    dissect_captures([str(sample)], str(tmp_path / "plain"), ports=ports, workers=1)
    assert set(pq.read_table(tmp_path / "plain" / "batches").column("fingerprint").to_pylist()) == {None}
