# cython: boundscheck=True, wraparound=False
"""Compiled twin of frames.parse_frames: each frame of a chunk goes through link, IP and TCP in one C pass, where
the numpy reference makes dozens of passes over the whole chunk, each allocating its result.

Same arguments, same results (tests/dissect/packets/test_compiled.py holds the two to that). The verdicts and link
types below mirror frames.py, link.py, ip.py and tcp.py. Every read of the hostile bytes is checked: `_at` clamps
the offset to the buffer's last byte exactly as the numpy gather does (gather.py), so a header cut short reads the
same bytes the reference reads and gets the same status; offsets are never negative (checked once per frame), and
Cython's bounds checks stay on for the arrays.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t

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

# verdicts: frames.py
cdef enum:
    UNKNOWN_LINK, NOT_IP, BAD_LINK, BAD_IP, SHORT_IP, NOT_TCP, SLOW, BAD_TCP, SHORT_TCP, SEGMENT, ACK_ONLY, IDLE

# link types: link.py
cdef enum:
    LT_NULL = 0
    LT_ETHERNET = 1
    LT_RAW_OPENBSD = 12
    LT_RAW_BSDOS = 14
    LT_RAW = 101
    LT_LOOP = 108
    LT_SLL = 113
    LT_IPV4 = 228
    LT_IPV6 = 229
    LT_SLL2 = 276

cdef enum:
    MAX_VLAN_TAGS = 8
    TCP = 6
    FIN_SYN_RST = 0x07
    ACK = 0x10
    COLUMNS = 14  # frames.Segments
    AHEAD = 8  # frames whose headers are fetched into the cache while one is parsed

cdef struct Buf:
    const uint8_t* p
    int64_t last  # index of the last byte (the buffer is never empty when there are frames)

cdef struct Frame:
    int verdict
    int64_t l3, src_hi, src_lo, dst_hi, dst_lo, ports, seq, ack, flags, payload, payload_len, missing, window


cdef inline int64_t _at(Buf b, int64_t i) noexcept:
    """The byte at i, or the last one when i is past it (compared unsigned: a negative i would clamp too)."""
    return b.p[i if <uint64_t>i < <uint64_t>b.last else b.last]

cdef inline int64_t _be16(Buf b, int64_t i) noexcept:
    return _at(b, i) << 8 | _at(b, i + 1)

cdef inline int64_t _le16(Buf b, int64_t i) noexcept:
    return _at(b, i + 1) << 8 | _at(b, i)

cdef inline int64_t _be32(Buf b, int64_t i) noexcept:
    return _be16(b, i) << 16 | _be16(b, i + 2)

cdef inline int64_t _le32(Buf b, int64_t i) noexcept:
    return _le16(b, i + 2) << 16 | _le16(b, i)

cdef inline int64_t _be64(Buf b, int64_t i) noexcept:
    return <int64_t>(<uint64_t>_be32(b, i) << 32 | <uint64_t>_be32(b, i + 4))


cdef inline void _prefetch(Buf b, const int64_t[:] off, Py_ssize_t i) noexcept:
    """Ask for the two cache lines of frame i's headers: parsing waits on memory, not on arithmetic, otherwise."""
    cdef int64_t at
    if i < off.shape[0]:
        at = off[i]
        KAFKATAP_PREFETCH(&b.p[at if <uint64_t>at < <uint64_t>b.last else b.last])
        at += 64
        KAFKATAP_PREFETCH(&b.p[at if <uint64_t>at < <uint64_t>b.last else b.last])


cdef inline int _version(int64_t ethertype) noexcept:
    return 4 if ethertype == 0x0800 else 6 if ethertype == 0x86DD else 0


