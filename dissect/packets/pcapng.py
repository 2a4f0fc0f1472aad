"""pcapng files: sections (either byte order), interfaces (link type, if_tsresol, if_tsoffset) and packet blocks.

Packet blocks (EPB, SPB and the obsolete OPB) are located with one minimal loop per chunk, whose runs of enhanced
packet blocks (nearly every block of a capture) go to `epb_run` or its compiled twin in `_packet_records.pyx`;
timestamps are converted to microseconds with numpy per interface. Other block types (name resolution, statistics,
custom, ...) are skipped: they carry no packet bytes.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, NamedTuple

import numpy as np

from kafkatap.dissect import native
from kafkatap.dissect.packets.arrays import distinct
from kafkatap.dissect.packets.pcap import (CHUNK_SIZE, MAX_FRAME, Anomaly, CaptureFormatError, CaptureReader, Chunk,
                                           read_on)

_packet_records = native.extension("kafkatap.dissect.packets._packet_records")

SHB = 0x0A0D0D0A
IDB, OPB, SPB, EPB = 1, 2, 3, 6
_BOM = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}
OPT_TSRESOL, OPT_TSOFFSET = 9, 14


def is_pcapng(magic: bytes) -> bool:
    return magic[:4] == b"\x0a\x0d\x0d\x0a"


class Interface(NamedTuple):
    linktype: int
    tsresol: int  # the if_tsresol byte: 10**-n, or 2**-n when the top bit is set
    tsoffset: int  # seconds added to every timestamp


def parse_idb(body: bytes, endian: str) -> Interface:
    """The body of an Interface Description Block (after type and length, before the trailing length)."""
    linktype, _, _ = struct.unpack_from(endian + "HHI", body, 0)
    tsresol, tsoffset = 6, 0
    pos = 8
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(endian + "HH", body, pos)
        value = body[pos + 4:pos + 4 + length]
        if code == 0:
            break
        if code == OPT_TSRESOL and length >= 1:
            tsresol = value[0]
        elif code == OPT_TSOFFSET and length >= 8:
            tsoffset = struct.unpack(endian + "q", value[:8])[0]
        pos += 4 + (length + 3) // 4 * 4
    return Interface(linktype, tsresol, tsoffset)


def to_us(ts: np.ndarray, iface: Interface) -> np.ndarray:
    """Raw 64-bit timestamps (uint64) of one interface -> int64 microseconds since the epoch."""
    k = iface.tsresol & 0x7F
    if iface.tsresol & 0x80:
        k = min(k, 43)  # 2**43 * 10**6 still fits in 64 bits
        mask = np.uint64((1 << k) - 1)
        us = (ts >> np.uint64(k)) * np.uint64(1_000_000) + ((ts & mask) * np.uint64(1_000_000) >> np.uint64(k))
    elif k <= 6:
        us = ts * np.uint64(10 ** (6 - k))
    else:
        us = ts // np.uint64(10 ** (k - 6))
    return us.astype(np.int64) + iface.tsoffset * 1_000_000


class PcapngReader(CaptureReader):
    """Reads one pcapng file chunk by chunk; format problems are kept in `anomalies`."""

    def __init__(self, f: BinaryIO, path: str, chunk_size: int = CHUNK_SIZE) -> None:
        head = f.read(12)
        if len(head) < 12 or not is_pcapng(head) or head[8:12] not in _BOM:
            raise CaptureFormatError(f"{path}: not a pcapng file (first block {head[:4].hex() or 'missing'})")
        f.seek(0)
        super().__init__(f, path, chunk_size)
        self.interfaces: list[Interface] = []  # every interface of every section, in file order
        self.sections = 0  # section header blocks read

    def chunks(self, start: int = 0, until: int | None = None, endian: str = "<",
               section_base: int = 0) -> Iterator[Chunk]:
        """The packet blocks starting in [start, until) (start a block boundary, where the section's byte order is
        `endian` and its interface 0 is self.interfaces[section_base]; default: the whole file)."""
        file_pos = start
        self._f.seek(start)
        buf = b""
        index = 0
        need = self._first_need(start, 0)
        while True:
            buf, more = read_on(self._f, buf, need)
            n = len(buf)
            self.buffer_end = file_pos + n
            hdr, epb = struct.Struct(endian + "II").unpack_from, struct.Struct(endian + "IIIII").unpack_from
            off = 0
            end = 0
            packets = _Packets()
            stop = False
            while off + 12 <= n:
                off, run = native.pick(epb_run, _packet_records)(buf, off, endian == "<", section_base,
                                                          len(self.interfaces))
                if len(run[0]) and until is not None and file_pos + int(run[0][-1]) - 28 >= until:
                    keep = int(np.searchsorted(run[0], until - file_pos + 28))
                    off = int(run[0][keep]) - 28
                    run = tuple(col[:keep] for col in run)
                if len(run[0]):
                    packets.extend(run)
                    index += len(run[0])
                    end = off
                    if off + 12 > n:
                        break
                if until is not None and file_pos + off >= until:
                    if packets.count:
                        yield self._chunk(buf, packets, index - packets.count, off)
                    self.next_start = file_pos + off
                    return
                btype, blen = hdr(buf, off)
                if btype == SHB:
                    endian = _BOM.get(buf[off + 8:off + 12], "")
                    if not endian:
                        stop = self._corrupt(file_pos + off, "a section header with an unknown byte-order magic", index)
                        break
                    hdr, epb = struct.Struct(endian + "II").unpack_from, struct.Struct(endian + "IIIII").unpack_from
                    blen = hdr(buf, off)[1]
                if blen < 12 or blen % 4 or blen > MAX_FRAME:
                    stop = self._corrupt(file_pos + off, f"a block (type {btype:#x}) with length {blen}", index)
                    break
                end = off + blen
                if end > n:
                    break
                if (btype == EPB or btype == OPB) and blen < 32:
                    self._bad_block(btype, blen, index, "too short for the fields of a packet block")
                elif btype == EPB or btype == OPB:
                    if btype == EPB:
                        if_id, hi, lo, cl, ol = epb(buf, off + 8)
                    else:
                        if_id, _, hi, lo, cl, ol = struct.unpack_from(endian + "HHIIII", buf, off + 8)
                    if cl > blen - 32 or section_base + if_id >= len(self.interfaces):
                        self._bad_block(btype, blen, index, f"caplen {cl}, interface {if_id}")
                    else:
                        packets.append(off + 28, cl, max(ol, cl), section_base + if_id, hi << 32 | lo)
                        index += 1
                elif btype == SPB:
                    ol = struct.unpack_from(endian + "I", buf, off + 8)[0]
                    if section_base >= len(self.interfaces):
                        self._bad_block(btype, blen, index, "no interface in this section")
                    else:
                        packets.append(off + 12, min(ol, blen - 16), ol, section_base, None)
                        index += 1
                elif btype == IDB:
                    if blen < 20:
                        self._bad_block(btype, blen, index, "interface block too short; its link type is unknown")
                        self.interfaces.append(Interface(-1, 6, 0))
                    else:
                        self.interfaces.append(parse_idb(buf[off + 8:end - 4], endian))
                elif btype == SHB:
                    section_base = len(self.interfaces)
                    self.sections += 1
                off = end
            if packets.count:
                yield self._chunk(buf, packets, index - packets.count, off)
            file_pos += off
            buf = buf[off:]
            if stop:
                file_pos = self._size
                break
            if not more or (off + 12 <= n and file_pos - off + end > self._size):
                break
            need = max(self._chunk_size, end - n)
            self.shifted |= need > self._chunk_size
        self._truncated(file_pos, index, "block")

    def _corrupt(self, at: int, what: str, index: int) -> bool:
        left = self._size - at
        self.anomalies.append(Anomaly("corrupt_block", f"{what} at file offset {at}; the rest of the file "
                                      "is skipped", left, index))
        return True

    def _bad_block(self, btype: int, blen: int, index: int, what: str) -> None:
        self.anomalies.append(Anomaly("corrupt_block", f"block type {btype} skipped: {what}", blen, index))

    def _chunk(self, buf: bytes, packets: _Packets, index: int, nbytes: int) -> Chunk:
        offs, caplens, origlens, iface, raw = packets.columns()
        untimed = packets.untimed
        ts_us = np.zeros(len(iface), np.int64)
        linktype = np.zeros(len(iface), np.int64)
        for i in distinct(iface):
            sel = iface == i
            linktype[sel] = self.interfaces[i].linktype
            ts_us[sel] = to_us(raw[sel], self.interfaces[i])
        if untimed:  # a simple packet block takes the time of the packet before it
            has_ts = np.ones(len(iface), bool)
            has_ts[untimed] = False
            last = np.maximum.accumulate(np.where(has_ts, np.arange(len(iface)), -1))
            ts_us = np.where(last >= 0, ts_us[np.maximum(last, 0)], 0)
        return Chunk(buf, np.frombuffer(buf, np.uint8), offs, caplens, origlens, ts_us, linktype, index, nbytes)


Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # offs, caplens, origlens, ifaces, stamps


def epb_run(buf: bytes, off: int, little: bool, section_base: int, interfaces: int) -> tuple[int, Columns]:
    """The enhanced packet blocks from off on that are whole, well formed and of a known interface: (offset after
    them, their columns: packet data offset, caplen, origlen, interface, raw 64-bit timestamp). The block it stops
    at is the chunk loop's to handle, however odd."""
    epb = struct.Struct("<7I" if little else ">7I").unpack_from
    n = len(buf)
    offs: list[int] = []
    caplens: list[int] = []
    origlens: list[int] = []
    ifaces: list[int] = []
    stamps: list[int] = []
    while off + 32 <= n:
        btype, blen, if_id, hi, lo, cl, ol = epb(buf, off)
        if (btype != EPB or blen < 32 or blen % 4 or blen > MAX_FRAME or off + blen > n or cl > blen - 32
                or section_base + if_id >= interfaces):
            break
        offs.append(off + 28)
        caplens.append(cl)
        origlens.append(max(ol, cl))
        ifaces.append(section_base + if_id)
        stamps.append(hi << 32 | lo)
        off += blen
    return off, tuple(np.array(col, dtype)
                      for col, dtype in zip((offs, caplens, origlens, ifaces, stamps), _DTYPES))


