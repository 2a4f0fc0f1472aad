# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twins of writer.columns, writer.add and writer.extend. columns: a row group's tuples into Arrow arrays,
one C loop per column writing Arrow's buffers (validity bits, values or offsets and data) instead of pyarrow's
per-value conversion of a struct array. `Builder` does the same a row at a time, as each row is added: its values
are copied while the tuple is still in the CPU's cache and the tuple is freed at once, where a pass per column over
a row group's kept tuples misses the cache on every row (it took a fifth of a chatty run's time).

It takes only what the dissector's rows hold: exact ints (in the column's range), str, bytes, bool, None, and tuples or
lists of str for list<string>. Any other value, or a column type it does not know, sends the whole row group (for
`Builder`, the row and the rest of its row group) to the pure-Python function, which converts it (or raises) exactly
as before.
"""

from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy

import pyarrow as pa

from kafkatap.dissect.tables import writer  # its `columns` is looked up at each call: writer imports this module

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL
    const char* _utf8 "PyUnicode_AsUTF8AndSize"(object s, Py_ssize_t* size)  # NULL and an error set: _no_utf8
    bint PyErr_ExceptionMatches(object exc)
    void PyErr_Clear()
    bint PyLong_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyBytes_CheckExact(object o)
    bint PyTuple_CheckExact(object o)
    bint PyList_CheckExact(object o)
    long long PyLong_AsLongLongAndOverflow(object o, int* overflow) except? -1

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
    cdef Py_ssize_t size = _SIZE[kind] if kind <= I64 else 0
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


# ---- a row at a time ---------------------------------------------------------------------------------------------

cdef Py_ssize_t _MAX_DATA = 0x7FFFFFFF  # int32 offsets: past this a column needs pyarrow's large types

cdef int _realloc(Buf* b, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = max(need, 2 * b.cap, 4096)
    cdef char* p = <char*> realloc(b.p, cap)
    if p == NULL:
        raise MemoryError()
    b.p, b.cap = p, cap
    return 0


cdef inline int _put(Buf* b, const void* src, Py_ssize_t n) except -1:
    if b.size + n > b.cap:
        _realloc(b, b.size + n)
    memcpy(b.p + b.size, src, n)
    b.size += n
    return 0


cdef inline int _i32(Buf* b, int32_t x) except -1:
    if b.size + 4 > b.cap:
        _realloc(b, b.size + 4)
    (<int32_t*> (b.p + b.size))[0] = x
    b.size += 4
    return 0


cdef inline int _bit(Buf* b, Py_ssize_t r, bint on) except -1:
    """Bit r of a bitmap whose bits before r are written."""
    if r & 7 == 0:
        if b.size + 1 > b.cap:
            _realloc(b, b.size + 1)
        b.p[b.size] = 0
        b.size += 1
    if on:
        b.p[r >> 3] |= <char> (1 << (r & 7))
    return 0


cdef class _Memory:
    """A column buffer handed to Arrow as it is (`_handed`): freed when Arrow lets go of it."""
    cdef char* p
    cdef Py_ssize_t size

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.p, self.size, 1, flags)

    def __dealloc__(self):
        free(self.p)


cdef object _handed(Buf* b):
    """b's bytes as an Arrow buffer, without a copy (copying every row group's columns into bytes cost a sixtieth of a
    chatty capture's dissect); b starts over in a new allocation of the same capacity, which the next row group
    fills without growing."""
    if b.size == 0:
        return pa.py_buffer(b"")
    cdef char* fresh = <char*> malloc(b.cap)
    if fresh == NULL:
        raise MemoryError()
    cdef _Memory owner = _Memory.__new__(_Memory)
    owner.p, owner.size = b.p, b.size
    b.p, b.size = fresh, 0
    return pa.py_buffer(owner)


cdef Py_ssize_t _ROW_GROUP_ROWS = writer.ROW_GROUP_ROWS  # set before writer imports this module
cdef Py_ssize_t _ROW_GROUP_BYTES = writer.ROW_GROUP_BYTES


cdef class WriterFields:
    """The fields of writer.TableWriter that every row's `add` reads; TableWriter.__init__ sets them."""


