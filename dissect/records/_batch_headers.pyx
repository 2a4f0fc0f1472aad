# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled twin of batch_headers.split_batches: magic 2 batch headers read in a C loop, every read checked against the
data's length; legacy (magic 0/1) messages go through legacy_batch as in the pure-Python function, and data that is
not `bytes` through the pure-Python function itself.

A small batch's CRC-32C is computed here, in C (the SSE4.2 instruction where the CPU has it, else a table), rather
than by the crc32c package: most batches of chatty traffic are a few hundred bytes, and for those the package's Python
call (and the memoryview slice it takes) cost more than the checksum. A large batch goes to the package, whose
three-stream hardware loop is faster on long data; it is imported at the first one.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

from kafkatap.dissect._big_endian cimport be_i16, be_i32, be_i64, be_u32
from kafkatap.dissect._tuples cimport new_tuple, put

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import batch_headers, compression
from kafkatap.dissect.records.batch import Batch
from kafkatap.dissect.records.legacy import MIN_SIZE, legacy_batch
from kafkatap.dissect.records.record_batch import CRC_START, HEADER_SIZE

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static uint32_t kt_crc32c_table[256];
    static int kt_crc32c_has_sse42;

    static void kt_crc32c_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            kt_crc32c_table[i] = c;
        }
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        kt_crc32c_has_sse42 = __builtin_cpu_supports("sse4.2");
    #endif
    }

    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __attribute__((target("sse4.2")))
    static uint32_t kt_crc32c_sse42(uint32_t crc, const uint8_t* p, size_t n) {
        uint64_t c = crc, word;
        for (; n >= 8; p += 8, n -= 8) {
            memcpy(&word, p, 8);
            c = __builtin_ia32_crc32di(c, word);
        }
        crc = (uint32_t) c;
        for (; n; p++, n--)
            crc = __builtin_ia32_crc32qi(crc, *p);
        return crc;
    }
    #endif

    static uint32_t kt_crc32c_by_table(uint32_t crc, const uint8_t* p, size_t n) {
        for (; n; p++, n--)
            crc = kt_crc32c_table[(crc ^ *p) & 0xFF] ^ (crc >> 8);
        return crc;
    }

    /* CRC-32C (Castagnoli) of p[0:n], as crc32c.crc32c computes it; by_table: without the CPU's instruction. */
    static uint32_t kt_crc32c(const uint8_t* p, size_t n, int by_table) {
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (kt_crc32c_has_sse42 && !by_table)
            return ~kt_crc32c_sse42(0xFFFFFFFFu, p, n);
    #endif
        return ~kt_crc32c_by_table(0xFFFFFFFFu, p, n);
    }
    """
    void kt_crc32c_init()
    uint32_t kt_crc32c(const uint8_t* p, size_t n, bint by_table) nogil

kt_crc32c_init()

cdef Py_ssize_t _SMALL = 2048  # bytes: at or below, computed here; above, the package (one stream here: half its speed)
cdef object _crc32c = None


def crc32c(data, bint by_table=False) -> int:
    """The CRC-32C this module computes for small batches, for tests to hold against the crc32c package (by_table:
    the loop a CPU without SSE4.2 runs)."""
    cdef const uint8_t[:] view = data
    return kt_crc32c(&view[0] if view.shape[0] else NULL, view.shape[0], by_table)


cdef bint _crc_ok(bytes data, const uint8_t* b, Py_ssize_t start, Py_ssize_t end, uint32_t crc) except -1:
    """Whether data[start:end] has CRC-32C crc (b is data's buffer; start <= end <= len(data))."""
    global _crc32c
    if end - start <= _SMALL:
        return kt_crc32c(b + start, end - start, False) == crc
    if _crc32c is None:
        from crc32c import crc32c as package
        _crc32c = package
    return _crc32c(memoryview(data)[start:end]) == crc


cdef bint crc_ok(bytes data, const uint8_t* b, Py_ssize_t pos, Header* h) except -1:
    """Whether the magic 2 batch `h` read at data[pos:] has its CRC (b is data's buffer)."""
    return _crc_ok(data, b, pos + _CRC_START, pos + h.size, h.crc)


cdef type _Batch = Batch
cdef Py_ssize_t _CRC_START = CRC_START
cdef int64_t[3] _MIN_LENGTH = [MIN_SIZE[0], MIN_SIZE[1], HEADER_SIZE - 12]


cdef object _batch(bytes data, Py_ssize_t pos, Header* h, bint crc_matches):
    """The Batch of the magic 2 batch h read at data[pos:], made for every batch a Produce or Fetch carries."""
    cdef object batch = new_tuple(_Batch, 17)
    put(batch, 0, pos)
    put(batch, 1, h.size)
    put(batch, 2, 2)
    put(batch, 3, h.base_offset)
    put(batch, 4, h.base_offset + h.last_offset_delta)
    put(batch, 5, h.record_count)
    put(batch, 6, h.partition_leader_epoch)
    put(batch, 7, h.crc)
    put(batch, 8, crc_matches)
    put(batch, 9, h.attributes)
    put(batch, 10, h.first_timestamp)
    put(batch, 11, h.max_timestamp)
    put(batch, 12, h.producer_id)
    put(batch, 13, h.producer_epoch)
    put(batch, 14, h.base_sequence)
    put(batch, 15, data)
    put(batch, 16, None)
    return batch


cdef Next next_batch(const uint8_t* b, Py_ssize_t left, Header* h) noexcept:
    """What the `left` bytes at b start with; h.size, h.length and h.magic are set unless END or a PARTIAL prefix,
    the whole header for a BATCH. Reads only bytes below b + left."""
    if left == 0:
        return END
    if left < 17:
        return PARTIAL
    h.length = be_i32(b + 8)
    h.magic = b[16]
    if h.magic > 2 or h.length < _MIN_LENGTH[h.magic]:
        return BAD
    h.size = h.length + 12
    if h.size > left:
        return PARTIAL
    if h.magic != 2:
        return LEGACY
    h.base_offset = be_i64(b)
    h.partition_leader_epoch = be_i32(b + 12)
    h.crc = be_u32(b + 17)
    h.attributes = be_i16(b + 21)
    h.last_offset_delta = be_i32(b + 23)
    h.first_timestamp = be_i64(b + 27)
    h.max_timestamp = be_i64(b + 35)
    h.producer_id = be_i64(b + 43)
    h.producer_epoch = be_i16(b + 51)
    h.base_sequence = be_i32(b + 53)
    h.record_count = be_i32(b + 57)
    return BATCH


def split_batches(data, max_decompressed=compression.DEFAULT_MAX_DECOMPRESSED):
    if type(data) is not bytes:
        return batch_headers.split_batches(data, max_decompressed)
    cdef const uint8_t* b = <const uint8_t*> PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos = 0
    cdef Header h
    cdef Next found
    view = None
    out = []
    while True:
        found = next_batch(b + pos, n - pos, &h)
        if found == END:
            return out, 0, None
        if found == PARTIAL:
            return out, n - pos, None
        if found == BAD:
            if h.magic > 2:
                return out, 0, DecodeError("bad_magic", pos, f"magic byte {h.magic} (at {pos + 16})")
            reason = "negative_length" if h.length < 0 else "truncated"
            return out, 0, DecodeError(reason, pos, f"batch_length {h.length} cannot hold a magic {h.magic} header")
        if found == BATCH:
            out.append(_batch(data, pos, &h, crc_ok(data, b, pos, &h)))
        else:
            if view is None:
                view = memoryview(data)
            out.append(legacy_batch(data, view, pos, h.size, max_decompressed))
        pos += h.size
