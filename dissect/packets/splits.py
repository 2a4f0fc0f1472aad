"""Splits of a capture file: byte ranges that separate tasks read, each the records that start inside it.

A record's length is only known from the record before it, so a split that starts inside a file begins at the first
offset where CHAIN record headers (pcap) or blocks (pcapng) in a row hold together (`find_start`). That is a guess: a
packet whose bytes look like records, or a damaged file, can fool it. So every split also says where the records go on
after it (`Split.next_start`), and the caller checks that each split began where the one before it left off and that
nothing in the file changes what the head said (a second section, a later interface, a record longer than a read):
a file that fails is read again from its start as one split (`Split.plain`), which is the sequential reader itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from kafkatap.dissect.packets.files import open_capture
from kafkatap.dissect.packets.pcap import MAX_FRAME, Anomaly, Chunk, PcapReader
from kafkatap.dissect.packets.pcapng import _BOM, EPB, IDB, OPB, SHB, SPB, Interface, PcapngReader, parse_idb

CHAIN = 8  # records (pcap) or blocks (pcapng) in a row that must hold together where a split starts
DAY_S = 86_400  # largest time step between two records of a chain
YEAR_S = 366 * DAY_S  # largest distance of a pcap record's time from the file's first one
_BLOCK_TYPES = {SHB, IDB, OPB, SPB, 4, 5, EPB, 7, 9, 0xA, 0xB, 0xBAD, 0x40000BAD}  # pcapng's registered block types
_HEAD_BYTES = 1 << 20  # a pcapng head (section header and interfaces) longer than this is not looked for further


class Head(NamedTuple):
    """Where the records of a file may start, and for pcapng the state its first blocks declare."""

    first: int  # offset of the first record (pcap) or of the first block that is not a section or interface block
    endian: str
    interfaces: tuple[Interface, ...]
    section_base: int
    first_sec: int | None  # pcap: the seconds of the first record's time


class Piece(NamedTuple):
    """A chunk of a split, and which chunk of a whole-file read (numbered from 0) it belongs to."""

    chunk: Chunk
    window: int


def head(reader: PcapReader | PcapngReader, f: BinaryIO) -> Head:
    if isinstance(reader, PcapReader):
        f.seek(24)
        first = f.read(4)
        return Head(24, reader.endian, (), 0, struct.unpack(reader.endian + "I", first)[0] if len(first) == 4 else None)
    f.seek(0)
    data = f.read(_HEAD_BYTES)
    endian, interfaces, base, off = "<", [], 0, 0
    while off + 12 <= len(data):
        btype = struct.unpack_from(endian + "I", data, off)[0]
        if btype == SHB:
            endian = _BOM.get(data[off + 8:off + 12], "")
            if not endian:
                break
            base = len(interfaces)
        elif btype not in _BLOCK_TYPES or btype in (EPB, SPB, OPB):
            break
        blen = struct.unpack_from(endian + "I", data, off + 4)[0]
        if blen < 12 or blen % 4 or off + blen > len(data):
            break
        if btype == IDB:
            if blen < 20:
                break
            interfaces.append(parse_idb(data[off + 8:off + blen - 4], endian))
        off += blen
    return Head(off, endian or "<", tuple(interfaces), base, None)


class _Bytes:
    """The file's bytes from `at` on, read as far as they are asked for."""

    def __init__(self, f: BinaryIO, at: int, size: int) -> None:
        self.f, self.at, self.size, self.data = f, at, size, b""

    def get(self, off: int, n: int) -> bytes | None:
        """n bytes at file offset off, None past the end of the file."""
        if off + n > self.size:
            return None
        while off + n > self.at + len(self.data):
            self.f.seek(self.at + len(self.data))
            self.data += self.f.read(max(1 << 16, len(self.data)))
        return self.data[off - self.at:off - self.at + n]


def _pcap_chain(b: _Bytes, at: int, reader: PcapReader, first_sec: int | None) -> bool:
    unpack = struct.Struct(reader.endian + "IIII").unpack
    limit = 1_000_000 * reader.frac_div
    last = None
    for k in range(CHAIN):
        hdr = b.get(at, 16)
        if hdr is None:  # a file cut inside a record header
            return k > 0
        sec, frac, caplen, origlen = unpack(hdr)
        if (frac >= limit or caplen > origlen or origlen > MAX_FRAME or abs(sec - (first_sec or sec)) > YEAR_S
                or (last is not None and abs(sec - last) > DAY_S)):
            return False
        at += reader.rec_len + caplen
        last = sec
        if at == b.size or (at > b.size and k > 0):  # the file ends here, or inside a record after whole ones
            return True
    return True