cpdef add(WriterFields writer, row, Py_ssize_t nbytes=0):
    """Compiled twin of writer.add (the same rules, read here in C; called for every frames/ row)."""
    if writer is None:  # cpdef takes no `not None`: from Python it could be given None, which C must never dereference
        raise TypeError("add: writer must be a TableWriter")
    builder, rows = writer.builder, writer.rows
    if rows or builder is None or not (<Builder> builder).take(row):
        rows.append(row)
    if nbytes:
        writer.pending_bytes += nbytes
        if writer.pending_bytes >= _ROW_GROUP_BYTES:
            writer.flush()
            return
    if len(rows) + ((<Builder> builder).rows if builder is not None else 0) >= _ROW_GROUP_ROWS:
        writer.flush()


cpdef extend(WriterFields writer, list rows):
    """Compiled twin of writer.extend (called for every partition's batches/ rows)."""
    if writer is None:
        raise TypeError("extend: writer must be a TableWriter")
    builder = writer.builder
    cdef Py_ssize_t taken
    if builder is None or writer.rows:
        writer.rows += rows
    else:
        taken = (<Builder> builder).extend(rows)
        if taken < len(rows):
            writer.rows += rows[taken:]
    rows_added(writer)


cdef Builder builder_of(WriterFields writer):
    """The writer's builder when a row may go straight into it: it has one, and no row waits as a tuple before it."""
    if writer.builder is None or writer.rows:
        return None
    return <Builder> writer.builder


cdef int rows_added(WriterFields writer) except -1:
    """After rows were added: the row group written when it is full."""
    if len(writer.rows) + ((<Builder> writer.builder).rows if writer.builder is not None else 0) >= _ROW_GROUP_ROWS:
        writer.flush()
    return 0


def builder(row_type):
    """A Builder for rows of row_type, or None when a column's type is not one this module writes."""
    kinds = _KINDS.get(row_type, False)
    if kinds is False:
        kinds = _KINDS[row_type] = _kinds(row_type)
    return Builder(row_type, kinds) if kinds is not None else None


