"""What the compiled body reader (`_bodies.pyx`) does with each field of one message version: a plan derived from the
schema table (`registry.body_fields`) and the rules of extract.py, so no api has code of its own.

A plan is nested tuples the reader turns into C arrays once per (api_key, api_version, direction):

    plan   = (struct, n_wanted, n_top, n_columns)
    struct = (flexible, topic_id_index, name_index, topic_context, fields, tagged)
    field  = (json_key, kind, element, nullable, flexible, bytes_as, role, index, top, column, collect, struct)
    tagged = ((tag, field), ...)  # the struct's known tagged fields, read from its tagged section

`role`/`index` say what `walk` does with the field (a wanted field and its slot, an error code, a topic name),
`top` its slot among the top-level fields kept, `column` its slot in a collected row, `collect` whether the array
is the first (1) or second (2) level of `extract.COLLECT`'s path. Messages a plan cannot describe exactly as the
pure-Python reader would treat them (float64 fields, a wanted field that is not a scalar, collected fields that
come after the partitions on the wire, a tagged field that would change what `walk` makes of its struct) get no
plan: the compiled reader hands them to the pure-Python one.

Tagged fields keep the plain fields' meaning: `walk` sees them as keys of their struct after its plain fields, in the
order they come on the wire, which is the order the compiled reader meets them.
"""

from __future__ import annotations

import json
from functools import lru_cache

from kafkatap.dissect.kafka.bodies import DICT_APIS, TOP, WANTED
from kafkatap.dissect.kafka.extract import ALIASES, COLLECT, RECORD_FIELDS, SECRET_FIELDS, Collect
from kafkatap.dissect.protocol import registry
from kafkatap.dissect.protocol.table import Field

KINDS = ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "uuid", "string", "bytes", "struct", "array")
BOOL, INT8, INT16, UINT16, INT32, UINT32, INT64, UUID, STRING, BYTES, STRUCT, ARRAY = range(len(KINDS))
"""A field's kind. The fixed-size scalars come first: the compiled reader takes `kind <= INT64` to mean one of them.
These codes and the two below are declared here only; `_bodies.pyx` reads them at import."""
PLAIN, SECRET, RECORDS = range(3)
"""How bytes are written: {"$bytes": base64}, {"$redacted": n} or {"$records": n}."""
NONE, WANTED_FIELD, ERROR, TOPIC, TOPIC_NAMES = range(5)
"""A field's role in `walk`."""
MAX_TAGGED = 64
"""Known tagged fields of one struct the compiled reader takes (the tags it has seen are one 64-bit word)."""


class Unsupported(Exception):
    """The plan cannot say what the pure-Python reader would do."""


@lru_cache(maxsize=None)
def plan(api_key: int, api_version: int, response: bool) -> tuple | None:
    """The plan of one message version, or None when the pure-Python reader must read it (caller checked it is
    known)."""
    if api_key in DICT_APIS:
        return None
    fields, flexible = registry.body_fields(api_key, api_version, response)
    wanted, top = WANTED[response], TOP[response]
    spec = COLLECT.get((api_key, response))
    try:
        root = _struct(fields, flexible, wanted, top, spec, 0)
    except Unsupported:
        return None
    columns = len(spec.topic) + len(spec.partition) if spec else 0
    return root, len(wanted), len(top), columns


