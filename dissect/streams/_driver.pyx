# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of driver.deliver. The usual segment (the next bytes of an open connection's direction, neither
direction holding a hole, no SYN, FIN or RST) is placed here, with the bookkeeping Reassembler.segment does for it;
every other segment, and every segment while some stream has a hole, goes through Reassembler.segment as in the
pure-Python loop."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from kafkatap.dissect.streams._conn cimport Conn, Half, OrderingFields

from kafkatap.dissect.packets.tcp import ACK, FIN, RST, SYN
from kafkatap.dissect.streams.reassembly import TAIL, Where

cdef extern from "Python.h":
    ctypedef struct PyTypeObject
    object PyType_GenericAlloc(PyTypeObject* type, Py_ssize_t nitems)

cdef object _Where = Where
cdef int64_t _TAIL = TAIL, _ACK = ACK, _NOT_USUAL = SYN | FIN | RST


def deliver(OrderingFields reasm not None, bytes buf, Py_ssize_t index0, Py_ssize_t frames, cols, acks):
    cdef const int64_t[:] index = cols[0], ts_us = cols[1], src_hi = cols[2], src_lo = cols[3]
    cdef const int64_t[:] dst_hi = cols[4], dst_lo = cols[5], ports = cols[6], seq = cols[7], ack = cols[8]
    cdef const int64_t[:] flags = cols[9], offset = cols[10], length = cols[11], missing = cols[12]
    cdef Py_ssize_t r, size = PyBytes_GET_SIZE(buf)
    cdef int64_t i, last = -1, po, pl
    cdef dict keys = reasm.keys  # typed, so each segment's lookup is a C call rather than a call of its get method
    segment = reasm.segment
    on_data, file = reasm.sink.on_data, reasm.file  # the same for the whole chunk: looked up once, not per segment
    for r in range(index.shape[0]):
        i, po, pl = index[r], offset[r], length[r]
        if 0 <= po <= po + pl <= size:
            payload = PyBytes_FromStringAndSize(PyBytes_AS_STRING(buf) + po, pl)
        else:
            payload = buf[po:po + pl]
        key = (src_hi[r], src_lo[r], dst_hi[r], dst_lo[r], ports[r])
        if reasm.pending_total:
            acks.feed(last, i)
        elif pl > 0 and missing[r] == 0 and not flags[r] & _NOT_USUAL:
            found = keys.get(key)
            if found is not None and _usual(reasm, on_data, file, found, index0 + i, ts_us[r], seq[r], flags[r],
                                            payload, pl):
                last = i
                continue
        segment(index0 + i, ts_us[r], key, seq[r], ack[r], flags[r], payload, missing[r])
        last = i
    if reasm.pending_total:
        acks.feed(last, frames)


cdef bint _usual(OrderingFields reasm, on_data, file, tuple found, int64_t idx, int64_t ts, int64_t seq, int64_t flags,
                 bytes payload, int64_t pl) except -1:
    """Place the segment if it is the usual case (what Reassembler.segment's inlined branch does), else False."""
    cdef Conn conn = <Conn> found[0]
    cdef int side = found[1]
    if conn.closed or conn.ignored or not conn.opened:
        return False
    cdef tuple halves = conn.halves
    if flags & _ACK and (<Half> halves[1 - side]).starts:
        return False
    cdef Half half = <Half> halves[side]
    base = half.base
    if base is None or half.starts:
        return False
    cdef int64_t pos
    try:
        pos = half.pos
    except OverflowError:  # a stream position past int64 (absurd sequence jumps): the general path copes
        return False
    if (seq - <int64_t> base - pos) & 0xFFFFFFFF:
        return False
    conn.last_ts_us = ts
    half.strays = 0
    half.pos = pos + pl
    half.tail = payload if pl <= _TAIL else payload[pl - _TAIL:]
    reasm.payload_bytes += pl
    if on_data(conn, side, ts, payload, _where(file, idx, ts)) is False:
        reasm._ignore(conn)
    return True


cdef object _where(file, int64_t idx, int64_t ts):
    """Where(file, idx, ts), built as tuple.__new__ builds a tuple subclass (allocate, fill), without its argument
    tuple and the call through Python: one is made for every segment."""
    cdef object where = PyType_GenericAlloc(<PyTypeObject*> _Where, 3)
    _put(where, 0, file)
    _put(where, 1, idx)
    _put(where, 2, ts)
    return where


cdef inline void _put(object where, Py_ssize_t i, object value):
    Py_INCREF(value)
    PyTuple_SET_ITEM(where, i, value)
