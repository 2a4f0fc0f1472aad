"""Compile one version of a message table into a straight-line Python decoder (generated source, exec'd once).

The hot path then runs no schema logic at all: consecutive fixed-size fields are read with one precompiled
`struct` call, lengths are checked against the bytes left before anything is sliced or allocated, and a single
try/except per function turns `struct.error`/`IndexError`/`UnicodeDecodeError` into a DecodeError at the offset of
the field being read (`pos` always holds the start of the read in progress).
"""

from __future__ import annotations

import struct
from typing import Callable

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import wire
from kafkatap.dissect.protocol.table import SCALARS, Field

Decoder = Callable[[bytes, int], tuple[object, int]]

FORMAT = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
          "float64": "d", "uuid": "16s"}


class _Gen:
    """Source builder for one decoder function and its helpers' namespace."""

    def __init__(self, label: str) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, object] = {
            "_E": DecodeError, "_label": label, "_conv": wire.convert, "_serr": struct.error,
            "_uv": wire.read_uvarint, "_vstart": wire.varint_start, "_tagsec": wire.read_tag_section,
            "_uuid": wire.uuid_str, "_arr": wire.array_struct,
            "_i8": wire.I8.unpack_from, "_i16": wire.I16.unpack_from, "_i32": wire.I32.unpack_from,
        }
        self.n = 0

    def var(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: object, prefix: str = "_c") -> str:
        name = self.var(prefix)
        self.ns[name] = value
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    # --- lengths -------------------------------------------------------------------------------------------------

    def uvarint(self, ind: int, target: str) -> None:
        """Inline fast path for the usual 1-byte varint."""
        self.emit(ind, f"{target} = buf[pos]")
        self.emit(ind, f"if {target} < 128:")
        self.emit(ind + 1, "pos += 1")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{target}, pos = _uv(buf, pos)")

    def length(self, ind: int, f: Field, wide: bool) -> str:
        """Read a length/count prefix into a variable; leaves null handling to the caller (value < 0)."""
        n = self.var("n")
        if f.flexible:
            self.uvarint(ind, n)
            self.emit(ind, f"{n} -= 1")
        elif wide:
            self.emit(ind, f"{n}, = _i32(buf, pos)")
            self.emit(ind, "pos += 4")
        else:
            self.emit(ind, f"{n}, = _i16(buf, pos)")
            self.emit(ind, "pos += 2")
        return n

    def null_branch(self, ind: int, f: Field, n: str, target: str) -> None:
        """`if n < 0:` branch: null where allowed, else the right error; the caller emits the `else:` body."""
        at = self.prefix_start(f, n)
        self.emit(ind, f"if {n} < 0:")
        if f.nullable:
            self.emit(ind + 1, f"if {n} != -1:")
            self.emit(ind + 2, f"raise _E('negative_length', {at}, _label + ': length {{}} in {f.name}'.format({n}))")
            self.emit(ind + 1, f"{target} = None")
        else:
            self.emit(ind + 1, f"raise _E('null_not_allowed' if {n} == -1 else 'negative_length', {at}, "
                               f"_label + ': length {{}} in {f.name}'.format({n}))")

    def prefix_start(self, f: Field, n: str) -> str:
        """Expression for the offset of the length prefix just read (errors point at it, not past it)."""
        if f.flexible:
            return f"_vstart(pos, {n})"
        return "pos - 4" if f.kind in ("array", "bytes", "records") else "pos - 2"

    def too_large(self, ind: int, f: Field, n: str, what: str) -> None:
        self.emit(ind, f"if {n} > end - pos:")
        self.emit(ind + 1, f"raise _E('length_too_large', {self.prefix_start(f, n)}, _label + ': {what} of {{}}, "
                           f"{{}} bytes left'.format({n}, end - pos))")

    # --- values --------------------------------------------------------------------------------------------------

    def value(self, ind: int, f: Field, target: str) -> None:
        """Emit code that reads one field's value into `target`."""
        if f.kind == "scalar":
            self.scalar(ind, f.type, target)
        elif f.kind in ("string", "bytes", "records"):
            n = self.length(ind, f, wide=f.kind != "string")
            self.null_branch(ind, f, n, target)
            self.emit(ind, "else:")
            self.too_large(ind + 1, f, n, f"{f.name} length")
            if f.kind == "string":
                self.emit(ind + 1, f"{target} = buf[pos:pos + {n}].decode()")
            else:
                self.emit(ind + 1, f"{target} = buf[pos:pos + {n}]")
            self.emit(ind + 1, f"pos += {n}")
        elif f.kind == "struct":
            if f.nullable:
                m = self.var("m")
                self.emit(ind, f"{m}, = _i8(buf, pos)")
                self.emit(ind, "pos += 1")
                self.emit(ind, f"if {m} < 0:")
                self.emit(ind + 1, f"{target} = None")
                self.emit(ind, "else:")
                self.struct(ind + 1, f.fields, target, f.flexible)
            else:
                self.struct(ind, f.fields, target, f.flexible)
        else:
            self.array(ind, f, target)

    def scalar(self, ind: int, type_: str, target: str) -> None:
        unpack = f"_u_{type_}"
        self.ns.setdefault(unpack, struct.Struct(">" + FORMAT[type_]).unpack_from)
        self.emit(ind, f"{target}, = {unpack}(buf, pos)")
        self.emit(ind, f"pos += {SCALARS[type_]}")
        if type_ == "uuid":
            self.emit(ind, f"{target} = _uuid({target})")

    def array(self, ind: int, f: Field, target: str) -> None:
        n = self.length(ind, f, wide=True)
        self.null_branch(ind, f, n, target)
        self.emit(ind, "else:")
        ind += 1
        self.too_large(ind, f, n, f"{f.name} count")
        if f.type in SCALARS and f.type != "uuid":
            size = SCALARS[f.type]
            self.emit(ind, f"{target} = list(_arr({FORMAT[f.type]!r}, {n}).unpack_from(buf, pos))")
            self.emit(ind, f"pos += {size} * {n}")
            return
        self.emit(ind, f"{target} = []")
        append = self.var("ap")
        self.emit(ind, f"{append} = {target}.append")
        self.emit(ind, f"for _ in range({n}):")
        elem = self.var("e")
        if f.type == "struct":
            self.struct(ind + 1, f.fields, elem, f.flexible)
        else:
            kind = "scalar" if f.type in SCALARS else f.type
            self.value(ind + 1, Field(f.name, kind, f.type, False, f.flexible, None, ..., ()), elem)
        self.emit(ind + 1, f"{append}({elem})")

    def struct(self, ind: int, fields: tuple[Field, ...], target: str, flexible: bool) -> None:
        """Read a struct's fields (coalescing fixed-size runs), build its dict, then its tagged section."""
        plain = [f for f in fields if f.tag is None]
        tagged = [f for f in fields if f.tag is not None]
        names: list[tuple[str, str]] = []
        i = 0
        while i < len(plain):
            run = []
            while i < len(plain) and plain[i].kind == "scalar":
                run.append(plain[i])
                i += 1
            if len(run) == 1:
                v = self.var()
                self.scalar(ind, run[0].type, v)
                names.append((run[0].name, v))
            elif run:
                fmt = ">" + "".join(FORMAT[f.type] for f in run)
                unpack = self.const(struct.Struct(fmt).unpack_from, "_s")
                vs = [self.var() for _ in run]
                self.emit(ind, f"{', '.join(vs)} = {unpack}(buf, pos)")
                self.emit(ind, f"pos += {struct.calcsize(fmt)}")
                for f, v in zip(run, vs):
                    if f.type == "uuid":
                        self.emit(ind, f"{v} = _uuid({v})")
                    names.append((f.name, v))
            if i < len(plain):
                v = self.var()
                self.value(ind, plain[i], v)
                names.append((plain[i].name, v))
                i += 1
        self.emit(ind, f"{target} = {{{', '.join(f'{n!r}: {v}' for n, v in names)}}}")
        if flexible:
            decoders = {f.tag: (f.name, compile_value(f)) for f in tagged}
            table = self.const(decoders, "_t")
            self.emit(ind, "if buf[pos]:")
            self.emit(ind + 1, f"pos = _tagsec(buf, pos, {target}, {table})")
            self.emit(ind, "else:")
            self.emit(ind + 1, "pos += 1")

    def build(self, name: str) -> Callable:
        body = "\n".join(self.lines)
        src = (f"def {name}(buf, pos):\n    end = len(buf)\n    try:\n{_indent(body, 2)}\n"
               f"    except (IndexError, _serr, UnicodeDecodeError) as exc:\n"
               f"        raise _conv(exc, pos, _label, end) from None\n")
        exec(compile(src, f"<kafkatap {self.ns['_label']}>", "exec"), self.ns)
        fn = self.ns[name]
        fn.source = src  # type: ignore[attr-defined]
        return fn


def _indent(text: str, levels: int) -> str:
    pad = "    " * levels
    return "\n".join(pad + line for line in text.splitlines())


def compile_struct(fields: tuple[Field, ...], flexible: bool, label: str) -> Decoder:
    """A decoder `(buf, pos) -> (dict, pos)` for a whole message body or header of one version."""
    gen = _Gen(label)
    gen.struct(0, fields, "obj", flexible)
    gen.emit(0, "return obj, pos")
    return gen.build("decode")


def compile_value(f: Field) -> Decoder:
    """A decoder for one tagged field's value (tagged values always use the flexible encodings)."""
    gen = _Gen(f"tagged field {f.name}")
    gen.value(0, f, "val")
    gen.emit(0, "return val, pos")
    return gen.build("decode_tag")
