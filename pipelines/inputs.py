"""Is OUT a dissector output this version can analyze? Asked before any job runs: Spark reads an absent table as an
empty one, so a wrong folder would otherwise give an empty report and exit 0.

`check_local` answers for local paths before a JVM starts (pyarrow reads the frames table's schema), and again in a run
(`report.run`); `check_inputs` asks Hadoop FS and Spark, for the URIs of other file systems. Both say the same things.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession

from kafkatap.dissect.tables.schema import BATCHES, FRAMES
from kafkatap.errors import CommandError
from kafkatap.pipelines.failures import exception_text, java_reason
from kafkatap.pipelines.intermediates import quick_jit
from kafkatap.pipelines.storage import data_files, exists, join_uri, parquet_problem

DISSECT_FIRST = "run `kafkatap dissect CAPTURE -o OUT` first, then analyze OUT"
SHOWN_COLUMNS = 5


def local_path(uri: str) -> str | None:
    """The path on this machine a plain path or file:// URI names; None for a remote URI (hdfs://, s3a://)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return parsed.path
    return uri if not parsed.scheme else None


def short_run(out: str) -> bool:
    """OUT is on this machine and small enough for the JVM's quick compiler only (`intermediates.quick_jit`): known
    before a JVM starts, so the JVM can be started for a short run (`spark.QUICK_JIT`)."""
    path = local_path(out)
    if path is None or not os.path.isdir(path):
        return False
    size = sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names)
    return quick_jit(size)


def no_such_folder(out: str) -> CommandError:
    return CommandError(f"{out} does not exist: give the folder `kafkatap dissect CAPTURE -o OUT` wrote")


def unreadable(table: str, reason: str) -> CommandError:
    """The table at URI `table` (OUT's frames/ or batches/) cannot be read."""
    name = table.rstrip("/").rsplit("/", 1)[-1]
    return CommandError(f"cannot read the {name} table {table} ({reason}): dissect the capture again")


def _check(out: str, has: Callable[[str], bool], columns: Callable[[str], set[str]]) -> None:
    """OUT holds a frames table and a batches table with every column the dissector declares (an absent column would
    be read as nulls: batches without their fingerprints would silently lose the possible re-sends); `has` and
    `columns` read where OUT is."""
    frames = join_uri(out, "frames")
    if not has(out):
        raise no_such_folder(out)
    if not has(frames):
        raise CommandError(f"{out} is not a kafkatap dissect output: it has no frames/ table; {DISSECT_FIRST}")
    for name, schema in (("frames", FRAMES), ("batches", BATCHES)):
        table = join_uri(out, name)
        if name != "frames" and not has(table):
            continue
        present = columns(table)
        absent = [column for column in schema.names if column not in present]
        if absent:
            shown = ", ".join(absent[:SHOWN_COLUMNS]) + (f" and {len(absent) - SHOWN_COLUMNS} more"
                                                         if len(absent) > SHOWN_COLUMNS else "")
            raise CommandError(f"{table} lacks {len(absent)} of the {len(schema.names)} columns of the dissector's "
                               f"{name} table ({shown}): it was written by another version; dissect the capture "
                               "again with this one")


def check_local(out: str) -> None:
    """`check_inputs` for a folder on this machine, read with pyarrow: a wrong folder costs no JVM start."""
    path = local_path(out)
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{out} is not a folder: give the folder `kafkatap dissect CAPTURE -o OUT` wrote")

    def columns(table: str) -> set[str]:
        # the first data file's schema, as Spark takes it
        files = data_files(local_path(table) or table)
        if not files:
            raise unreadable(table, "it holds no Parquet file")
        try:
            return set(pq.read_schema(files[0]).names)
        except (pa.ArrowInvalid, OSError) as exc:
            raise unreadable(table, parquet_problem(files[0], exc)) from exc

    _check(out, lambda uri: os.path.exists(local_path(uri) or uri), columns)


def check_inputs(spark: SparkSession, out: str) -> None:
    """`_check` asked through Hadoop FS (any URI)."""
    def columns(table: str) -> set[str]:
        try:
            return set(spark.read.parquet(table).columns)
        except (Py4JJavaError, CapturedException) as exc:  # no Parquet file in it, or a corrupt one
            raise unreadable(table, java_reason(exception_text(exc))) from exc

    _check(out, lambda uri: exists(spark, uri), columns)
