"""Storage helpers and the listing of captures for the Spark dissect."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkatap.errors import CommandError
from kafkatap.pipelines import schema
from kafkatap.pipelines.filesystems import list_captures
from kafkatap.pipelines.storage import COLLECTED_FILE, read_local_table, read_table, window_interval, write_table


def test_window_interval():
    assert [window_interval(w) for w in ("1s", "500ms", "5m", "1h", "2d")] == [
        "1 seconds", "500 milliseconds", "5 minutes", "1 hours", "2 days"]
    with pytest.raises(ValueError):
        window_interval("fast")


def test_list_captures_matches_the_last_component(tmp_path):
    for name in ("x.pcapng", "y.pcapng", "z.txt"):
        (tmp_path / name).write_bytes(b"")
    assert list_captures(str(tmp_path / "*.pcapng")) == [str(tmp_path / "x.pcapng"), str(tmp_path / "y.pcapng")]
    assert list_captures(f"file://{tmp_path}/x.*") == [str(tmp_path / "x.pcapng")]


def test_every_output_column_is_documented():
    for name, table in schema.TABLES.items():
        assert table.metadata[b"doc"], name
        for field in table:
            assert field.metadata and field.metadata[b"doc"], f"{name}.{field.name}"
    assert "duplicate_records" in schema.SUMMARY_KEYS and "fenced_epochs" in schema.SUMMARY_KEYS


@pytest.mark.spark
def test_a_collected_table_is_the_table_spark_writes(spark, tmp_path):
    """A small run's tables are collected and written by pyarrow (`collect`), a larger run's by Spark: the same
    types (non-null columns and array elements, maps, UTC timestamps) and rows either way, and a write replaces the
    table's earlier files whichever way wrote them."""
    declared = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("ids", pa.list_(pa.string())),
                          ("counts", pa.map_(pa.string(), pa.int64())), ("n", pa.int64()), ("note", pa.string())])
    df = spark.sql("SELECT timestamp'2026-11-29 10:00:00.123456' AS ts, array('a', 'b') AS ids, "
                   "map('k', 1L) AS counts, id AS n, CAST(NULL AS STRING) AS note FROM range(3)")
    written = {False: tmp_path / "spark", True: tmp_path / "pyarrow"}  # by collect
    tables = {}
    for collect, report in written.items():
        write_table(df, str(report), "t", declared, collect=collect)
        tables[collect] = pq.read_table(report / "t")
    assert tables[True].schema.remove_metadata() == tables[False].schema.remove_metadata()
    assert tables[True].to_pylist() == tables[False].to_pylist()
    assert tables[True].schema.field("ids").type.value_field.nullable is False  # Spark's type, not the declared one
    assert sorted(read_table(spark, str(written[True]), "t", declared).collect()) == sorted(df.collect())
    write_table(df.limit(1), str(written[False]), "t", declared, collect=True)  # over Spark's files
    files = [p.name for p in (written[False] / "t").iterdir() if not p.name.startswith(".")]  # Hadoop's .crc
    assert files == [COLLECTED_FILE]
    assert pq.read_table(written[False] / "t").num_rows == 1


@pytest.mark.spark
def test_a_small_local_table_reads_as_spark_reads_it(spark, tmp_path):
    """pyarrow's read of a small local input (`read_local_table`) gives Spark's read: the same schema (declared
    columns, all nullable) and rows; an absent table is empty, and a damaged file one line naming the table."""
    declared = pa.schema([pa.field("n", pa.int64(), nullable=False), ("note", pa.string())])
    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"n": [1, 2], "note": ["a", None], "extra": [0, 0]}), tmp_path / "t" / "part-0.parquet")
    (tmp_path / "t" / "_SUCCESS").write_text("")
    spark_read, ours = (read(spark, str(tmp_path), "t", declared) for read in (read_table, read_local_table))
    assert ours.schema == spark_read.schema and sorted(ours.collect()) == sorted(spark_read.collect())
    assert read_local_table(spark, str(tmp_path), "absent", declared).schema == ours.schema
    (tmp_path / "t" / "part-0.parquet").write_bytes(b"PAR1 but not really")
    with pytest.raises(CommandError, match=r"^cannot read the t table in .*: dissect the capture again$"):
        read_local_table(spark, str(tmp_path), "t", declared)
