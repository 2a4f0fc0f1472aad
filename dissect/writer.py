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

ROW_GROUP_ROWS = 50_000
ROW_GROUP_BYTES = 64 << 20
"""Flush early when the rows' large cells (JSON, payloads) pass this many bytes, to bound memory."""

PART = "part-00000.parquet"


class TableWriter:
    """Rows of one table to OUT/<name>/part-00000.parquet."""

    __slots__ = ("name", "schema", "path", "rows", "pending_bytes", "writer", "count")

    def __init__(self, out_dir: Path, name: str, schema: pa.Schema) -> None:
        self.name = name
        self.schema = schema
        directory = out_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("part-*.parquet"):
            old.unlink()
        self.path = directory / PART
        self.rows: list[tuple] = []
        self.pending_bytes = 0
        self.count = 0
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
        arrays = [pa.array(col, type=field.type) for col, field in zip(columns, self.schema)]
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
        self.count += len(self.rows)
        self.rows = []
        self.pending_bytes = 0

    def close(self) -> None:
        self.flush()
        self.writer.close()


class Output:
    """The writers of one run, by table name."""

    def __init__(self, out_dir: str | os.PathLike, tables: dict[str, pa.Schema]) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tables = {name: TableWriter(self.dir, name, schema) for name, schema in tables.items()}

    def __getitem__(self, name: str) -> TableWriter:
        return self.tables[name]

    def close(self) -> dict[str, int]:
        """Close every file; returns the row count per table."""
        for table in self.tables.values():
            table.close()
        return {name: table.count for name, table in self.tables.items()}
