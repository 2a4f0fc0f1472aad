"""Compare two `kafkatap analyze` report folders row for row, to show that a change to the pipelines left their output
as it was.

    python benchmarks/compare_reports.py BEFORE AFTER [BEFORE AFTER ...]

Why this exists: a rewrite of the pipelines (a faster plan, fewer shuffles, a different join) must give the same
report, and Spark writes the same rows in an order and a split into part files that change from run to run, so the
files cannot be compared byte for byte. Here each table (a folder of part files, some one level down, like
sessions/members or throughput/data) is read whole and compared as a multiset of rows: the same column names and
types in the same order, and every row as often on each side. Values are compared exactly and by type: floats by
their bits (0.0 and -0.0 differ, a NaN equals a NaN of the same bits), 1 and 1.0 differ, the order inside a list is
part of its value, a struct is its fields in order, and a map is its set of entries (a map has no order).
summary.json is compared as parsed JSON by the same rules, its objects by their keys. A table found on one side only
is a difference.

One line per table: its name, the rows before and after (for summary.json, its top-level keys), `identical` or
`DIFFERENT` with the reason, then up to three rows found only on each side, as JSON. Exits 0 when every pair is
identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SHOWN = 3
"""Rows printed per side for a table that differs."""

Key = tuple
"""A value's canonical form: hashable, equal exactly when the values are, and ordered within one column."""

NULL: Key = (0,)


def _float_key(value: float) -> Key:
    """Ordered by value (NaN last), equal only for the same bits."""
    bits = struct.pack(">d", value)
    return (1, "float", 1, 0.0, bits) if math.isnan(value) else (1, "float", 0, value, bits)


def value_key(value: Any, type_: pa.DataType) -> Key:
    """The canonical form of one Arrow value, as `to_pylist` gives it, of the column type type_."""
    if value is None:
        return NULL
    if pa.types.is_map(type_):
        return (1, "map", tuple(sorted((value_key(k, type_.key_type), value_key(v, type_.item_type))
                                       for k, v in value)))
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return (1, "list", tuple(value_key(item, type_.value_type) for item in value))
    if pa.types.is_struct(type_):
        return (1, "struct", tuple(value_key(value[field.name], field.type) for field in type_))
    if pa.types.is_floating(type_):
        return _float_key(float(value))
    return (1, str(type_), value)


def json_key(value: Any) -> Key:
    """The canonical form of a parsed JSON value: objects by their keys, arrays in order, numbers by type."""
    if value is None:
        return NULL
    if isinstance(value, dict):
        return (1, "object", tuple(sorted((k, json_key(v)) for k, v in value.items())))
    if isinstance(value, list):
        return (1, "array", tuple(json_key(v) for v in value))
    if isinstance(value, float):
        return _float_key(value)
    return (1, type(value).__name__, value)


def tables(report: Path) -> dict[str, Path]:
    """Every table of a report by its name relative to the report: each folder holding Parquet part files."""
    found = {}
    for part in report.rglob("*.parquet"):
        if not part.name.startswith((".", "_")):
            found[part.parent.relative_to(report).as_posix()] = part.parent
    return found


def keyed_rows(table: pa.Table) -> list[tuple[Key, tuple]]:
    """Each row of the table as (its canonical key, its values as Python objects)."""
    types = [field.type for field in table.schema]
    return [(tuple(value_key(v, t) for v, t in zip(row, types)), row)
            for row in zip(*(column.to_pylist() for column in table.columns))]


def first_rows(table: pa.Table, keyed: list[tuple[Key, tuple]], keys: Counter[Key], limit: int) -> list[dict]:
    """Up to limit of the rows whose keys are in keys, in key order, as {column: value}."""
    by_key: dict[Key, tuple] = {}
    for key, row in keyed:
        if key in keys:
            by_key.setdefault(key, row)
    return [dict(zip(table.column_names, by_key[key])) for key in sorted(by_key)[:limit]]


