# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of batches.batch_rows: each batch's row built as one tuple in C (no per-batch tuple concatenation).
A control batch sends the whole partition to the pure-Python function, which reads its control record."""

from cpython.ref cimport PyObject, Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from kafkatap.dissect.tables import batches as reference

cdef tuple _COMPRESSION = reference.COMPRESSION
cdef int64_t _MAX_MS = reference.MAX_MS


cdef inline void _put(tuple row, Py_ssize_t i, object value):
    Py_INCREF(value)
    PyTuple_SET_ITEM(row, i, value)


def batch_rows(tuple head, list batches, tuple tail, problem):
    cdef Py_ssize_t i, h = PyTuple_GET_SIZE(head), t = PyTuple_GET_SIZE(tail)
    cdef tuple row
    cdef long attributes
    for batch in batches:
        if <long> batch[9] & 0x20:
            return reference.batch_rows(head, batches, tail, problem)
    out = []
    for batch in batches:
        row = PyTuple_New(h + 15 + t)
        for i in range(h):
            _put(row, i, <object> PyTuple_GET_ITEM(head, i))
        attributes = batch[9]
        first, last = batch[10], batch[11]
        _put(row, h, batch[2])
        _put(row, h + 1, batch[3])
        _put(row, h + 2, batch[4])
        _put(row, h + 3, batch[5])
        _put(row, h + 4, batch[12])
        _put(row, h + 5, batch[13])
        _put(row, h + 6, batch[14])
        _put(row, h + 7, bool(attributes & 0x10))
        _put(row, h + 8, False)
        _put(row, h + 9, None)
        _put(row, h + 10, _COMPRESSION[attributes & 7])
        _put(row, h + 11, batch[1])
        _put(row, h + 12, first * 1000 if 0 <= first <= _MAX_MS else None)
        _put(row, h + 13, last * 1000 if 0 <= last <= _MAX_MS else None)
        _put(row, h + 14, batch[8])
        for i in range(t):
            _put(row, h + 15 + i, <object> PyTuple_GET_ITEM(tail, i))
        out.append(row)
    return out
