"""Reading the dissector's tables and writing the report, through Spark and Hadoop FS.

Paths are URIs (file://, hdfs://, s3a://, or plain local paths): nothing here but `read_local_table` touches the
driver's disk directly, so the same jobs run on a cluster. Every table is cast to its declared schema on the way in
and out. A small run's tables are collected to the driver and written by pyarrow (`write_table`), still through Hadoop
FS; a small input on this machine is read by pyarrow (`read_local_table`), so that a small run never sets up Spark's
Parquet reader or writer.
"""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from kafkatap.errors import CommandError


def spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema)


def conform(df: DataFrame, schema: pa.Schema) -> DataFrame:
    """Select exactly the declared columns, cast to the declared types; a missing or extra column is a bug, not data."""
    struct = spark_schema(schema)
    types = {f.name: f.dataType for f in df.schema}
    missing = [f.name for f in struct if f.name not in types]
    extra = [name for name in types if name not in struct.fieldNames()]
    if missing or extra:
        raise ValueError(f"columns do not match the declared schema: missing {missing}, extra {extra}")
    # A cast to a DataType is several calls into the JVM (a column of the declared type needs none)
    return df.select([F.col(f.name) if _as_declared(types[f.name], f.dataType)
                      else F.col(f.name).cast(f.dataType).alias(f.name) for f in struct])


def _as_declared(actual: DataType, declared: DataType) -> bool:
    """Whether a column of `actual` type is written as one of `declared` needs no cast: the same type, or one whose
    only difference is an array's elements or a map's values declared nullable, which Spark's optimizer drops
    (`SimplifyCasts`) from any plan it does not reduce to an empty relation. Leaving it out everywhere writes a table
    with the same types whether or not its plan was emptied (`transforms.common.of_apis`)."""
    if actual == declared:
        return True
    if isinstance(actual, ArrayType) and isinstance(declared, ArrayType):
        return actual.elementType == declared.elementType and not actual.containsNull and declared.containsNull
    if isinstance(actual, MapType) and isinstance(declared, MapType):
        return (actual.keyType == declared.keyType and actual.valueType == declared.valueType
                and not actual.valueContainsNull and declared.valueContainsNull)
    return False


def _hadoop_path(spark: SparkSession, uri: str):  # -> (FileSystem, Path) JVM objects
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def exists(spark: SparkSession, uri: str) -> bool:
    fs, path = _hadoop_path(spark, uri)
    return bool(fs.exists(path))


def size_bytes(spark: SparkSession, uri: str) -> int:
    """Bytes of every file under `uri` (0 when absent)."""
    fs, path = _hadoop_path(spark, uri)
    return int(fs.getContentSummary(path).getLength()) if fs.exists(path) else 0


def delete(spark: SparkSession, uri: str) -> None:
    """Remove a file (not a folder) if it is there."""
    fs, path = _hadoop_path(spark, uri)
    fs.delete(path, False)


