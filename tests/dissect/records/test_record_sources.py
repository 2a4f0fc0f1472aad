"""The record path of --records has one source, compiled: dissect/records/record_batch.py, dissect/records/batch.py and
dissect/tables/batches.py run as plain Python where the compiled core is not built and as their compiled build where
it is (Cython's pure-Python mode). The two must agree on every batch, and on every malformed one fail alike."""

from __future__ import annotations

import random
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import batch, record_batch, split_batches
from kafkatap.dissect.tables import batches
from kafkatap.samples.synthetic import control_batch, record_batch as synthetic_batch
from tests.support.mutations import mutate
from tests.support.paths import ROOT
from tests.support.sources import source_module

RECORDS = ROOT / "dissect" / "records"
HEAD = ("c1", 7, "fetch", 1_700_000_000_000_000, "app")
GZIP = 1


def _with_headers(base_offset: int, compression: int = 0, base_sequence: int = -1) -> bytes:
    """Records with headers (a null header value among them), a null key and a null value, optionally compressed."""
    builder = DefaultRecordBatchBuilder(2, compression, False, 9 if base_sequence >= 0 else -1,
                                        0 if base_sequence >= 0 else -1, base_sequence, 1 << 20)
    builder.append(0, 1_700_000_000_000, b"k", b"v" * 40, [("trace", b"abc"), ("empty", None)])
    builder.append(1, 1_700_000_000_001, None, b"only value", [])
    builder.append(2, 1_700_000_000_002, b"only key", None, [("h", b"")])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def _batches() -> list[batch.Batch]:
    data = b"".join([
        synthetic_batch(0, [(b"k", b"v" * 10)] * 3, 1_700_000_000_000),
        synthetic_batch(3, [(None, b"v")], -1, producer_id=7, producer_epoch=2, base_sequence=0x7FFFFFFF),
        _with_headers(4),
        _with_headers(7, GZIP, base_sequence=5),
        control_batch(10, 1, 1_700_000_000_500, 7, 3),
    ])
    found, partial, error = split_batches(data)
    assert not partial and error is None and len(found) == 5
    return found


def _outcome(decode, *args) -> object:
    try:
        return decode(*args)
    except DecodeError as e:
        return ("DecodeError", e.reason, e.offset, e.detail)


def test_the_modules_run_compiled_where_the_core_is_built() -> None:
    from kafkatap.dissect import native

    if not native.built():
        pytest.skip("the compiled core is not built")
    for module in (record_batch, batch, batches):
        assert module.__file__.endswith(".so"), module.__file__


def test_the_source_and_the_build_decode_the_same_records() -> None:
    plain = source_module(RECORDS / "batch.py")
    for each in _batches():
        records = each.records()
        assert records == plain.Batch(*each).records()
        assert len(records) == each.record_count


def test_the_source_and_the_build_give_the_same_records_rows_and_fingerprints() -> None:
    plain = source_module(ROOT / "dissect" / "tables" / "batches.py")
    for payloads in (False, True):
        for each in _batches():
            problems: list[tuple] = []
            got = batches.record_rows(each, HEAD, "t", 0, payloads, lambda *p: problems.append(p))
            assert got == plain.record_rows(each, HEAD, "t", 0, payloads, lambda *p: problems.append(p))
            assert problems == []
    assert batches.hash64(b"abc") == plain.hash64(b"abc") and batches.hash64(None) is None


def test_the_source_and_the_build_fail_alike_on_cut_and_altered_records() -> None:
    """Every cut of the records' bytes, and random damage to them (the fuzz test's `mutate`), decoded by both: the same
    records or the same DecodeError (reason, offset, detail), never an exception of another kind."""
    plain = source_module(RECORDS / "record_batch.py")
    rng = random.Random(20261206)
    header = record_batch.HEADER_SIZE
    for each in _batches()[:3]:
        data = each.data[each.offset_in_data:each.offset_in_data + each.size]
        args = (each.record_count, each.base_offset, each.first_timestamp, None, each.base_sequence, header)
        variants = [data[:cut] for cut in range(header, len(data))]
        variants += [mutate(data, rng, header) for _ in range(300)]
        for variant in variants:
            for count in (args[0], args[0] + 1, -1):
                call = (variant, header, len(variant), count, *args[1:])
                assert _outcome(record_batch.decode_records, *call) == _outcome(plain.decode_records, *call)
