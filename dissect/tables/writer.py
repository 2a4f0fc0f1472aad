"""Parquet output: one directory per table, rows buffered as tuples and written in row groups as the run goes.

Rows are plain tuples in schema column order (cheapest to build in the hot path); a flush turns them into one Arrow
array per column with `columns`: pyarrow's converter walking them as one struct array, or its compiled twin
(_columns.pyx) writing the columns' buffers in one C loop each. With the compiled core a row is written into its
columns as it is added (_columns.Builder) and its tuple freed, while it is still in the CPU's cache; a row with a
value the builder does not take, and the rest of its row group, are kept as tuples and converted as above. Parquet
encodes and compresses a row group on the run's writer thread (pyarrow lets go of the GIL there), so that work overlaps
the dissection on a second core; each table has at most one row group in flight, and a write's error is raised by the
table's next write or its close. Every table gets its file even when empty, so Spark and duckdb can read the schema of
a table that happened to have no rows.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatap.dissect import native
from kafkatap.dissect.tables.schema import MESSAGE_TEXT

ROW_GROUP_ROWS = 20_000
ROW_GROUP_BYTES = 32 << 20
"""Flush early when the rows' large cells (JSON, payloads) pass this many bytes, to bound memory."""

_compiled = native.extension("kafkatap.dissect.tables._columns")


def columns(rows: list[tuple], row_type: pa.StructType) -> list[pa.Array]:
    """The columns of rows (tuples in row_type's field order) as Arrow arrays; raises what pa.array raises for a
    value that does not fit its column."""
    return pa.array(rows, type=row_type).flatten()


def add(writer: TableWriter, row: tuple, nbytes: int = 0) -> None:
    """TableWriter.add: the row into the builder, or kept as a tuple once one was refused; a row group is written
    when it holds ROW_GROUP_ROWS rows or its large cells pass ROW_GROUP_BYTES."""
    builder, rows = writer.builder, writer.rows
    if rows or builder is None or not builder.add(row):
        rows.append(row)
    if nbytes:
        writer.pending_bytes += nbytes
        if writer.pending_bytes >= ROW_GROUP_BYTES:
            writer.flush()
            return
    if len(rows) + (builder.rows if builder is not None else 0) >= ROW_GROUP_ROWS:
        writer.flush()


def extend(writer: TableWriter, rows: list[tuple]) -> None:
    """TableWriter.extend: add for rows without large cells."""
    builder = writer.builder
    if builder is None or writer.rows:
        writer.rows += rows
    else:
        taken = builder.extend(rows)
        if taken < len(rows):
            writer.rows += rows[taken:]
    if len(writer.rows) + (builder.rows if builder is not None else 0) >= ROW_GROUP_ROWS:
        writer.flush()


def part_name(part: int) -> str:
    """Each worker of a run writes its own part of every table."""
    return f"part-{part:05d}.parquet"


_FIELDS = ("builder", "rows", "pending_bytes")
_Base: type = _compiled.WriterFields if native.compiled and _compiled is not None else object


