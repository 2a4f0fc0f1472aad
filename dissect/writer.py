"""Parquet output: one directory per table, rows buffered as tuples and written in row groups as the run goes.

Rows are plain tuples in schema column order (cheapest to build in the hot path); a flush transposes them with
`zip(*rows)` and hands whole columns to pyarrow. Every table gets its file even when empty, so Spark and duckdb can
read the schema of a table that happened to have no rows.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 20_000
ROW_GROUP_BYTES = 32 << 20
"""Flush early when the rows' large cells (JSON, payloads) pass this many bytes, to bound memory."""



def part_name(part: int) -> str:
    """Each worker of a run writes its own part of every table."""
    return f"part-{part:05d}.parquet"


def clear(out_dir: Path, tables: dict[str, pa.Schema]) -> None:
    """Remove the parts a previous run left in OUT, so a rerun never mixes old rows in."""
    for name in tables:
        for old in (out_dir / name).glob("part-*.parquet"):
            old.unlink()


class TableWriter:
    """Rows of one table to OUT/<name>/part-<part>.parquet."""

    __slots__ = ("name", "schema", "path", "rows", "pending_bytes", "writer", "count", "out_of_range")

    def __init__(self, out_dir: Path, name: str, schema: pa.Schema, part: int = 0) -> None:
        self.name = name
        self.schema = schema
        directory = out_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / part_name(part)
        self.rows: list[tuple] = []
        self.pending_bytes = 0
        self.count = 0
        self.out_of_range: dict[str, int] = {}  # column -> values that did not fit its type (written as null)
        self.writer = pq.ParquetWriter(self.path, schema, compression="zstd")

    def add(self, row: tuple, nbytes: int = 0) -> None:
        """Append one row; nbytes is the size of its large cells, if any, for the memory bound."""
        self.rows.append(row)
        if nbytes:
            self.pending_bytes += nbytes
            if self.pending_bytes >= ROW_GROUP_BYTES:
                self.flush()
                return
        if len(self.rows) >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        columns = list(zip(*self.rows))
        arrays = [self._array(col, field) for col, field in zip(columns, self.schema)]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self.count += len(self.rows)
        self.rows = []
        self.pending_bytes = 0

    def _array(self, values: tuple, field: pa.Field) -> pa.Array:
        """The column as an Arrow array. A value that does not fit the type (damaged input can carry a timestamp
        or an offset past int64) becomes null and is counted, so one bad value never stops a run."""
        try:
            return pa.array(values, type=field.type)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            fixed = []
            for v in values:
                try:
                    pa.array([v], type=field.type)
                    fixed.append(v)
                except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                    fixed.append(None)
                    self.out_of_range[field.name] = self.out_of_range.get(field.name, 0) + 1
            return pa.array(fixed, type=field.type)

    def close(self) -> None:
        self.flush()
        self.writer.close()


class Output:
    """The writers of one run, by table name."""

    def __init__(self, out_dir: str | os.PathLike, tables: dict[str, pa.Schema], part: int = 0) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tables = {name: TableWriter(self.dir, name, schema, part) for name, schema in tables.items()}

    def __getitem__(self, name: str) -> TableWriter:
        return self.tables[name]

    def close(self) -> dict[str, int]:
        """Close every file; returns the row count per table."""
        for table in self.tables.values():
            table.close()
        return {name: table.count for name, table in self.tables.items()}

    def out_of_range(self) -> dict[str, int]:
        """`table.column` -> values written as null because they did not fit the column's type."""
        return {f"{name}.{col}": n for name, t in self.tables.items() for col, n in t.out_of_range.items()}
