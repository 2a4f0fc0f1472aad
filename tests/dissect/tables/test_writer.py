"""The Parquet writer: rows in, the same values out, and a value that does not fit its column never stops a run."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatap.dissect.tables.writer import Output

SCHEMA = pa.schema([
    pa.field("name", pa.string()), pa.field("n", pa.int64()), pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("tags", pa.list_(pa.string())), pa.field("ok", pa.bool_()), pa.field("small", pa.int16()),
])


def write(tmp_path: Path, rows: list[tuple], extend: bool = False) -> tuple[list[dict], dict]:
    out = Output(tmp_path, {"t": SCHEMA})
    if extend:
        out["t"].extend(rows)
    else:
        for row in rows:
            out["t"].add(row)
    out.close()
    return pq.read_table(tmp_path / "t").to_pylist(), out.out_of_range()


def test_rows_come_back_as_written(tmp_path: Path) -> None:
    rows = [("a", 1, 1_700_000_000_000_000, ["x", "y"], True, -3), (None, None, None, None, None, None),
            ("é", -(1 << 63), 0, [], False, 32767)]
    got, bad = write(tmp_path, rows)
    assert bad == {}
    assert got[0] == {"name": "a", "n": 1, "ts": datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc),
                      "tags": ["x", "y"], "ok": True, "small": -3}
    assert got[1] == dict.fromkeys(SCHEMA.names)
    assert [r["n"] for r in got] == [1, None, -(1 << 63)] and got[2]["tags"] == [] and got[2]["name"] == "é"


def test_a_value_past_its_type_becomes_null_and_is_counted(tmp_path: Path) -> None:
    rows = [("a", 1 << 63, 5, None, True, 1), ("b", 2, 6, None, True, 40000), ("c", 3, 7, None, False, 2)]
    got, bad = write(tmp_path, rows, extend=True)
    assert [r["n"] for r in got] == [None, 2, 3]
    assert [r["small"] for r in got] == [1, None, 2]
    assert [r["name"] for r in got] == ["a", "b", "c"]
    assert bad == {"t.n": 1, "t.small": 1}
