# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of split.split_batches: magic 2 batch headers read in a C loop, every read checked against the
data's length; legacy (magic 0/1) messages go through legacy_batch as in the pure-Python function, and data that is
not `bytes` through the pure-Python function itself."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from crc32c import crc32c

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import compression, split
from kafkatap.dissect.records.batch import Batch
from kafkatap.dissect.records.legacy import MIN_SIZE, legacy_batch
from kafkatap.dissect.records.record_batch import CRC_START, HEADER_SIZE

cdef object _new = tuple.__new__
cdef object _Batch = Batch
cdef Py_ssize_t _CRC_START = CRC_START
cdef int64_t[3] _MIN_LENGTH = [MIN_SIZE[0], MIN_SIZE[1], HEADER_SIZE - 12]


cdef inline int64_t _be(const uint8_t* b, int n):
    cdef uint64_t v = 0
    cdef int i
    for i in range(n):
        v = v << 8 | b[i]
    return <int64_t> v


def split_batches(data, max_decompressed=compression.DEFAULT_MAX_DECOMPRESSED):
    if type(data) is not bytes:
        return split.split_batches(data, max_decompressed)
    cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos = 0, left, size
    cdef int64_t length
    cdef int magic
    cdef const uint8_t* h
    view = memoryview(data)
    out = []
    while pos < n:
        left = n - pos
        if left < 17:
            return out, left, None
        length = <int32_t> _be(b + pos + 8, 4)
        magic = b[pos + 16]
        if magic > 2:
            return out, 0, DecodeError("bad_magic", pos, f"magic byte {magic} (at {pos + 16})")
        if length < _MIN_LENGTH[magic]:
            reason = "negative_length" if length < 0 else "truncated"
            return out, 0, DecodeError(reason, pos, f"batch_length {length} cannot hold a magic {magic} header")
        size = length + 12
        if size > left:
            return out, left, None
        if magic == 2:
            h = b + pos
            base_offset = _be(h, 8)
            crc = <uint32_t> _be(h + 17, 4)
            out.append(_new(_Batch, (
                pos, size, 2, base_offset, base_offset + <int32_t> _be(h + 23, 4), <int32_t> _be(h + 57, 4),
                <int32_t> _be(h + 12, 4), crc, crc32c(view[pos + _CRC_START:pos + size]) == crc,
                <int16_t> _be(h + 21, 2), _be(h + 27, 8), _be(h + 35, 8), _be(h + 43, 8), <int16_t> _be(h + 51, 2),
                <int32_t> _be(h + 53, 4), data, None)))
        else:
            out.append(legacy_batch(data, view, pos, size, max_decompressed))
        pos += size
    return out, 0, None