cdef int _link(Buf b, int64_t off, int64_t caplen, int64_t linktype, Frame* f) noexcept:
    """link.network_layer for one frame: the IP version (0 = read it from the header), or -1 with f.verdict set."""
    cdef int64_t ethertype, family
    cdef int version, k
    if linktype == LT_ETHERNET or linktype == LT_SLL or linktype == LT_SLL2:
        if linktype == LT_ETHERNET:
            ethertype, f.l3 = _be16(b, off + 12), off + 14
            for k in range(MAX_VLAN_TAGS):
                if ethertype != 0x8100 and ethertype != 0x88A8 and ethertype != 0x9100:
                    break
                ethertype, f.l3 = _be16(b, f.l3 + 2), f.l3 + 4
        elif linktype == LT_SLL:
            ethertype, f.l3 = _be16(b, off + 14), off + 16
        else:
            ethertype, f.l3 = _be16(b, off), off + 20
        version = _version(ethertype)
        f.verdict = BAD_LINK if f.l3 - off > caplen else NOT_IP if version == 0 else -1
        return version if f.verdict < 0 else -1
    if linktype == LT_NULL or linktype == LT_LOOP:
        family = _le32(b, off)
        if (family & 0xFFFF) == 0:  # written in the other byte order
            family = ((family >> 24) & 0xFF) | ((family >> 8) & 0xFF00)
        version = 4 if family == 2 else 6 if family == 24 or family == 28 or family == 30 else 0
        f.l3 = off + 4
        f.verdict = BAD_LINK if caplen < 4 else NOT_IP if version == 0 else -1
        return version if f.verdict < 0 else -1
    if (linktype == LT_RAW or linktype == LT_RAW_OPENBSD or linktype == LT_RAW_BSDOS or linktype == LT_IPV4
            or linktype == LT_IPV6):
        f.l3 = off
        f.verdict = BAD_LINK if caplen < 1 else -1
        return (4 if linktype == LT_IPV4 else 6 if linktype == LT_IPV6 else 0) if f.verdict < 0 else -1
    f.verdict = UNKNOWN_LINK
    return -1


cdef void _parse(Buf b, int64_t off, int64_t caplen, int64_t origlen, int64_t linktype, Frame* f) noexcept:
    """One frame through link (above), ip.parse_ip and tcp.parse_tcp, with the driver's segment/ACK split."""
    cdef int64_t version = _link(b, off, caplen, linktype, f)
    if version < 0:
        return
    cdef int64_t l3 = f.l3, cap_end = off + caplen, avail = cap_end - l3
    cdef int64_t first = _at(b, l3), nibble = first >> 4
    if version == 0:
        version = nibble
    cdef bint v4 = version == 4
    cdef int64_t ihl = (first & 0x0F) * 4, hlen, total, proto, frag = 0
    if v4:
        hlen, total, proto, frag = ihl, _be16(b, l3 + 2), _at(b, l3 + 9), _be16(b, l3 + 6) & 0x3FFF
        if total == 0:  # TSO: length 0, use the frame
            total = avail
    else:
        hlen, total, proto = 40, _be16(b, l3 + 4) + 40, _at(b, l3 + 6)
        if total == 40:  # jumbogram/TSO: length 0, use the frame
            total = avail
    cdef int64_t ip_end = l3 + total
    cdef int64_t l4end = ip_end if ip_end < cap_end else cap_end
    cdef int64_t wire = ip_end if ip_end < off + origlen else off + origlen
    f.missing = wire - cap_end if wire > cap_end else 0
    if nibble == version and avail < ((ihl if ihl > 20 else 20) if v4 else 40):
        f.verdict = SHORT_IP
    elif nibble != version or not (v4 or version == 6) or (v4 and (ihl < 20 or total < ihl)):
        f.verdict = BAD_IP
    elif (frag != 0 and proto == TCP) if v4 else (proto == 0 or proto == 43 or proto == 60 or proto == 51
                                                  or proto == 44):
        f.verdict = SLOW
    elif proto != TCP:
        f.verdict = NOT_TCP
    if f.verdict >= 0:
        return
    if v4:
        f.src_hi, f.src_lo, f.dst_hi, f.dst_lo = -1, _be32(b, l3 + 12), -1, _be32(b, l3 + 16)
    else:
        f.src_hi, f.src_lo = _be64(b, l3 + 8), _be64(b, l3 + 16)
        f.dst_hi, f.dst_lo = _be64(b, l3 + 24), _be64(b, l3 + 32)
    cdef int64_t l4 = l3 + hlen, thl = (_at(b, l4 + 12) >> 4) * 4
    if l4end - l4 < (thl if thl > 20 else 20):
        f.verdict = SHORT_TCP
        return
    if thl < 20:
        f.verdict = BAD_TCP
        return
    f.ports = _be16(b, l4) << 16 | _be16(b, l4 + 2)
    f.seq, f.ack, f.flags = _be32(b, l4 + 4), _be32(b, l4 + 8), _at(b, l4 + 13) & 0x3F
    f.window = _be16(b, l4 + 14)
    f.payload = l4 + thl
    f.payload_len = l4end - f.payload if l4end > f.payload else 0
    if f.payload_len > 0 or f.missing > 0 or f.flags & FIN_SYN_RST:
        f.verdict = SEGMENT
    else:
        f.verdict = ACK_ONLY if f.flags & ACK else IDLE


