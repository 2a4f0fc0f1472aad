# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of writer.columns: a row group's tuples into Arrow arrays, one C loop per column writing Arrow's
buffers (validity bits, values or offsets and data) instead of pyarrow's per-value conversion of a struct array.

It takes only what the dissector's rows hold: exact ints (in the column's range), str, bytes, bool, None, and tuples or
lists of str for list<string>. Any other value, or a column type it does not know, sends the whole row group to the
pure-Python function, which converts it (or raises) exactly as before.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t
from libc.string cimport memcpy

import pyarrow as pa

from kafkatap.dissect.tables import writer  # its `columns` is looked up at each call: writer imports this module

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL
    bint PyLong_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyBytes_CheckExact(object o)
    bint PyTuple_CheckExact(object o)
    bint PyList_CheckExact(object o)

cdef enum:
    I8, I16, I32, I64, BOOL, STRING, BINARY, STRINGS
cdef dict _SIMPLE = {pa.int8(): I8, pa.int16(): I16, pa.int32(): I32, pa.int64(): I64, pa.bool_(): BOOL,
                     pa.string(): STRING, pa.binary(): BINARY}
cdef dict _KINDS = {}  # row type -> tuple of column kinds, or None: not one this module takes


class _Unfit(Exception):
    """A value this module does not take: the pure-Python function converts the row group."""


def columns(list rows, row_type):
    kinds = _KINDS.get(row_type, False)
    if kinds is False:
        kinds = _KINDS[row_type] = _kinds(row_type)
    if kinds is None or not rows:
        return writer.columns(rows, row_type)
    cdef Py_ssize_t r, c, n = PyList_GET_SIZE(rows), width = len(kinds)
    cdef object row
    for r in range(n):
        row = <object> PyList_GET_ITEM(rows, r)
        if not PyTuple_CheckExact(row) or PyTuple_GET_SIZE(row) != width:
            return writer.columns(rows, row_type)
    try:
        return [_column(rows, c, kinds[c], row_type[c].type) for c in range(width)]
    except (_Unfit, UnicodeError):  # UnicodeError: a str with a lone surrogate, which has no UTF-8
        return writer.columns(rows, row_type)


cdef object _kinds(row_type):
    kinds = []
    for field in row_type:
        t = field.type
        if pa.types.is_timestamp(t):
            kind = I64 if t.unit == "us" else None
        elif pa.types.is_list(t):
            kind = STRINGS if pa.types.is_string(t.value_type) else None
        else:
            kind = _SIMPLE.get(t)
        if kind is None:
            return None
        kinds.append(kind)
    return tuple(kinds)


cdef object _column(list rows, Py_ssize_t c, int kind, type_):
    cdef Py_ssize_t r, n = PyList_GET_SIZE(rows), nulls = 0
    validity = bytearray((n + 7) // 8)
    cdef uint8_t* valid = <uint8_t*> (<char*> validity)
    cdef object v
    if kind == STRING or kind == BINARY or kind == STRINGS:
        return _variable(rows, c, kind, type_)
    cdef Py_ssize_t size = (1, 2, 4, 8, 0)[kind] if kind != BOOL else 0
    values = bytearray(n * size if kind != BOOL else (n + 7) // 8)
    cdef char* out = <char*> values
    cdef long long x
    for r in range(n):
        v = <object> PyTuple_GET_ITEM(<object> PyList_GET_ITEM(rows, r), c)
        if v is None:
            nulls += 1
            continue
        valid[r >> 3] |= 1 << (r & 7)
        if kind == BOOL:
            if v is True:
                out[r >> 3] |= 1 << (r & 7)
            elif v is not False:
                raise _Unfit()
            continue
        if not PyLong_CheckExact(v):
            raise _Unfit()
        try:
            x = PyLong_AsLongLong(v)
        except OverflowError:
            raise _Unfit()
        if kind == I8:
            if not -128 <= x <= 127:
                raise _Unfit()
            (<int8_t*> out)[r] = <int8_t> x
        elif kind == I16:
            if not -32768 <= x <= 32767:
                raise _Unfit()
            (<int16_t*> out)[r] = <int16_t> x
        elif kind == I32:
            if not -2147483648 <= x <= 2147483647:
                raise _Unfit()
            (<int32_t*> out)[r] = <int32_t> x
        else:
            (<int64_t*> out)[r] = <int64_t> x
    return pa.Array.from_buffers(type_, n, [pa.py_buffer(validity) if nulls else None, pa.py_buffer(values)], nulls)


cdef object _variable(list rows, Py_ssize_t c, int kind, type_):
    """string, binary and list<string>: offsets and data (for a list, its items' offsets and data in a child)."""
    cdef Py_ssize_t r, k, n = PyList_GET_SIZE(rows), nulls = 0, items = 0, total = 0, length
    cdef object v, item
    cdef const char* p
    for r in range(n):  # first pass: check every value and size the buffers
        v = <object> PyTuple_GET_ITEM(<object> PyList_GET_ITEM(rows, r), c)
        if v is None:
            continue
        if kind == STRING:
            if not PyUnicode_CheckExact(v):
                raise _Unfit()
            PyUnicode_AsUTF8AndSize(v, &length)
            total += length
        elif kind == BINARY:
            if not PyBytes_CheckExact(v):
                raise _Unfit()
            total += PyBytes_GET_SIZE(v)
        else:
            if not (PyTuple_CheckExact(v) or PyList_CheckExact(v)):
                raise _Unfit()
            for item in v:
                if not PyUnicode_CheckExact(item):
                    raise _Unfit()
                PyUnicode_AsUTF8AndSize(item, &length)
                total += length
                items += 1
    if total > 0x7FFFFFFF or items > 0x7FFFFFFF:
        raise _Unfit()
    validity = bytearray((n + 7) // 8)
    offsets = bytearray(4 * (n + 1))
    data = bytearray(total)
    cdef uint8_t* valid = <uint8_t*> (<char*> validity)
    cdef int32_t* off = <int32_t*> (<char*> offsets)
    cdef char* out = <char*> data
    cdef int32_t at = 0, count = 0
    item_offsets = bytearray(4 * (items + 1))
    cdef int32_t* item_off = <int32_t*> (<char*> item_offsets)
    for r in range(n):
        v = <object> PyTuple_GET_ITEM(<object> PyList_GET_ITEM(rows, r), c)
        if v is None:
            nulls += 1
            off[r + 1] = count if kind == STRINGS else at
            continue
        valid[r >> 3] |= 1 << (r & 7)
        if kind == STRING:
            p = PyUnicode_AsUTF8AndSize(v, &length)
            memcpy(out + at, p, length)
            at += length
            off[r + 1] = at
        elif kind == BINARY:
            length = PyBytes_GET_SIZE(v)
            memcpy(out + at, PyBytes_AS_STRING(v), length)
            at += length
            off[r + 1] = at
        else:
            for item in v:
                p = PyUnicode_AsUTF8AndSize(item, &length)
                memcpy(out + at, p, length)
                at += length
                count += 1
                item_off[count] = at
            off[r + 1] = count
    mask = pa.py_buffer(validity) if nulls else None
    if kind != STRINGS:
        return pa.Array.from_buffers(type_, n, [mask, pa.py_buffer(offsets), pa.py_buffer(data)], nulls)
    strings = pa.Array.from_buffers(type_.value_type, items, [None, pa.py_buffer(item_offsets), pa.py_buffer(data)], 0)
    return pa.Array.from_buffers(type_, n, [mask, pa.py_buffer(offsets)], nulls, children=[strings])