def schema_difference(before: pa.Schema, after: pa.Schema) -> str:
    """'' when the columns have the same names and types in the same order, else what differs."""
    old = {f.name: f.type for f in before}
    new = {f.name: f.type for f in after}
    parts = []
    if old.keys() - new.keys():
        parts.append("columns only before: " + ", ".join(sorted(old.keys() - new.keys())))
    if new.keys() - old.keys():
        parts.append("columns only after: " + ", ".join(sorted(new.keys() - old.keys())))
    retyped = [f"{name} {old[name]} -> {new[name]}" for name in old if name in new and old[name] != new[name]]
    if retyped:
        parts.append("column types: " + ", ".join(retyped))
    if not parts and before.names != after.names:
        parts.append("column order: " + ", ".join(after.names))
    return "; ".join(parts)


def compare_table(name: str, before: Path | None, after: Path | None, width: int) -> bool:
    """Print the table's line (and a few differing rows); True when it is identical on both sides."""
    old = pq.read_table(before) if before else None
    new = pq.read_table(after) if after else None
    counts = "  ".join(f"{t.num_rows if t is not None else '-':>9}" for t in (old, new))
    if old is None or new is None:
        print(f"{name:<{width}}  {counts}  DIFFERENT (table only {'before' if new is None else 'after'})")
        return False
    schema = schema_difference(old.schema, new.schema)
    old_keyed, new_keyed = keyed_rows(old), keyed_rows(new)
    old_rows, new_rows = Counter(k for k, _ in old_keyed), Counter(k for k, _ in new_keyed)
    only_old, only_new = old_rows - new_rows, new_rows - old_rows
    if not schema and not only_old and not only_new:
        print(f"{name:<{width}}  {counts}  identical")
        return True
    reason = f"{only_old.total()} rows only before, {only_new.total()} only after"
    print(f"{name:<{width}}  {counts}  DIFFERENT ({reason}{'; ' + schema if schema else ''})")
    for side, table, keyed, keys in (("before", old, old_keyed, only_old), ("after", new, new_keyed, only_new)):
        for row in first_rows(table, keyed, keys, SHOWN):
            print(f"    only {side}: {json.dumps(row, default=str, ensure_ascii=False)}")
    return False


def compare_summary(before: Path, after: Path, width: int) -> bool:
    """Print summary.json's line: identical when both parse to the same JSON, else the top-level keys that differ."""
    name = "summary.json"
    old, new = (json.loads(p.read_text()) if p.exists() else None for p in (before, after))
    counts = "  ".join(f"{len(s) if isinstance(s, dict) else '-':>9}" for s in (old, new))
    missing = [side for side, summary in (("before", old), ("after", new)) if summary is None]
    if missing:
        print(f"{name:<{width}}  {counts}  DIFFERENT (missing {' and '.join(missing)})")
        return False
    if json_key(old) == json_key(new):
        print(f"{name:<{width}}  {counts}  identical")
        return True
    if not (isinstance(old, dict) and isinstance(new, dict)):
        print(f"{name:<{width}}  {counts}  DIFFERENT ({old!r} -> {new!r})")
        return False
    keys = sorted(k for k in old.keys() | new.keys()
                  if k not in old or k not in new or json_key(old[k]) != json_key(new[k]))
    print(f"{name:<{width}}  {counts}  DIFFERENT (keys {', '.join(keys)})")
    for key in keys:
        print(f"    {key}: {json.dumps(old.get(key, '<absent>'))} -> {json.dumps(new.get(key, '<absent>'))}")
    return False


def compare(before: Path, after: Path) -> bool:
    """Compare every table and summary.json of two reports, printing a line for each; True when all are identical."""
    old, new = tables(before), tables(after)
    names = sorted(old.keys() | new.keys())
    width = max([len("summary.json"), *map(len, names)])
    print(f"== {before}  vs  {after}")
    print(f"{'table':<{width}}  {'before':>9}  {'after':>9}")
    same = [compare_table(name, old.get(name), new.get(name), width) for name in names]
    same.append(compare_summary(before / "summary.json", after / "summary.json", width))
    return all(same)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path, metavar="BEFORE AFTER",
                        help="pairs of report folders: a report before a change, then the same report after it")
    args = parser.parse_args()
    if len(args.reports) % 2:
        parser.error("report folders come in pairs: BEFORE AFTER [BEFORE AFTER ...]")
    for report in args.reports:
        if not report.is_dir():
            parser.error(f"{report} is not a folder")
    pairs = zip(args.reports[::2], args.reports[1::2])
    results = [compare(before, after) for before, after in pairs]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
