"""Hand-made rows of the dissector's tables for the pipelines' unit tests: every column present, unset ones null.

Tests state only the columns that matter to them; the schema comes from `kafkatap.dissect.tables.schema`, so a test
frame is always a frame the dissector could have written.
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from kafkatap.dissect.tables.schema import BATCHES, FRAMES, RECORDS, SHARE
from kafkatap.pipelines.transforms.common import ISO
from kafkatap.pipelines.storage import spark_schema

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def t(seconds: float) -> dt.datetime:
    """A time `seconds` after T0."""
    return T0 + dt.timedelta(seconds=seconds)


def _row(schema: pa.Schema, defaults: dict, values: dict) -> dict:
    unknown = set(values) - set(schema.names)
    if unknown:
        raise KeyError(f"not columns of the table: {sorted(unknown)}")
    return {name: values.get(name, defaults.get(name)) for name in schema.names}


def frame(api_key: int, api_name: str, ts: float, *, request: dict | None = None, response: dict | None = None,
          latency_s: float = 0.001, **values) -> dict:
    """A paired request/response at `ts` seconds; `request`/`response` dicts become the JSON columns."""
    defaults = {
        "conn_id": "c1", "client_addr": "10.0.0.1:50000", "broker_addr": "10.0.0.9:9092", "ts_request": t(ts),
        "ts_response": t(ts + latency_s), "latency_us": int(latency_s * 1e6), "api_key": api_key,
        "api_name": api_name, "api_version": 0, "correlation_id": int(ts * 1000) % 2**31, "client_id": "app",
        "request_bytes": 100, "response_bytes": 100, "error_code": 0, "error_name": "NONE", "status": "ok",
        "request_json": json.dumps(request or {}), "response_json": json.dumps(response or {}),
    }
    return _row(FRAMES, defaults, values)


def batch(direction: str, ts: float, topic: str, partition: int, base_offset: int, last_offset: int,
          **values) -> dict:
    defaults = {
        "conn_id": "c1", "client_addr": "10.0.0.1:50000", "broker_addr": "10.0.0.9:9092", "correlation_id": 1,
        "api_version": 0, "direction": direction, "ts": t(ts), "client_id": "app", "topic": topic,
        "partition": partition, "magic": 2, "base_offset": base_offset, "last_offset": last_offset,
        "record_count": last_offset - base_offset + 1, "producer_id": -1, "producer_epoch": -1,
        "base_sequence": -1, "is_transactional": False, "is_control": False, "compression": "none",
        "batch_bytes": 100, "crc_ok": True,
    }
    return _row(BATCHES, defaults, values)


def record(direction: str, ts: float, topic: str, partition: int, offset: int, **values) -> dict:
    defaults = {"conn_id": "c1", "correlation_id": 1, "direction": direction, "ts": t(ts), "client_id": "app",
                "topic": topic, "partition": partition, "base_offset": offset, "offset": offset, "sequence": -1,
                "producer_id": -1, "key_size": -1, "value_size": 1}
    return _row(RECORDS, defaults, values)


def share(kind: str, ts: float, topic: str, partition: int, first_offset: int, last_offset: int, **values) -> dict:
    defaults = {"conn_id": "c1", "client_addr": "10.0.0.1:50000", "broker_addr": "10.0.0.9:9092", "kind": kind,
                "api_key": 78, "correlation_id": 1, "ts": t(ts), "client_id": "app", "group_id": "sg",
                "member_id": "m1", "topic": topic, "partition": partition, "first_offset": first_offset,
                "last_offset": last_offset, "error_code": 0}
    return _row(SHARE, defaults, values)


def table(spark: SparkSession, schema: pa.Schema, rows: list[dict]) -> DataFrame:
    """`rows` as a table with the declared columns, handed to Spark as Arrow, as `kafkatap analyze` hands it a small
    input (`storage.read_local_table`): the rows then sit in the plan (a LocalRelation), and an empty table is one
    Spark knows to be empty, as the command's are. Handed as Python rows, they were an RDD that every query read again
    through PySpark's pickled rows: the pipelines' tests that build their tables here took 203 s against 152 s."""
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema), spark_schema(schema))


def rows(df: DataFrame) -> list[dict]:
    """A frame's rows as dicts in a stable order, timestamps rendered as UTC ISO strings inside Spark (collected
    timestamps would otherwise come back naive, in the Python process's local time)."""
    cols = [F.date_format(F.col(f.name), ISO).alias(f.name)
            if isinstance(f.dataType, TimestampType) else F.col(f.name) for f in df.schema]
    out = [r.asDict(recursive=True) for r in df.select(cols).collect()]
    return sorted(out, key=repr)


def assert_frames_equal(actual: DataFrame, expected: DataFrame) -> None:
    """Whole-frame comparison: same columns, same types, same rows (in any order)."""
    assert actual.schema.simpleString() == expected.schema.simpleString(), (
        f"{actual.schema.simpleString()}\n!=\n{expected.schema.simpleString()}")
    got, want = rows(actual), rows(expected)
    assert got == want, f"actual rows:\n{got}\nexpected rows:\n{want}"