cdef inline int _null(Col* col, Py_ssize_t r) except -1:
    """Row r's value of col is null (always fits)."""
    _bit(&col.valid, r, False)
    col.nulls += 1
    if col.kind == STRING or col.kind == BINARY:
        _i32(&col.values, <int32_t> col.data.size)
    elif col.kind == STRINGS:
        _i32(&col.values, <int32_t> (col.items.size // 4 - 1))
    elif col.kind == BOOL:
        _bit(&col.values, r, False)
    else:
        _store(col, 0)
    return 1


cdef inline int _integer(Col* col, Py_ssize_t r, long long x) except -1:
    """Append x as row r's value of an integer col: 1, or 0 (nothing written) when it is outside the col's type."""
    if not _store(col, x):
        return 0
    _bit(&col.valid, r, True)
    return 1


cdef Py_ssize_t[4] _SIZE = [1, 2, 4, 8]  # bytes of an I8 .. I64 value


cdef inline char* _grow(Buf* b, Py_ssize_t n) except NULL:
    """n more bytes at the end of b: where they start."""
    if b.size + n > b.cap:
        _realloc(b, b.size + n)
    b.size += n
    return b.p + b.size - n


cdef inline int _store(Col* col, long long x) except -1:
    """Append x to an integer col's values (not its validity): 1, or 0 (nothing written) outside its type."""
    cdef int kind = col.kind
    if kind == I64:
        (<int64_t*> _grow(&col.values, 8))[0] = x
    elif kind == I32 and -2147483648 <= x <= 2147483647:
        (<int32_t*> _grow(&col.values, 4))[0] = <int32_t> x
    elif kind == I16 and -32768 <= x <= 32767:
        (<int16_t*> _grow(&col.values, 2))[0] = <int16_t> x
    elif kind == I8 and -128 <= x <= 127:
        (<int8_t*> _grow(&col.values, 1))[0] = <int8_t> x
    else:
        return 0
    return 1


cdef inline int _value(Col* col, Py_ssize_t r, object v) except -1:
    """Append v as row r's value of col: 1, or 0 (nothing written) when v does not fit the col. The usual values (a
    str, an int, None) here, small enough for the compiler to inline into the row loop; the others in _other."""
    cdef Py_ssize_t length
    cdef const char* p
    cdef long long x
    cdef int overflow
    cdef int kind = col.kind
    if v is None:
        return _null(col, r)
    if kind == STRING and PyUnicode_CheckExact(v):
        p = _utf8(v, &length)
        if p == NULL:
            return _no_utf8()
        if length > _MAX_DATA - col.data.size:
            return 0
        _put(&col.data, p, length)
        _i32(&col.values, <int32_t> col.data.size)
        _bit(&col.valid, r, True)
        return 1
    if kind <= I64 and PyLong_CheckExact(v):
        x = PyLong_AsLongLongAndOverflow(v, &overflow)
        return 0 if overflow else _integer(col, r, x)
    return _other(col, r, v)


cdef int _no_utf8() except -1:
    """After _utf8 failed: 0 for a str with a lone surrogate, which has no UTF-8 (the value does not fit), else the
    error. Not a try block around the call: Cython saves and restores the exception state on entering one, about
    twenty instructions for every string value written."""
    if not PyErr_ExceptionMatches(UnicodeError):
        return -1
    PyErr_Clear()
    return 0


cdef int _other(Col* col, Py_ssize_t r, object v) except -1:
    """_value of a binary, list<string> or bool column, or of a value of the wrong type (0)."""
    cdef Py_ssize_t length, total = 0, items = 0
    cdef const char* p
    cdef int kind = col.kind
    cdef object item
    if kind == BINARY:
        if not PyBytes_CheckExact(v) or PyBytes_GET_SIZE(v) > _MAX_DATA - col.data.size:
            return 0
        _put(&col.data, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
        _i32(&col.values, <int32_t> col.data.size)
    elif kind == STRINGS:
        if not (PyTuple_CheckExact(v) or PyList_CheckExact(v)):
            return 0
        for item in v:  # every item checked before any is written
            if not PyUnicode_CheckExact(item):
                return 0
            if _utf8(item, &length) == NULL:  # the UTF-8 is kept beside the str: the second call reads it
                return _no_utf8()
            total += length
            items += 1
        if total > _MAX_DATA - col.data.size or items > _MAX_DATA - col.items.size // 4:
            return 0
        for item in v:
            p = PyUnicode_AsUTF8AndSize(item, &length)
            _put(&col.data, p, length)
            _i32(&col.items, <int32_t> col.data.size)
        _i32(&col.values, <int32_t> (col.items.size // 4 - 1))
    elif kind == BOOL:
        if v is not True and v is not False:
            return 0
        _bit(&col.values, r, v is True)
    else:
        return 0
    _bit(&col.valid, r, True)
    return 1


cdef inline Col* _at(Builder builder, Py_ssize_t c) except NULL:
    """Column c of builder, checked: inline, since every value a compiled row builder writes asks for it."""
    if not 0 <= c < builder.width:
        raise IndexError(f"column {c} of {builder.width}")
    return &builder.cols[c]


cdef class Builder:
    """A row group's columns written as rows are added (TableWriter's compiled path): `add` takes a row whose values
    all fit their columns and refuses (False, nothing written) any other; `arrays` hands the columns over and
    starts the next row group. The compiled row builders also write a row a value at a time, each into its column
    (`values`, `integer`, `boolean`, `null`, then `row_end`, or `row_undo`), without a tuple for it."""

    def __cinit__(self, row_type, tuple kinds):
        self.width = len(kinds)
        self.cols = <Col*> calloc(max(self.width, 1), sizeof(Col))
        if self.cols == NULL:
            raise MemoryError()
        self.types = [field.type for field in row_type]
        for c in range(self.width):
            self.cols[c].kind = kinds[c]
        self._start()

    def __dealloc__(self):
        cdef Py_ssize_t c
        if self.cols != NULL:
            for c in range(self.width):
                free(self.cols[c].valid.p)
                free(self.cols[c].values.p)
                free(self.cols[c].data.p)
                free(self.cols[c].items.p)
            free(self.cols)

    cdef int _start(self) except -1:
        cdef Py_ssize_t c
        cdef int32_t zero = 0
        cdef Col* col
        self.rows = 0
        for c in range(self.width):
            col = &self.cols[c]
            col.nulls = col.valid.size = col.values.size = col.data.size = col.items.size = 0
            if col.kind == STRING or col.kind == BINARY or col.kind == STRINGS:
                _put(&col.values, &zero, 4)
            if col.kind == STRINGS:
                _put(&col.items, &zero, 4)
        return 0

    def add(self, row):
        """Write row into the columns (True), or leave them as they were when a value does not fit (False)."""
        return self.take(row)

    cdef bint take(self, object row) except -1:
        return PyTuple_CheckExact(row) and PyTuple_GET_SIZE(row) == self.width and self._add(row)

    def extend(self, list rows):
        """add each of rows in turn; returns how many were written (the first refused one stops it)."""
        cdef Py_ssize_t r, n = PyList_GET_SIZE(rows)
        cdef object row
        for r in range(n):
            row = <object> PyList_GET_ITEM(rows, r)
            if not PyTuple_CheckExact(row) or PyTuple_GET_SIZE(row) != self.width or not self._add(row):
                return r
        return n

    cdef bint _add(self, tuple row) except -1:
        """Append the row's values to their columns in one pass; at a value that does not fit, take back the
        columns written so far (False)."""
        cdef Py_ssize_t c, r = self.rows
        for c in range(self.width):
            if not _value(&self.cols[c], r, <object> PyTuple_GET_ITEM(row, c)):
                self.row_undo(c)
                return False
        self.rows = r + 1
        return True

    cdef Py_ssize_t values(self, Py_ssize_t start, tuple items) except -1:
        """items as the row's values of columns start, start + 1, ...: how many were written before the first that
        does not fit (all of them: len(items)). One call and one bounds check for a run of columns (a batches/ row's
        carrying message and partition: 13 values, then 4), and with `_add` the only caller of `_value`, which the
        compiler then inlines into both loops."""
        if items is None:  # a typed argument of a cdef function may be None, which C must never read
            raise TypeError("values: items must be a tuple")
        cdef Py_ssize_t i, n = PyTuple_GET_SIZE(items), r = self.rows
        if not 0 <= start <= self.width - n:
            raise IndexError(f"columns {start}..{start + n - 1} of {self.width}")
        for i in range(n):
            if not _value(&self.cols[start + i], r, <object> PyTuple_GET_ITEM(items, i)):
                return i
        return n

    cdef int integer(self, Py_ssize_t c, long long x) except -1:
        """An integer column c's value of the row being written: 1, or 0 when x is outside its type."""
        return _integer(_at(self, c), self.rows, x)

    cdef int boolean(self, Py_ssize_t c, bint x) except -1:
        """A bool column c's value of the row being written: 1, or 0 when c holds no bools."""
        cdef Col* col = _at(self, c)
        if col.kind != BOOL:
            return 0
        _bit(&col.values, self.rows, x)
        _bit(&col.valid, self.rows, True)
        return 1

    cdef int null(self, Py_ssize_t c) except -1:
        """Column c's value of the row being written is null (1)."""
        return _null(_at(self, c), self.rows)

    cdef int row_end(self) except -1:
        """The row being written is whole: every column holds its value."""
        self.rows += 1
        return 0

    cdef int row_undo(self, Py_ssize_t upto) except -1:
        """Take back the row being written from columns 0..upto-1, which hold its values (the others hold none)."""
        cdef Py_ssize_t c, r = self.rows
        cdef Col* col
        cdef int32_t last
        for c in range(upto):
            col = &self.cols[c]
            if not (col.valid.p[r >> 3] >> (r & 7)) & 1:
                col.nulls -= 1
            col.valid.p[r >> 3] &= <char> ~(1 << (r & 7))
            if r & 7 == 0:
                col.valid.size -= 1
            if col.kind == STRING or col.kind == BINARY or col.kind == STRINGS:
                col.values.size -= 4
                last = (<int32_t*> (col.values.p + col.values.size - 4))[0]
                if col.kind == STRINGS:
                    col.items.size = 4 * (last + 1)
                    col.data.size = (<int32_t*> (col.items.p + col.items.size - 4))[0]
                else:
                    col.data.size = last
            elif col.kind == BOOL:
                col.values.p[r >> 3] &= <char> ~(1 << (r & 7))
                if r & 7 == 0:
                    col.values.size -= 1
            else:
                col.values.size -= _SIZE[col.kind]
        return 0

    def arrays(self):
        """The columns of the rows added since the last call, as Arrow arrays; the builder starts over."""
        cdef Py_ssize_t c, n = self.rows
        cdef Col* col
        out = []
        for c in range(self.width):
            col = &self.cols[c]
            type_ = self.types[c]
            mask = _handed(&col.valid) if col.nulls else None
            if col.kind == STRINGS:
                strings = pa.Array.from_buffers(type_.value_type, col.items.size // 4 - 1,
                                                [None, _handed(&col.items), _handed(&col.data)], 0)
                out.append(pa.Array.from_buffers(type_, n, [mask, _handed(&col.values)], col.nulls,
                                                 children=[strings]))
            elif col.kind == STRING or col.kind == BINARY:
                out.append(pa.Array.from_buffers(type_, n, [mask, _handed(&col.values),
                                                            _handed(&col.data)], col.nulls))
            else:
                out.append(pa.Array.from_buffers(type_, n, [mask, _handed(&col.values)], col.nulls))
        self._start()
        return out