def _struct(fields: tuple[Field, ...], flexible: bool, wanted: tuple[str, ...], top: tuple[str, ...] | None,
            spec: Collect | None, level: int) -> tuple:
    """level: 0 the message, 1 a topic of the collected path, 2 one of its partitions, -1 anywhere else."""
    plain = [f for f in fields if f.tag is None]
    tagged = [f for f in fields if f.tag is not None]
    names = [f.name for f in plain]
    topic_id = names.index("topic_id") if "topic_id" in names else -1
    name = names.index("name") if "name" in names else -1
    context = name >= 0 and (topic_id >= 0 or any("partition" in n for n in names))
    if len(tagged) > MAX_TAGGED:
        raise Unsupported(f"{len(tagged)} tagged fields")
    for f in tagged:
        if f.name in ("name", "topic_id") or (name >= 0 and not context and "partition" in f.name):
            raise Unsupported(f"{f.name}: a tagged field that decides the struct's topic context when present")
    columns = {}
    if spec is not None and level == 1:
        columns = {n: i for i, n in enumerate(spec.topic)}
    elif spec is not None and level == 2:
        columns = {n: len(spec.topic) + i for i, n in enumerate(spec.partition)}
    path = spec.path[level] if spec is not None and level in (0, 1) else None
    if path in names and any(n in columns for n in names[names.index(path) + 1:]):
        raise Unsupported("a collected field after the nested partitions")
    if any(f.name in columns or f.name == path for f in tagged):
        raise Unsupported("a collected field or path in the tagged section")
    top = top if level == 0 else None
    return (flexible, topic_id, name, context,
            tuple(_field(f, wanted, top, columns, path, spec, level) for f in plain),
            tuple((f.tag, _field(f, wanted, top, columns, path, spec, level)) for f in tagged))


def _field(f: Field, wanted: tuple[str, ...], top: tuple[str, ...] | None, columns: dict[str, int], path: str | None,
           spec: Collect | None, level: int) -> tuple:
    kind, element = _kind(f.kind, f.type)
    role, index = _role(f, wanted)
    if role in (WANTED_FIELD, ERROR, TOPIC) and kind > STRING:
        raise Unsupported(f"{f.name}: a {KINDS[kind]} where walk expects a scalar")
    if role == ERROR and kind in (BOOL, UUID, STRING):
        raise Unsupported(f"{f.name}: an error code that is not a number")
    if kind >= STRUCT and (f.name in columns or (top and f.name in top)):
        raise Unsupported(f"{f.name}: a kept field that is not a single value")
    bytes_as = SECRET if f.name in SECRET_FIELDS else RECORDS if f.name in RECORD_FIELDS else PLAIN
    collect, child = 0, None
    if f.name == path:
        if kind != ARRAY or element != STRUCT:
            raise Unsupported(f"{f.name}: a collected path that is not an array of structs")
        collect = level + 1
    if STRUCT in (kind, element):
        child = _struct(f.fields, f.flexible, wanted, None, spec, collect if collect else -1)
    return (json.dumps(f.name).encode() + b": ", kind, element, f.nullable, f.flexible, bytes_as, role, index,
            top.index(f.name) if top and f.name in top else -1, columns.get(f.name, -1), collect, child)


def _kind(kind: str, type_: str) -> tuple[int, int]:
    """(kind, element kind of an array or -1) as codes of KINDS."""
    if kind == "array":
        return ARRAY, STRUCT if type_ == "struct" else _kind("scalar" if type_ in KINDS else type_, type_)[0]
    if kind in ("bytes", "records"):
        return BYTES, -1
    if kind == "scalar" and type_ not in KINDS:
        raise Unsupported(f"scalar type {type_}")
    return KINDS.index(type_ if kind == "scalar" else kind), -1


def _role(f: Field, wanted: tuple[str, ...]) -> tuple[int, int]:
    """`extract._plan`'s order: wanted (or an alias of one), error code, topic name; arrays of topic names."""
    if f.name in wanted:
        return WANTED_FIELD, wanted.index(f.name)
    if ALIASES.get(f.name) in wanted:
        return WANTED_FIELD, wanted.index(ALIASES[f.name])
    if f.name.endswith("error_code"):
        return ERROR, -1
    if f.name in ("topic", "topic_name"):
        return TOPIC, -1
    if f.kind == "array" and f.type == "string" and f.name.endswith("topic_names"):
        return TOPIC_NAMES, -1
    return NONE, -1
