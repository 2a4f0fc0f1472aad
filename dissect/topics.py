"""Topic ids to names, learned from the capture itself (Metadata, CreateTopics, ... responses name both).

Fetch v13+, Produce v13+ and the share apis name topics by id only. A row written before the Metadata response that
names its id carries the id; at the end of the run the parts holding such ids are rewritten with the names learned
since (row group by row group, so memory stays bounded). Ids never named in the capture stay ids.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TOPIC_COLUMNS = {"frames": "topics", "batches": "topic", "records": "topic", "share": "topic"}


class TopicNames:
    __slots__ = ("names", "unresolved")

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.unresolved: dict[str, set[str]] = {}  # table -> ids written without a name

    def learn(self, topic_id: str, name: str) -> None:
        self.names[topic_id] = name

    def resolve(self, topic_id: str, table: str) -> str:
        """The topic's name if known, else its id (remembered, so the table can be fixed at the end)."""
        name = self.names.get(topic_id)
        if name is not None:
            return name
        self.unresolved.setdefault(table, set()).add(topic_id)
        return topic_id

    def rewrite(self, out_dir: Path, part: str, names: dict[str, str]) -> dict[str, int]:
        """Rewrite this worker's part of each table where ids it wrote unnamed are now named (by any worker);
        returns the ids fixed per table."""
        fixed = {}
        for table, column in TOPIC_COLUMNS.items():
            mapping = {i: names[i] for i in self.unresolved.get(table, ()) if i in names}
            path = out_dir / table / part
            if mapping and path.exists():
                _rewrite_part(path, column, mapping)
                fixed[table] = len(mapping)
        return fixed


def _rewrite_part(path: Path, column: str, mapping: dict[str, str]) -> None:
    source = pq.ParquetFile(path)
    tmp = path.with_suffix(".tmp")
    keys = pa.array(list(mapping))
    values = pa.array(list(mapping.values()))
    with pq.ParquetWriter(tmp, source.schema_arrow, compression="zstd") as writer:
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
    idx = pc.index_in(arr, value_set=keys)
    return pc.if_else(pc.is_null(idx), arr, pc.take(values, idx))
