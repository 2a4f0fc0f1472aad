"""The batches/ row has one builder (dissect/tables/batch_row.py), which both twins run: its plain-Python source (what
an install without the compiled core imports) and its compiled build give the same rows, in schema.py's columns."""

from __future__ import annotations

from kafkatap.dissect.records import split_batches
from kafkatap.dissect.records.batch import CONTROL
from kafkatap.dissect.tables import batch_row, schema
from kafkatap.samples.synthetic import CONTROL_ABORT, CONTROL_COMMIT, control_batch, record_batch
from tests.support.paths import ROOT
from tests.support.sources import source_module

SOURCE = ROOT / "dissect" / "tables" / "batch_row.py"
HEAD = ("conn_id", "client_addr", "broker_addr", "correlation_id", "api_version", "direction", "ts", "client_id",
        "group_id", "member_id", "topic", "topic_id", "partition")
TAIL = ("fetch_offset", "high_watermark", "assigned_offset", "partition_error_code")


def _batches() -> list:
    """Every kind of batch the row tells apart: plain, idempotent, transactional, both control types, and the
    timestamps the row turns into null (-1, and one past int64 in microseconds)."""
    data = b"".join([
        record_batch(0, [(b"k", b"v" * 10)] * 3, 1_700_000_000_000),
        record_batch(3, [(None, b"v")], -1, producer_id=7, producer_epoch=2, base_sequence=0),
        record_batch(4, [(b"k", None)] * 2, batch_row.MAX_MS + 1, producer_id=7, producer_epoch=3, base_sequence=0,
                     transactional=True),
        control_batch(6, CONTROL_COMMIT, 1_700_000_000_500, 7, 3),
        control_batch(7, CONTROL_ABORT, batch_row.MAX_MS, 7, 4),
    ])
    batches, partial, error = split_batches(data)
    assert not partial and error is None and len(batches) == 5
    return batches


def test_the_source_and_the_installed_builder_give_the_same_rows_in_the_schemas_columns() -> None:
    """Called with the shared columns named as their values, every row is laid out as schema.py's BATCHES, and the
    plain source gives the same rows as the module the dissector runs (compiled, with the core built)."""
    names = schema.TABLES["batches"].names
    assert list(HEAD + TAIL) == names[:len(HEAD)] + names[len(names) - len(TAIL):]
    batches, problems = _batches(), []
    rows = batch_row.batch_rows(HEAD, batches, TAIL, lambda *p: problems.append(p))
    assert rows == source_module(SOURCE).batch_rows(HEAD, batches, TAIL, lambda *p: problems.append(p))
    assert problems == []
    for batch, row in zip(batches, rows, strict=True):
        column = dict(zip(names, row, strict=True))
        assert {name: column[name] for name in HEAD + TAIL} == dict(zip(HEAD + TAIL, HEAD + TAIL))
        for name in ("magic", "base_offset", "last_offset", "record_count", "producer_id", "producer_epoch",
                     "base_sequence", "crc_ok"):
            assert column[name] == getattr(batch, name), name
        assert column["batch_bytes"] == batch.size
        assert column["is_transactional"] == batch.is_transactional
        assert column["is_control"] == batch.is_control
        assert column["control_type"] == batch.control_type()
        assert column["compression"] == batch.compression
    assert [(r[names.index("first_timestamp")], r[names.index("max_timestamp")]) for r in rows] == [
        (1_700_000_000_000_000, 1_700_000_000_002_000), (None, None), (None, None), (1_700_000_000_500_000,) * 2,
        (batch_row.MAX_MS * 1000,) * 2]


def test_each_batch_gets_its_fingerprint_when_its_records_were_read() -> None:
    """With --records each batch's fingerprint (batches.record_rows) goes in its row, in both builds; without, null."""
    batches, index = _batches(), schema.TABLES["batches"].names.index("fingerprint")
    prints = [11, None, -3, 4, 5]
    for builder in (batch_row.batch_rows, source_module(SOURCE).batch_rows):
        assert [row[index] for row in builder(HEAD, batches, TAIL, None, prints)] == prints
        assert [row[index] for row in builder(HEAD, batches, TAIL, None)] == [None] * 5


def test_an_unreadable_control_batch_is_reported_and_has_no_type() -> None:
    batch = _batches()[3]
    broken = batch._replace(record_count=0)  # no control record where one must be
    problems: list[tuple] = []
    for builder in (batch_row.batch_rows, source_module(SOURCE).batch_rows):
        [row] = builder(HEAD, [broken], TAIL, lambda *p: problems.append(p))
        assert row[schema.TABLES["batches"].names.index("control_type")] is None
    assert [kind for kind, _, _ in problems] == ["malformed_batch"] * 2
    assert broken.attributes & CONTROL


def test_no_other_module_lays_out_the_row() -> None:
    """The row's flag and compression columns are built only here: no other module of the tables reads a batch's
    attributes for them."""
    for path in (ROOT / "dissect" / "tables").glob("*.py*"):
        if not path.name.startswith("batch_row."):
            text = path.read_text()
            assert "TRANSACTIONAL" not in text and "COMPRESSION" not in text, path
