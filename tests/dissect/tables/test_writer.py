"""The Parquet writer: rows in, the same values out, and a value that does not fit its column never stops a run."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkatap.dissect import native
from kafkatap.dissect.tables import writer
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


@pytest.mark.parametrize("extend", [True, False])
@pytest.mark.parametrize("first", [0, 1])
def test_a_value_past_its_type_becomes_null_and_is_counted(tmp_path: Path, extend: bool, first: int) -> None:
    """In either place: the first row, or after rows that fit (the compiled builder took those)."""
    rows = [("z", 9, 4, ["t"], None, 0)] * first + [("a", 1 << 63, 5, None, True, 1), ("b", 2, 6, None, True, 40000),
                                                     ("c", 3, 7, None, False, 2)]
    got, bad = write(tmp_path, rows, extend=extend)
    assert [r["n"] for r in got] == [9] * first + [None, 2, 3]
    assert [r["small"] for r in got] == [0] * first + [1, None, 2]
    assert [r["name"] for r in got] == ["z"] * first + ["a", "b", "c"]
    assert bad == {"t.n": 1, "t.small": 1}


def _value_pools() -> tuple:
    """The compiled module, a row type of every column kind the tables hold, and per column the values to draw
    from: nulls, edge values, non-ASCII text (skips the test in a pure-Python run)."""
    compiled = native.extension("kafkatap.dissect.tables._columns")
    if compiled is None:
        pytest.skip("the compiled core is not built (pure-Python run)")
    schema = pa.schema(list(SCHEMA) + [pa.field("b", pa.binary()), pa.field("i8", pa.int8()),
                                       pa.field("i32", pa.int32())])
    row_type = pa.struct(list(schema))
    return compiled, row_type, [
        ["a", "é", "\u4e2d\U0001f600", "", None, "x" * 300], [0, -(1 << 63), (1 << 63) - 1, None, 7],
        [0, 1_700_000_000_000_000, None], [("x", "yé"), [], None, ["", "z"]], [True, False, None],
        [-32768, 32767, None, 5], [b"", b"\x00\xff", None], [-128, 127, None], [-(1 << 31), (1 << 31) - 1, None]]


def test_the_compiled_column_builder_matches_pyarrow() -> None:
    """_columns.pyx writes Arrow's buffers itself; every value kind the tables hold, nulls, edge values, and values
    it hands back to pyarrow (out of range, wrong types, lone surrogates) give the arrays pa.array gives (or its
    error)."""
    compiled, row_type, pools = _value_pools()
    rnd = random.Random(5)
    odd = [1 << 63, 40000, "\ud800", 1.5, b"bytes-in-a-string", ("x", None), 3, -129, 1 << 31]
    for case in range(60):
        rows = [tuple(rnd.choice(pool) for pool in pools) for _ in range(rnd.randrange(1, 70))]
        if case % 3 == 0:
            r, c = rnd.randrange(len(rows)), rnd.randrange(len(pools))
            rows[r] = rows[r][:c] + (odd[c],) + rows[r][c + 1:]
        results = []
        for build in (compiled.columns, writer.columns):
            try:
                results.append(("ok", build(rows, row_type)))
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError) as e:
                results.append(("error", type(e)))
        assert results[0][0] == results[1][0], (rows, results)
        if results[0][0] == "ok":
            for ours, theirs in zip(results[0][1], results[1][1]):
                assert ours.type == theirs.type and ours.equals(theirs), (rows, ours, theirs)
        else:
            assert results[0] == results[1]


def test_the_row_builder_matches_pyarrow_and_refuses_whole_rows() -> None:
    """_columns.Builder writes each row into its columns as it is added; a row with a value it does not take is
    refused with nothing of it written, wherever in the row that value is, so the rows it took convert as pa.array
    converts them."""
    compiled, row_type, pools = _value_pools()
    rnd = random.Random(7)
    odd = ["\ud800", 1 << 63, 1.5, ("x", "\ud800"), 1, -32769, "str", -129, 1 << 31]  # one per column
    builder = compiled.builder(row_type)
    for case in range(80):
        rows = [tuple(rnd.choice(pool) for pool in pools) for _ in range(rnd.randrange(1, 70))]
        taken = []
        for row in rows:
            if rnd.random() < 0.2:
                c = rnd.randrange(len(pools))
                bad = row[:c] + (odd[c],) + row[c + 1:]
                assert builder.add(bad) is False
            assert builder.add(row) is True
            taken.append(row)
        assert builder.extend(rows + [rows[0][:-1] + (1 << 40,)] + rows) == len(rows)
        taken += rows
        assert builder.rows == len(taken)
        for ours, theirs in zip(builder.arrays(), writer.columns(taken, row_type)):
            ours.validate(full=True)
            assert ours.type == theirs.type and ours.equals(theirs), (taken, ours, theirs)
    assert compiled.builder(pa.struct([pa.field("f", pa.float64())])) is None


def test_only_repeating_strings_get_a_dictionary(tmp_path: Path) -> None:
    """Every table's string columns but a message's JSON are written with a dictionary; integers, payload bytes and
    the JSON plain (their dictionaries overflowed and cost writing time and file size), as `dictionary_columns` says,
    in the dissector's files and in those a topic rewrite writes again."""
    from kafkatap.dissect.run import dissect_captures
    from kafkatap.dissect.tables.schema import MESSAGE_TEXT, TABLES
    from kafkatap.dissect.tables.topic_rewrite import _rewrite_part
    from tests.support.paths import SAMPLES

    assert MESSAGE_TEXT <= {name for schema in TABLES.values() for name in schema.names}
    dissect_captures([str(SAMPLES / "day_in_the_life.pcapng")], str(tmp_path), records=True, payloads=True)
    checked = 0
    for name, schema in TABLES.items():
        wanted = set(writer.dictionary_columns(schema))
        assert wanted and not wanted & MESSAGE_TEXT
        for part in (tmp_path / name).glob("*.parquet"):
            if name == "frames":
                _rewrite_part(part, "topics", {})
            meta = pq.ParquetFile(part).metadata
            for i in range(meta.num_row_groups):
                for c in range(meta.num_columns):
                    chunk = meta.row_group(i).column(c)
                    column = chunk.path_in_schema
                    assert ("RLE_DICTIONARY" in chunk.encodings) is (column in wanted), (name, column, chunk.encodings)
                    checked += 1
    assert checked > 100 and "topics.list.element" in writer.dictionary_columns(TABLES["frames"])
