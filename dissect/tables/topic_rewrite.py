"""Topic ids in the written tables replaced by the names the capture stated after those rows were written.

The rewrite goes row group by row group, so memory stays bounded; only the parts holding such ids are rewritten.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafkatap.dissect.tables.writer import parquet_writer

TOPIC_COLUMNS = {"frames": "topics", "batches": "topic", "records": "topic", "share": "topic"}

Unresolved = dict[str, set[str]]
"""table -> topic ids written without a name (`kafka.topics.TopicNames.unresolved`)."""


def rewrite(out_dir: Path, part: str, unresolved: Unresolved, names: dict[str, str]) -> dict[str, int]:
    """Rewrite one worker's part of each table where ids it wrote unnamed are now named (by any worker); returns
    the ids fixed per table."""
    fixed = {}
    for table, column in TOPIC_COLUMNS.items():
        mapping = {i: names[i] for i in unresolved.get(table, ()) if i in names}
        path = out_dir / table / part
        if mapping and path.exists():
            _rewrite_part(path, column, mapping)
            fixed[table] = len(mapping)
    return fixed


def rewrite_streamed(out_dir: Path, unresolved: Unresolved, names: dict[str, str]) -> dict[str, int]:
    """The rewrite of a streamed run, whose tables have many files: only the files holding an id that was named
    after it was written are rewritten (a row can be written well after its id was looked up, so the files are
    checked rather than guessed from when each was written)."""
    fixed = {}
    for table, column in TOPIC_COLUMNS.items():
        ids = {i for i in unresolved.get(table, ()) if i in names}
        if not ids:
            continue
        import pyarrow.compute as pc  # here, not at the top: only runs that leave ids unnamed pay its import

        value_set = pa.array(sorted(ids))
        for path in sorted((out_dir / table).glob("part-*.parquet")):
            col = pq.read_table(path, columns=[column]).column(0)
            if pa.types.is_list(col.type):
                col = pc.list_flatten(col)
            if pc.any(pc.is_in(col, value_set=value_set)).as_py():
                rewrite(out_dir, path.name, {table: ids}, names)
        fixed[table] = len(ids)
    return fixed


def _rewrite_part(path: Path, column: str, mapping: dict[str, str]) -> None:
    source = pq.ParquetFile(path)
    tmp = path.with_suffix(".tmp")
    keys = pa.array(list(mapping))
    values = pa.array(list(mapping.values()))
    with parquet_writer(tmp, source.schema_arrow) as writer:
        for i in range(source.num_row_groups):
            group = source.read_row_group(i)
            idx = group.schema.get_field_index(column)
            writer.write_table(group.set_column(idx, group.schema.field(idx), _map(group.column(idx), keys, values)))
    tmp.replace(path)


def _map(col: pa.ChunkedArray, keys: pa.Array, values: pa.Array) -> pa.ChunkedArray:
    """Replace ids by names in a string column, or in a list-of-string column (where a name the list already
    holds is not repeated)."""
    if pa.types.is_list(col.type):
        names = dict(zip(keys.to_pylist(), values.to_pylist()))
        lists = [None if v is None else list(dict.fromkeys(names.get(t, t) for t in v)) for v in col.to_pylist()]
        return pa.chunked_array([pa.array(lists, type=col.type)], type=col.type)
    return pa.chunked_array([_map_strings(chunk, keys, values) for chunk in col.chunks], type=col.type)


def _map_strings(arr: pa.Array, keys: pa.Array, values: pa.Array) -> pa.Array:
    import pyarrow.compute as pc  # here, not at the top: only runs that leave ids unnamed pay its import

    idx = pc.index_in(arr, value_set=keys)
    return pc.if_else(pc.is_null(idx), arr, pc.take(values, idx))
