"""Is OUT a dissector output this version can analyze? Asked before any job runs: Spark reads an absent table as an
empty one, so a wrong folder would otherwise give an empty report and exit 0.

`check_local` answers for local paths before a JVM starts; `check_inputs` asks Hadoop FS, so it holds for URIs too.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession

from kafkatap.dissect.tables.schema import FRAMES
from kafkatap.errors import CommandError
from kafkatap.pipelines.failures import exception_text, java_reason
from kafkatap.pipelines.intermediates import interpreted
from kafkatap.pipelines.storage import exists, join_uri

DISSECT_FIRST = "run `kafkatap dissect CAPTURE -o OUT` first, then analyze OUT"
SHOWN_COLUMNS = 5


def local_path(uri: str) -> str | None:
    """The path on this machine a plain path or file:// URI names; None for a remote URI (hdfs://, s3a://)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return parsed.path
    return uri if not parsed.scheme else None


def short_run(out: str) -> bool:
    """OUT is on this machine and small enough for its expressions to be interpreted (`intermediates.run_conf`):
    known before a JVM starts, so the JVM can be started for a short run (`spark.QUICK_JIT`)."""
    path = local_path(out)
    if path is None or not os.path.isdir(path):
        return False
    size = sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names)
    return interpreted(size)


def no_such_folder(out: str) -> CommandError:
    return CommandError(f"{out} does not exist: give the folder `kafkatap dissect CAPTURE -o OUT` wrote")


def check_local(out: str) -> None:
    """OUT exists and is a folder, when it is on this machine."""
    path = local_path(out)
    if path is None:
        return
    if not os.path.exists(path):
        raise no_such_folder(out)
    if not os.path.isdir(path):
        raise CommandError(f"{out} is not a folder: give the folder `kafkatap dissect CAPTURE -o OUT` wrote")


def check_inputs(spark: SparkSession, out: str) -> None:
    """OUT holds a frames table with every column the dissector declares."""
    frames = join_uri(out, "frames")
    if not exists(spark, out):
        raise no_such_folder(out)
    if not exists(spark, frames):
        raise CommandError(f"{out} is not a kafkatap dissect output: it has no frames/ table; {DISSECT_FIRST}")
    try:
        columns = set(spark.read.parquet(frames).columns)
    except (Py4JJavaError, CapturedException) as exc:  # no Parquet file in it, or a corrupt one
        raise CommandError(f"cannot read the frames table {frames} ({java_reason(exception_text(exc))}): dissect "
                           "the capture again") from exc
    absent = [name for name in FRAMES.names if name not in columns]
    if absent:
        shown = ", ".join(absent[:SHOWN_COLUMNS]) + (f" and {len(absent) - SHOWN_COLUMNS} more"
                                                     if len(absent) > SHOWN_COLUMNS else "")
        raise CommandError(f"{frames} lacks {len(absent)} of the {len(FRAMES.names)} columns of the dissector's "
                           f"frames table ({shown}): it was written by another version; dissect the capture again "
                           "with this one")
