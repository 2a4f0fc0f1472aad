"""Reading one `kafkatap analyze` report with pyarrow: summary.json and the tables of `pipelines.schema`.

pyarrow rather than Spark keeps the dashboard a sub-second, JVM-free step. Tables are read lazily (only the columns a
section asks for) and conformed to their declared schema, so a table the pipelines skipped (no share traffic, say)
or an older report missing a column reads as empty / null instead of breaking a section.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from kafkatap.errors import CommandError
from kafkatap.pipelines.schema import TABLES

ANALYZE_FIRST = "`kafkatap analyze OUT -o REPORT`"


def filesystem(root: str) -> tuple[pafs.FileSystem, str]:
    """A local path, or any URI pyarrow knows (file://, s3://, gs://, hdfs://)."""
    if "://" in root:
        return pafs.FileSystem.from_uri(root)
    return pafs.LocalFileSystem(), os.path.abspath(root)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Exactly the declared columns in the declared types; absent ones become nulls."""
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        column = table.column(f.name)
        if not column.type.equals(f.type):
            try:
                column = column.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # keep what was written (e.g. a map with other field names): pandas reads both the same way
        columns.append(column)
    return pa.Table.from_arrays(columns, names=schema.names)


class Report:
    """One report folder: `summary` (the parsed summary.json, {} when absent) and `frame(name)` per table."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._fs, self._base = filesystem(root)
        info = self._fs.get_file_info(self._base)
        if info.type != pafs.FileType.Directory:
            what = "does not exist" if info.type == pafs.FileType.NotFound else "is not a folder"
            raise CommandError(f"{root} {what}: give the report folder written by {ANALYZE_FIRST}")
        self.summary: dict = self._read_summary()
        self.absent: list[str] = [name for name in TABLES if not self._exists(name)]
        self.frame = lru_cache(maxsize=None)(self._frame)

    def _path(self, *parts: str) -> str:
        return "/".join([self._base.rstrip("/"), *parts])

    def _exists(self, name: str) -> bool:
        return self._fs.get_file_info(self._path(name)).type != pafs.FileType.NotFound

    def _read_summary(self) -> dict:
        path = self._path("summary.json")
        if self._fs.get_file_info(path).type == pafs.FileType.NotFound:
            return {}
        with self._fs.open_input_stream(path) as stream:
            data = stream.read()
        try:
            return json.loads(data)
        except ValueError as exc:  # not UTF-8, or not JSON
            raise CommandError(f"{path} is not JSON ({exc}): write the report again with {ANALYZE_FIRST}") from exc

    def check(self) -> None:
        """Refuse what `kafkatap analyze` did not write, or did not finish: its dashboard would be blank or wrong."""
        if "byte_account" in self.summary or (self._exists("frames") and len(self.absent) == len(TABLES)):
            raise CommandError(f"{self.root} is dissect output, not a report: run `kafkatap analyze {self.root} -o "
                               "REPORT`, then `kafkatap dashboard REPORT`")
        if not self.summary and len(self.absent) == len(TABLES):
            raise CommandError(f"{self.root} is not a kafkatap report (it has no summary.json and no report table): "
                               f"write one with {ANALYZE_FIRST}")
        if not self.summary:
            raise CommandError(f"{self.root} is an unfinished report (it has no summary.json): the `kafkatap analyze` "
                               "that wrote it stopped before the end; run it again")

    def table(self, name: str, columns: tuple[str, ...] | None = None) -> pa.Table:
        """Table `name` of `pipelines.schema.TABLES` (Spark's `_SUCCESS` / `.crc` files are skipped)."""
        schema = TABLES[name]
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
        if name in self.absent:
            return schema.empty_table()
        dataset = ds.dataset(self._path(name), filesystem=self._fs, format="parquet",
                             exclude_invalid_files=False, ignore_prefixes=[".", "_"])
        present = [c for c in schema.names if c in dataset.schema.names]
        return conform(dataset.to_table(columns=present), schema)

    def _frame(self, name: str, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
        """The table as pandas."""
        return _to_pandas(self.table(name, columns))

    def aggregate(self, name: str, keys: tuple[str, ...], values: tuple[str, ...], how: str = "sum") -> pd.DataFrame:
        """`values` aggregated per `keys` inside Arrow (multithreaded, no Python objects per row): the throughput
        tables of a long capture have millions of rows, the charts need thousands."""
        table = self.table(name, (*keys, *values))
        out = table.group_by(list(keys)).aggregate([(v, how) for v in values])
        return _to_pandas(out.rename_columns([c.removesuffix(f"_{how}") for c in out.column_names]))

    def rows(self, name: str) -> int:
        if name in self.absent:
            return 0
        dataset = ds.dataset(self._path(name), filesystem=self._fs, format="parquet", ignore_prefixes=[".", "_"])
        return dataset.count_rows()


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Timestamps become naive UTC: plotly.js ignores offsets in date strings."""
    df = table.to_pandas(maps_as_pydicts="strict")
    for col, dtype in df.dtypes.items():
        if isinstance(dtype, pd.DatetimeTZDtype):
            df[col] = df[col].dt.tz_convert("UTC").dt.tz_localize(None)
    return df
