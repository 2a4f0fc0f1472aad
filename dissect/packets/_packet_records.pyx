# cython: boundscheck=True, wraparound=False
"""Compiled twins of the capture files' packet record walks: pcap.record_walk and pcapng.epb_run.

A record's length is only known from its header, so these walks are one loop per record: in Python, the cost of a
small packet's record is of the same order as all its header parsing. In C the loop waits on memory instead: where
the next header is depends on this one's length, so the cache cannot guess it; the walk asks for the lines a few KB
ahead of itself. Same arguments, same results as the twins; the lengths they follow are hostile, so every read stays
under Cython's bounds checks.
"""

from libc.stdint cimport int64_t, uint32_t, uint64_t

import numpy as np

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define KAFKATAP_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define KAFKATAP_PREFETCH(p) ((void)0)
    #endif
    """
    void KAFKATAP_PREFETCH(const void* p) noexcept nogil

cdef enum:
    EPB = 6
    EPB_HEAD = 28  # type, length, interface, timestamp (2), caplen, origlen
    EPB_MIN = 32  # the head and the trailing length
    MAX_FRAME = 64 << 20  # pcap.MAX_FRAME
    AHEAD = 4096  # bytes ahead of the walk asked into the cache
    LINE = 64
    LINES = 8  # at most this many lines asked for per record: a long record's payload is never read


cdef inline Py_ssize_t _fetch(const unsigned char[::1] b, Py_ssize_t off, Py_ssize_t line) noexcept:
    """Ask for the lines from `line` on up to AHEAD bytes past off; returns the next line to ask for."""
    cdef Py_ssize_t stop = min(off + AHEAD, b.shape[0])
    line = max(line, stop - LINES * LINE)
    while line < stop:
        KAFKATAP_PREFETCH(&b[line])
        line += LINE
    return line


cdef inline uint32_t _u32(const unsigned char[::1] b, Py_ssize_t i, bint little) except? 0xFFFFFFFF:
    if little:
        return b[i] | <uint32_t>b[i + 1] << 8 | <uint32_t>b[i + 2] << 16 | <uint32_t>b[i + 3] << 24
    return <uint32_t>b[i] << 24 | <uint32_t>b[i + 1] << 16 | <uint32_t>b[i + 2] << 8 | b[i + 3]


def record_walk(const unsigned char[::1] buf, Py_ssize_t head, bint little):
    """pcap.record_walk: (the whole records at the start of buf as columns of their offsets, seconds, fractions,
    caplens and origlens; offset after the last of them; end of the record the walk stopped at or after)."""
    if head < 16:
        raise ValueError(f"a record header of {head} bytes has no origlen")
    cdef Py_ssize_t n = buf.shape[0], off = 0, end = 0, count = 0, line = 0
    columns = np.empty((n // head, 5), np.int64)  # a row for the most records buf can hold: only those used are touched
    cdef int64_t[:, ::1] out = columns
    cdef uint32_t caplen
    while off + head <= n:
        line = _fetch(buf, off, line)
        caplen = _u32(buf, off + 8, little)
        end = off + head + caplen
        if end > n:
            break
        out[count, 0], out[count, 1], out[count, 2] = off, _u32(buf, off, little), _u32(buf, off + 4, little)
        out[count, 3], out[count, 4] = caplen, _u32(buf, off + 12, little)
        count += 1
        off = end
    used = columns[:count].T.copy()
    return (used[0], used[1], used[2], used[3], used[4]), off, end


cdef Py_ssize_t _epb_end(const unsigned char[::1] buf, Py_ssize_t off, bint little, int64_t section_base,
                         int64_t interfaces) except -2:
    """End of the enhanced packet block at off if it is whole, well formed and of a known interface, else -1."""
    cdef Py_ssize_t n = buf.shape[0]
    if off + EPB_MIN > n or _u32(buf, off, little) != EPB:
        return -1
    cdef uint32_t blen = _u32(buf, off + 4, little)
    if blen < EPB_MIN or blen % 4 or blen > MAX_FRAME or off + blen > n:
        return -1
    if _u32(buf, off + 20, little) > blen - EPB_MIN or section_base + _u32(buf, off + 8, little) >= interfaces:
        return -1
    return off + blen


def epb_run(const unsigned char[::1] buf, Py_ssize_t off, bint little, int64_t section_base, int64_t interfaces):
    """pcapng.epb_run: (offset after the run, (packet data offsets, caplens, origlens, interfaces, raw timestamps))."""
    if off < 0:
        raise ValueError(f"offset {off} before the buffer")
    cdef Py_ssize_t room = max(buf.shape[0] - off, 0) // EPB_MIN, end, count = 0, line = off
    columns = np.empty((room, 4), np.int64)  # a row per block: only the rows used are touched
    stamps = np.empty(room, np.uint64)
    cdef int64_t[:, ::1] out = columns
    cdef uint64_t[::1] ts = stamps
    cdef uint32_t caplen, origlen
    while True:
        line = _fetch(buf, off, line)
        end = _epb_end(buf, off, little, section_base, interfaces)
        if end < 0:
            break
        caplen, origlen = _u32(buf, off + 20, little), _u32(buf, off + 24, little)
        out[count, 0], out[count, 1], out[count, 2] = off + EPB_HEAD, caplen, max(origlen, caplen)
        out[count, 3] = section_base + _u32(buf, off + 8, little)
        ts[count] = <uint64_t>_u32(buf, off + 12, little) << 32 | _u32(buf, off + 16, little)
        count += 1
        off = end
    used = columns[:count].T.copy()
    return off, (used[0], used[1], used[2], used[3], stamps[:count].copy())
