# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of batches.batch_rows: each batch's row built as one tuple in C, its timestamps converted in C. A
control batch (or anything but a Batch) sends the whole partition to the pure-Python function, which reads its
control record."""

from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from kafkatap.dissect.records.batch import CONTROL, TRANSACTIONAL, Batch
from kafkatap.dissect.tables import batches as reference  # its names are read at call time: it imports this module

cdef extern from "Python.h":
    PyObject* PySequence_Fast_GET_ITEM(object o, Py_ssize_t i)

cdef int64_t _MAX_MS = (1 << 63) // 1000 - 1
cdef long _TRANSACTIONAL = TRANSACTIONAL, _CONTROL = CONTROL
# A Batch's fields read here, at their positions in the NamedTuple that declares them
cdef Py_ssize_t _FIELDS = len(Batch._fields)
cdef Py_ssize_t _SIZE = Batch._fields.index("size"), _CRC_OK = Batch._fields.index("crc_ok")
cdef Py_ssize_t _ATTRIBUTES = Batch._fields.index("attributes")
cdef Py_ssize_t _FIRST = Batch._fields.index("first_timestamp"), _LAST = Batch._fields.index("max_timestamp")
cdef Py_ssize_t[7] _COPIED  # the fields a row takes as they are, in its order
for _i, _name in enumerate(("magic", "base_offset", "last_offset", "record_count", "producer_id", "producer_epoch",
                            "base_sequence")):
    _COPIED[_i] = Batch._fields.index(_name)


cdef inline void _put(tuple row, Py_ssize_t i, object value):
    Py_INCREF(value)
    PyTuple_SET_ITEM(row, i, value)


cdef inline object _us(int64_t ms):
    return ms * 1000 if 0 <= ms <= _MAX_MS else None


cpdef list batch_rows(tuple head, list batches, tuple tail, problem):
    if head is None or batches is None or tail is None:  # cpdef takes no `not None`; C must never read a None
        raise TypeError("batch_rows: head, batches and tail must be given")
    cdef Py_ssize_t i, h = PyTuple_GET_SIZE(head), t = PyTuple_GET_SIZE(tail)
    cdef tuple row
    cdef long attributes
    for batch in batches:
        if (not isinstance(batch, tuple) or len(batch) != _FIELDS
                or <long> (<object> PySequence_Fast_GET_ITEM(batch, _ATTRIBUTES)) & _CONTROL):
            return reference.batch_rows(head, batches, tail, problem)
    compression = reference.COMPRESSION
    out = []
    for batch in batches:
        row = PyTuple_New(h + 15 + t)
        for i in range(h):
            _put(row, i, head[i])
        attributes = <object> PySequence_Fast_GET_ITEM(batch, _ATTRIBUTES)
        for i in range(7):
            _put(row, h + i, <object> PySequence_Fast_GET_ITEM(batch, _COPIED[i]))
        _put(row, h + 7, True if attributes & _TRANSACTIONAL else False)
        _put(row, h + 8, False)
        _put(row, h + 9, None)
        _put(row, h + 10, compression[attributes & 7])
        _put(row, h + 11, <object> PySequence_Fast_GET_ITEM(batch, _SIZE))
        _put(row, h + 12, _us(<object> PySequence_Fast_GET_ITEM(batch, _FIRST)))
        _put(row, h + 13, _us(<object> PySequence_Fast_GET_ITEM(batch, _LAST)))
        _put(row, h + 14, <object> PySequence_Fast_GET_ITEM(batch, _CRC_OK))
        for i in range(t):
            _put(row, h + 15 + i, tail[i])
        out.append(row)
    return out
