# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of driver.deliver. The usual segment (the next bytes of an open connection's direction, neither
direction holding a hole, no SYN, FIN or RST) is placed here, with the bookkeeping Reassembler.segment does for it;
every other segment, and every segment while some stream has a hole, goes through Reassembler.segment as in the
pure-Python loop."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t

from kafkatap.dissect._tuples cimport new_tuple, put
from kafkatap.dissect.streams._conn cimport Conn, Half, OrderingFields
from kafkatap.dissect.streams._stream_sink cimport StreamSink

from kafkatap.dissect.packets.tcp import ACK, FIN, RST, SYN
from kafkatap.dissect.streams.reassembly import TAIL, Where

cdef type _Where = Where
cdef int64_t _TAIL = TAIL, _ACK = ACK, _NOT_USUAL = SYN | FIN | RST


cdef enum:
    _SLOTS = 1024  # lookups remembered per chunk (a power of two): more than the connections of a busy capture


cdef uint64_t _M1 = 0x9E3779B97F4A7C15, _M2 = 0xC2B2AE3D27D4EB4F, _M3 = 0x165667B19E3779F9  # odd multipliers
cdef uint64_t _M4 = 0xD6E8FEB86659FD93, _M5 = 0xFF51AFD7ED558CCD  # that spread a key's bits over the slot's index


cdef struct _Slot:  # a key's lookup in reasm.keys: the key's five values and what the dict gave, borrowed from it
    int64_t src_hi, src_lo, dst_hi, dst_lo, ports
    PyObject* found
    long long version  # reasm.keys_version when it was looked up (-1: an empty slot)


def deliver(OrderingFields reasm not None, bytes buf, Py_ssize_t index0, Py_ssize_t frames, cols, acks):
    cdef const int64_t[:] index = cols[0], ts_us = cols[1], src_hi = cols[2], src_lo = cols[3]
    cdef const int64_t[:] dst_hi = cols[4], dst_lo = cols[5], ports = cols[6], seq = cols[7], ack = cols[8]
    cdef const int64_t[:] flags = cols[9], offset = cols[10], length = cols[11], missing = cols[12]
    cdef Py_ssize_t r, size = PyBytes_GET_SIZE(buf)
    cdef int64_t i, last = -1, po, pl
    cdef _Slot* slots = <_Slot*> PyMem_Malloc(_SLOTS * sizeof(_Slot))
    if slots == NULL:
        raise MemoryError()
    cdef _Slot* slot
    cdef Py_ssize_t s
    for s in range(_SLOTS):
        slots[s].version = -1
    cdef dict keys = reasm.keys  # typed, so each segment's lookup is a C call rather than a call of its get method
    segment = reasm.segment
    sink = reasm.sink
    on_data, file = sink.on_data, reasm.file  # the same for the whole chunk: looked up once, not per segment
    # the sink's compiled on_data, called in C, when its run picked it (else its Python on_data)
    cdef StreamSink fast = <StreamSink> sink if isinstance(sink, StreamSink) and (<StreamSink> sink).compiled else None
    try:
        for r in range(index.shape[0]):
            i, po, pl = index[r], offset[r], length[r]
            if 0 <= po <= po + pl <= size:
                payload = PyBytes_FromStringAndSize(PyBytes_AS_STRING(buf) + po, pl)
            else:
                payload = buf[po:po + pl]
            if reasm.pending_total:
                acks.feed(last, i)
            elif pl > 0 and missing[r] == 0 and not flags[r] & _NOT_USUAL:
                slot = _slot(slots, src_hi[r], src_lo[r], dst_hi[r], dst_lo[r], ports[r])
                if slot.version == reasm.keys_version:
                    found = <object> slot.found
                else:
                    found = keys.get((src_hi[r], src_lo[r], dst_hi[r], dst_lo[r], ports[r]))
                    if found is not None:  # kept alive by keys until its next change, which makes the slot stale
                        slot.src_hi, slot.src_lo, slot.dst_hi, slot.dst_lo = src_hi[r], src_lo[r], dst_hi[r], dst_lo[r]
                        slot.ports, slot.found, slot.version = ports[r], <PyObject*> found, reasm.keys_version
                if found is not None and _usual(reasm, fast, on_data, file, found, index0 + i, ts_us[r], seq[r],
                                                flags[r], payload, pl):
                    last = i
                    continue
            segment(index0 + i, ts_us[r], (src_hi[r], src_lo[r], dst_hi[r], dst_lo[r], ports[r]), seq[r], ack[r],
                    flags[r], payload, missing[r])
            last = i
    finally:
        PyMem_Free(slots)
    if reasm.pending_total:
        acks.feed(last, frames)


cdef inline _Slot* _slot(_Slot* slots, int64_t src_hi, int64_t src_lo, int64_t dst_hi, int64_t dst_lo, int64_t ports):
    """The slot of a key: its own lookup if the slot holds one (version not -1) of the same key, else where to keep
    it (version -1: a lookup is needed). A key's lookup, kept, spares each segment a tuple of five ints, their
    hashing and the dict's comparison of them (a tenth of the driver's own time on a chatty capture)."""
    cdef uint64_t h = (<uint64_t> src_hi * _M1 ^ <uint64_t> src_lo * _M2 ^ <uint64_t> dst_hi * _M3
                       ^ <uint64_t> dst_lo * _M4 ^ <uint64_t> ports * _M5)
    cdef _Slot* slot = &slots[(h >> 40) & (_SLOTS - 1)]
    if (slot.version != -1 and (slot.src_hi != src_hi or slot.src_lo != src_lo or slot.dst_hi != dst_hi
                                or slot.dst_lo != dst_lo or slot.ports != ports)):
        slot.version = -1
    return slot


cdef bint _usual(OrderingFields reasm, StreamSink fast, on_data, file, tuple found, int64_t idx, int64_t ts,
                 int64_t seq, int64_t flags, bytes payload, int64_t pl) except -1:
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
    cdef object ts_us = ts  # one int object for the connection's field, the sink's argument and the Where
    conn.last_ts_us = ts_us
    half.strays = 0
    half.pos = pos + pl
    half.tail = payload if pl <= _TAIL else payload[pl - _TAIL:]
    reasm.payload_bytes += pl
    where = _where(file, idx, ts_us)
    if (fast.on_data(conn, side, ts_us, payload, where) if fast is not None
            else on_data(conn, side, ts_us, payload, where)) is False:
        reasm._ignore(conn)
    return True


cdef object _where(file, int64_t idx, object ts):
    """Where(file, idx, ts), made for every segment."""
    cdef object where = new_tuple(_Where, 3)
    put(where, 0, file)
    put(where, 1, idx)
    put(where, 2, ts)
    return where