def parse_frames(const uint8_t[::1] buf, const int64_t[:] off, const int64_t[:] caplen, const int64_t[:] origlen,
                 const int64_t[:] ts_us, const int64_t[:] linktype):
    """(verdict per frame, Segments columns of the SEGMENT frames, of the ACK_ONLY frames, l3 of the SLOW frames).

    One pass: each frame's columns go into a row of one table, the segments' from the top, the ACKs' from the bottom
    (a frame is one or the other), so nothing is parsed twice and no per-verdict count is needed first."""
    cdef Py_ssize_t n = off.shape[0], i, j, s = 0, a = n, w = 0
    if not (caplen.shape[0] == origlen.shape[0] == ts_us.shape[0] == linktype.shape[0] == n):
        raise ValueError("the frame arrays differ in length")
    if n and buf.shape[0] == 0:
        raise ValueError("frames in an empty buffer")
    cdef Buf b
    b.last = buf.shape[0] - 1
    b.p = &buf[0] if n else NULL
    cdef Frame f
    verdict, rows, l3s = np.empty(n, np.int8), np.empty((n, COLUMNS), np.int64), np.empty(n, np.int64)
    cdef signed char[::1] v = verdict
    cdef int64_t[:, ::1] out = rows
    cdef int64_t[::1] l3 = l3s
    cdef int64_t limit = (<int64_t>1) << 48
    for i in range(n):
        if not (0 <= off[i] <= buf.shape[0] and 0 <= caplen[i] <= buf.shape[0] and 0 <= origlen[i] < limit):
            raise ValueError(f"frame {i} lies outside the buffer")
        _prefetch(b, off, i + AHEAD)
        f.verdict = -1
        _parse(b, off[i], caplen[i], origlen[i], linktype[i], &f)
        v[i] = f.verdict
        if f.verdict == SLOW:
            l3[w] = f.l3
            w += 1
        elif f.verdict == SEGMENT or f.verdict == ACK_ONLY:
            if f.verdict == SEGMENT:
                j, s = s, s + 1
            else:
                j, a = a - 1, a - 1
            out[j, 0], out[j, 1], out[j, 2], out[j, 3], out[j, 4] = i, ts_us[i], f.src_hi, f.src_lo, f.dst_hi
            out[j, 5], out[j, 6], out[j, 7], out[j, 8], out[j, 9] = f.dst_lo, f.ports, f.seq, f.ack, f.flags
            out[j, 10], out[j, 11], out[j, 12], out[j, 13] = f.payload, f.payload_len, f.missing, f.window
    return verdict, tuple(rows[:s].T), tuple(rows[a:][::-1].T), l3s[:w]