class _Packets:
    """The packet blocks of one chunk: runs of columns from epb_run, blocks appended one at a time between them."""

    def __init__(self) -> None:
        self.runs: list[Columns] = []
        self.rows: list[tuple[int, int, int, int, int]] = []
        self.untimed: list[int] = []  # positions of simple packet blocks, which have no timestamp
        self.count = 0

    def append(self, off: int, caplen: int, origlen: int, iface: int, stamp: int | None) -> None:
        """One packet block; stamp None for a simple packet block."""
        if stamp is None:
            self.untimed.append(self.count)
        self.rows.append((off, caplen, origlen, iface, stamp or 0))
        self.count += 1

    def extend(self, run: Columns) -> None:
        self._close_rows()
        self.runs.append(run)
        self.count += len(run[0])

    def columns(self) -> Columns:
        self._close_rows()
        if len(self.runs) == 1:
            return self.runs[0]
        return tuple(np.concatenate([run[k] for run in self.runs] or [np.zeros(0, dtype)])
                     for k, dtype in enumerate(_DTYPES))

    def _close_rows(self) -> None:
        if self.rows:
            self.runs.append(tuple(np.array(col, dtype)
                                   for col, dtype in zip(zip(*self.rows), _DTYPES)))
            self.rows = []


_DTYPES = (np.int64, np.int64, np.int64, np.int64, np.uint64)