def _pcapng_chain(b: _Bytes, at: int, h: Head) -> bool:
    unpack = struct.Struct(h.endian + "II").unpack
    for k in range(CHAIN):
        hdr = b.get(at, 8)
        if hdr is None:  # a file cut inside a block header
            return k > 0
        btype, blen = unpack(hdr)
        if btype not in _BLOCK_TYPES or btype == SHB or blen < 12 or blen % 4 or blen > MAX_FRAME:
            return False
        tail = b.get(at + blen - 4, 4)
        if tail is None:  # a file cut inside this block, after whole ones
            return k > 0
        if unpack(hdr[:4] + tail)[1] != blen:
            return False
        if btype == EPB:
            fields = b.get(at + 8, 16)
            if_id, caplen = struct.unpack(h.endian + "I8xI", fields)
            if blen < 32 or caplen > blen - 32 or h.section_base + if_id >= len(h.interfaces):
                return False
        at += blen
        if at == b.size:
            return True
    return True


def find_start(reader: PcapReader | PcapngReader, f: BinaryIO, h: Head, lo: int, hi: int) -> int | None:
    """The first offset in [lo, hi) where CHAIN records in a row hold together (None: no record starts there)."""
    size = reader._size
    b = _Bytes(f, lo, size)
    pcapng = isinstance(reader, PcapngReader)
    at = lo + (-lo % 4 if pcapng else 0)  # pcapng blocks start at multiples of 4
    while at < min(hi, size):
        if _pcapng_chain(b, at, h) if pcapng else _pcap_chain(b, at, reader, h.first_sec):
            return at
        at += 4 if pcapng else 1
        if at - b.at > 1 << 22 and at - b.at > 2 * len(b.data) // 3:  # forget what is behind
            keep = at - b.at
            b.data, b.at = b.data[keep:], at
    return None


class Split:
    """The records starting in [lo, hi) of one file, chunk by chunk (`pieces`); then `start` (the first record read,
    None when none starts there), `next_start` (the record after the range; None when the file ended in it),
    `anomalies` (each with the whole-file chunk it was found in) and `plain` (nothing in the range contradicts the
    file's head: see the module's docstring)."""

    def __init__(self, path: str, f: BinaryIO, lo: int, hi: int, chunk_size: int) -> None:
        self.path, self.f, self.lo, self.hi, self.chunk_size = path, f, lo, hi, chunk_size
        self.reader = open_capture(path, chunk_size, f)
        self.head = head(self.reader, f)
        self.base = 24 if isinstance(self.reader, PcapReader) else 0
        self.start: int | None = None
        self.next_start: int | None = None
        self.anomalies: list[tuple[Anomaly, int]] = []
        self.plain = True

    def window(self) -> int:
        """The whole-file read chunk that the reader's last read belongs to."""
        return max(0, (self.reader.buffer_end - self.base - 1) // self.chunk_size)

    def pieces(self) -> Iterator[Piece]:
        r, h = self.reader, self.head
        if self.lo == 0:  # reads the head whole, wherever hi is: the next split starts after it
            self.start = self.base
            chunks = r.chunks(self.base, max(self.hi, h.first))
        else:
            self.start = find_start(r, self.f, h, max(self.lo, h.first), self.hi)
            if self.start is None:
                return
            if isinstance(r, PcapngReader):
                r.interfaces = list(h.interfaces)
                chunks = r.chunks(self.start, self.hi, h.endian, h.section_base)
            else:
                chunks = r.chunks(self.start, self.hi)
        for chunk in chunks:
            yield Piece(chunk, self.window())
            self._anomalies()
        self._anomalies()
        self.next_start = r.next_start
        if isinstance(r, PcapngReader):
            sections = 1 if self.lo == 0 else 0
            self.plain = r.sections == sections and len(r.interfaces) == len(h.interfaces)
        self.plain &= not r.shifted

    def _anomalies(self) -> None:
        window = self.window()
        self.anomalies += [(a, window) for a in self.reader.anomalies]
        self.reader.anomalies.clear()

    def close(self) -> None:
        self.reader.close()


class Outcome(NamedTuple):
    """What a split found, all its reader needs to know to tell whether the splits of a file agree."""

    lo: int
    hi: int
    start: int | None
    next_start: int | None
    plain: bool


def agree(outcomes: list[Outcome]) -> bool:
    """Whether the splits of one file (in order) read exactly the records a read from its start reads: each begins
    where the records before it go on, none begins after the file ended, and none contradicts the head."""
    carried: int | None = None  # where the records go on (None: the file ended)
    for k, o in enumerate(outcomes):
        if not o.plain:
            return False
        if k and (o.start != carried if carried is not None and carried < o.hi else o.start is not None):
            return False
        if k == 0 or (carried is not None and carried < o.hi):
            carried = o.next_start
    return True


def ranges(size: int, split_size: int) -> list[tuple[int, int]]:
    """The byte ranges of a file of `size` bytes (one at least, for a file without records)."""
    return [(lo, min(lo + split_size, size)) for lo in range(0, max(size, 1), split_size)]
