"""Stub of the compiled twin of writer.columns (_columns.pyx)."""

import pyarrow as pa

def columns(rows: list[tuple], row_type: pa.StructType) -> list[pa.Array]: ...