class TableWriter(_Base):  # type: ignore[valid-type, misc]
    """Rows of one table to OUT/<name>/part-<part>.parquet."""

    # With the compiled core, the fields every row's add reads are C struct members of the compiled base; without it
    # they are slots like the rest.
    __slots__ = ("name", "schema", "row_type", "path", "writer", "count", "published", "out_of_range", "columns",
                 "pool", "pending", "add", "extend") + (_FIELDS if _Base is object else ())

    def __init__(self, out_dir: Path, name: str, schema: pa.Schema, part: int = 0,
                 pool: ThreadPoolExecutor | None = None) -> None:
        self.name = name
        self.schema = schema
        self.row_type = pa.struct(list(schema))
        self.columns = native.pick(columns, _compiled)
        self.builder = _compiled.builder(self.row_type) if native.compiled and _compiled is not None else None
        self.add = partial(native.pick(add, _compiled), self)
        """Append one row; nbytes is the size of its large cells, if any, for the memory bound."""
        self.extend = partial(native.pick(extend, _compiled), self)
        """Append rows without large cells (one call for a partition's batches instead of one per batch)."""
        directory = out_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / part_name(part)
        self.rows: list[tuple] = []
        self.pending_bytes = 0
        self.count = 0
        self.published = 0  # rows in the files already closed
        self.out_of_range: dict[str, int] = {}  # column -> values that did not fit its type (written as null)
        self.pool = pool  # the thread the row groups are written on (None: this one)
        self.pending: Future | None = None  # the row group being written there
        self.writer = parquet_writer(_writing(self.path), schema)

    def flush(self) -> None:
        """Write what was added as row groups: the builder's rows, then the rows kept as tuples (which came after)."""
        if self.builder is not None and self.builder.rows:
            n = self.builder.rows
            self._write(self.builder.arrays(), n)
        if self.rows:
            try:
                arrays = self.columns(self.rows, self.row_type)
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                arrays = [self._array(col, field) for col, field in zip(zip(*self.rows), self.schema)]
            self._write(arrays, len(self.rows))
            self.rows = []
        self.pending_bytes = 0

    def _write(self, arrays: list[pa.Array], n: int) -> None:
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        self.wait()
        if self.pool is None:
            self.writer.write_table(table)
        else:
            self.pending = self.pool.submit(self.writer.write_table, table)
        self.count += n

    def wait(self) -> None:
        """Until the row group in flight is written (raising what writing it raised)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.result()

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
        """Finish the file and give it its name: until then it is hidden (pyarrow and Spark skip names starting
        with a dot, `*.parquet` globs do not match it), so readers of the directory never meet a file without its
        footer."""
        self.flush()
        self.wait()
        self.writer.close()
        if self.published and self.count == self.published:
            _writing(self.path).unlink()  # the empty last file of a live run: the table has its files already
        else:
            os.replace(_writing(self.path), self.path)
        self.published = self.count

    def roll(self, part: int) -> bool:
        """Close the current file, so its rows can be read while the run goes on, and continue in part `part`.
        Does nothing (False) while the current file has no rows, so a live run makes no empty files."""
        self.flush()
        if self.count == self.published:
            return False
        self.close()
        self.path = self.path.with_name(part_name(part))
        self.writer = parquet_writer(_writing(self.path), self.schema)
        return True


def parquet_writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    """A file of a dissect table: zstd, and a dictionary for the columns whose values repeat (`dictionary_columns`)."""
    return pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=dictionary_columns(schema))


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The string columns, but a message's own text (`schema.MESSAGE_TEXT`): their values repeat (a connection's, an
    api's, a topic's names). Not the integers (offsets, timestamps, ids), nor payload bytes: those barely repeat, and
    Arrow built their dictionaries until each overflowed and fell back to plain pages. Written that way, a chatty
    capture's frames/ and batches/ took a seventh more of the writing thread's time, and with zstd their files came
    out a third larger (4.6 -> 2.8 MB and 3.7 -> 2.9 MB)."""
    columns = []
    for field in schema:
        if field.name in MESSAGE_TEXT:
            continue
        if pa.types.is_string(field.type):
            columns.append(field.name)
        elif pa.types.is_list(field.type) and pa.types.is_string(field.type.value_type):
            columns.append(f"{field.name}.list.element")  # a list's strings, as Parquet's nested layout names them
    return columns


def _writing(path: Path) -> Path:
    return path.with_name(f".{path.name}.writing")


class Output:
    """The writers of one run, by table name."""

    def __init__(self, out_dir: str | os.PathLike, tables: dict[str, pa.Schema], part: int = 0) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="kafkatap-parquet")
        self.tables = {name: TableWriter(self.dir, name, schema, part, self.pool) for name, schema in tables.items()}

    def __getitem__(self, name: str) -> TableWriter:
        return self.tables[name]

    def roll(self, part: int) -> None:
        """Close every file that has rows (they become readable) and go on writing those tables in part `part`."""
        for table in self.tables.values():
            table.roll(part)

    def close(self) -> dict[str, int]:
        """Close every file; returns the row count per table."""
        try:
            for table in self.tables.values():
                table.close()
        except BaseException:
            self.abort()
            raise
        self.pool.shutdown()
        return {name: table.count for name, table in self.tables.items()}

    def abort(self) -> None:
        """Let go of every file after a failure (a full disk, say): the run's folder is removed, and a writer left
        open would retry its failed close when collected and print that error to the user."""
        for table in self.tables.values():
            try:
                table.wait()  # the writer is not closed under a row group being written
            except Exception:  # that row group's failure is the one being aborted for, or follows it
                pass
            try:
                table.writer.close()
            except OSError:
                pass
            table.writer.is_open = False  # pyarrow's own flag: no second close from __del__
        self.pool.shutdown()

    def out_of_range(self) -> dict[str, int]:
        """`table.column` -> values written as null because they did not fit the column's type."""
        return {f"{name}.{col}": n for name, t in self.tables.items() for col, n in t.out_of_range.items()}
