# NamedTuples built in C as tuple.__new__ builds an instance of a tuple subclass (allocate, then fill), without its
# call through Python and the argument tuple it copies: the compiled message path makes one for every segment
# (reassembly.Where, _driver.pyx), every message body (bodies.Body, _bodies.pyx) and every record batch
# (records.batch.Batch, _batch_headers.pyx).

from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM

cdef extern from "Python.h":
    ctypedef struct PyTypeObject
    object PyType_GenericAlloc(PyTypeObject* type, Py_ssize_t nitems)


cdef inline object new_tuple(type tuple_type, Py_ssize_t n):
    """An instance of tuple_type (a tuple subclass) with n items, each set by `put` before the tuple is used."""
    return PyType_GenericAlloc(<PyTypeObject*> tuple_type, n)


cdef inline void put(object t, Py_ssize_t i, object value):
    """Item i of a tuple from new_tuple (it takes a reference to value)."""
    Py_INCREF(value)
    PyTuple_SET_ITEM(t, i, value)