def join_uri(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def read_table(spark: SparkSession, root: str, name: str, schema: pa.Schema) -> DataFrame:
    """The table `root/name` with the declared schema; an absent table is an empty frame (the dissector omits
    `records/` without `--records`, and a capture may have no share traffic)."""
    uri = join_uri(root, name)
    struct = spark_schema(schema)
    if not exists(spark, uri):
        return spark.createDataFrame([], struct)
    # Read with the declared schema instead of inferring one from the files' footers (a step per read): a column
    # the files lack reads as nulls, one they have besides is left out.
    return spark.read.schema(struct).parquet(uri)


COLLECTED_FILE = "part-00000.snappy.parquet"
"""The one file of a table `write_table` collected (Spark's own writes name theirs by task and job)."""


def data_files(folder: str) -> list[str]:
    """The data files of a table folder on this machine, as Spark takes them: every file under it whose name does not
    start with _ or . (`_SUCCESS`, Hadoop's `.crc`, a write in progress)."""
    return sorted(os.path.join(root, name) for root, _, names in os.walk(folder)
                  for name in names if not name.startswith(("_", ".")))


def written_rows(folder: str) -> int:
    """The rows of a table written on this machine, from its files' Parquet footers: no Spark job."""
    return sum(pq.ParquetFile(path).metadata.num_rows for path in data_files(folder))


def parquet_problem(path: str, exc: Exception) -> str:
    """What pyarrow's failure to read `path` means, in a few words."""
    return f"{path} is not a Parquet file" if "magic bytes" in str(exc) else str(exc).splitlines()[0]


def read_local_table(spark: SparkSession, folder: str, name: str, schema: pa.Schema) -> DataFrame:
    """`read_table` for a small table on this machine (a run over inputs kept as rows), read by pyarrow and handed to
    Spark as Arrow: a small run then sets up no Parquet scan in Spark at all (its tables are written by pyarrow too),
    which saved 0.5 s of a cold run of the bundled sample (docs/performance.md). As Spark reads it: with the declared
    columns, every one nullable, from its `data_files`; a damaged file is a `CommandError` naming it."""
    path = os.path.join(folder, name)
    struct = spark_schema(schema)
    nullable = StructType([StructField(field.name, field.dataType, True, field.metadata) for field in struct])
    if not os.path.isdir(path):
        return spark.createDataFrame([], nullable)
    tables = []
    for file in data_files(path):
        try:
            tables.append(pq.read_table(file, schema=schema))
        except (pa.ArrowInvalid, OSError) as exc:
            raise CommandError(f"cannot read the {name} table in {folder} ({parquet_problem(file, exc)}): dissect the "
                               "capture again") from exc
    rows = pa.concat_tables(tables) if tables else schema.empty_table()
    return spark.createDataFrame(rows, nullable)


def write_table(df: DataFrame, report: str, name: str, schema: pa.Schema, collect: bool = False) -> None:
    """Write the table `report/name` with the declared schema, replacing any earlier one. A small table (`collect`:
    a run over inputs kept as rows) is collected to the driver as Arrow and written as one file by pyarrow, through
    Hadoop FS like the summary: Spark's own Parquet write (its commit protocol, a writer set up in a task) took 66 ms
    a table against 17 ms in a warm session, and 0.7 s of a cold run of the bundled sample (docs/performance.md)."""
    uri = join_uri(report, name)
    conformed = conform(df, schema)
    if not collect:
        conformed.write.mode("overwrite").parquet(uri)
        return
    rows = conformed.toArrow()
    parquet = pa.BufferOutputStream()
    pq.write_table(rows, parquet, compression="snappy")
    spark = df.sparkSession
    fs, path = _hadoop_path(spark, uri)
    fs.delete(path, True)
    write_bytes(spark, join_uri(uri, COLLECTED_FILE), parquet.getvalue().to_pybytes())


def write_bytes(spark: SparkSession, uri: str, data: bytes) -> None:
    """Write a small file through Hadoop FS, so it lands wherever Spark writes (s3a://, hdfs://, file://)."""
    fs, path = _hadoop_path(spark, uri)
    stream = fs.create(path, True)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    write_bytes(spark, uri, text.encode())


def read_text(spark: SparkSession, uri: str) -> str:
    fs, path = _hadoop_path(spark, uri)
    jvm = spark.sparkContext._jvm
    stream = fs.open(path)
    try:
        return jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def write_json(spark: SparkSession, uri: str, obj: object) -> None:
    write_text(spark, uri, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "min": "minutes", "h": "hours", "d": "days"}


def window_interval(window: str) -> str:
    """`1s`, `500ms`, `5m`, `1h` -> Spark interval text (`1 seconds`)."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|min|m|h|d)\s*", window)
    if not match:
        raise ValueError(f"bad window {window!r}: use a number and a unit (ms, s, m, h, d), e.g. 1s")
    return f"{match.group(1)} {_UNITS[match.group(2)]}"


def client_host(addr: Column) -> Column:
    """`1.2.3.4:5` -> `1.2.3.4`, `[::1]:5` -> `::1`."""
    return F.regexp_extract(addr, r"^\[?(.*?)\]?:\d+$", 1)
