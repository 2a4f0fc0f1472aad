"""Classic pcap files: global header, then records cut into big chunks of whole frames.

One minimal loop walks the records (a record's length is only known from its header), reading each one's header as
it goes: `record_walk`, or its compiled twin in `_packet_records.pyx`. A frame may be longer than the snaplen and
longer than 65,535 bytes (loopback/GSO captures): only the bytes left in the file bound it.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO, Iterator, NamedTuple

import numpy as np

from kafkatap.dissect import native

_packet_records = native.extension("kafkatap.dissect.packets._packet_records")

CHUNK_SIZE = 16 << 20
"""Bytes read at a time. Below glibc's largest dynamic mmap threshold (32 MiB): once the first chunk is freed, the
next ones reuse that heap memory instead of mapping fresh pages, which cost a page fault each (twice the run time of
a bulk capture at 32 MiB)."""
LINKTYPE_MASK = 0x0FFFFFFF  # the upper bits of the link type field carry FCS information
MAX_FRAME = 64 << 20  # no real frame is this long (GSO/BIG TCP tops out near 512 KB): a longer one is a corrupt header


class CaptureFormatError(ValueError):
    """The file is not a pcap/pcapng capture this reader understands (a user error, reported per file)."""


class Chunk(NamedTuple):
    """Whole frames read from one capture file, as arrays over one buffer."""

    buf: bytes
    data: np.ndarray  # uint8 view of buf
    off: np.ndarray  # int64: start of each frame in buf
    caplen: np.ndarray  # int64: captured bytes of each frame
    origlen: np.ndarray  # int64: bytes the frame had on the wire
    ts_us: np.ndarray  # int64: microseconds since the epoch
    linktype: np.ndarray  # int64: link type of each frame
    index0: int  # packet index (0-based, in the file) of the first frame
    nbytes: int  # file bytes this chunk consumed


class Anomaly(NamedTuple):
    """A problem of the file format, kept by the reader until the driver reports it."""

    kind: str
    detail: str
    nbytes: int
    packet_index: int


# magic as read from the file -> (byte order, fraction units per microsecond divisor, record header length)
_MAGICS: dict[bytes, tuple[str, int, int]] = {
    b"\xd4\xc3\xb2\xa1": ("<", 1, 16),
    b"\xa1\xb2\xc3\xd4": (">", 1, 16),
    b"\x4d\x3c\xb2\xa1": ("<", 1000, 16),  # nanosecond resolution
    b"\xa1\xb2\x3c\x4d": (">", 1000, 16),
    b"\x34\xcd\xb2\xa1": ("<", 1, 24),  # Kuznetzov's modified pcap: 8 more header bytes per record
    b"\xa1\xb2\xcd\x34": (">", 1, 24),
}


def is_pcap(magic: bytes) -> bool:
    return magic[:4] in _MAGICS


class CaptureReader:
    """What the pcap and pcapng readers share: the open file, its size, the chunk size, the anomalies found.

    A reader may also read only the records that start in a byte range (`chunks(start, until)`: a Spark task's split
    of a file). Its reads then end where a read of the whole file would end them, so each chunk lies within one chunk
    of the whole file's read (`buffer_end` says which); `next_start` is the first record at or after `until` (None when
    the file ended first), and `shifted` says a record longer than the chunk size moved those read ends."""

    def __init__(self, f: BinaryIO, path: str, chunk_size: int) -> None:
        self.path = path
        self.anomalies: list[Anomaly] = []
        self._f = f
        self._size = f.size() if hasattr(f, "size") else os.fstat(f.fileno()).st_size  # pyarrow files: no fd
        self._chunk_size = chunk_size
        self.buffer_end = 0  # file offset where the read of the chunk last yielded ended
        self.next_start: int | None = None
        self.shifted = False

    def _first_need(self, start: int, base: int) -> int:
        """Bytes to read first from `start` so that the read ends where a read from `base` would."""
        return self._chunk_size - (start - base) % self._chunk_size

    def close(self) -> None:
        self._f.close()

    def _truncated(self, file_pos: int, index: int, unit: str) -> None:
        """Report the bytes from file_pos to the end, if any, as a capture cut inside a record or block."""
        left = self._size - file_pos
        if left > 0:
            self.anomalies.append(Anomaly(
                "truncated_file", f"{left} bytes at the end of the file do not form a whole {unit}", left, index))


class PcapReader(CaptureReader):
    """Reads one classic pcap file chunk by chunk; format problems are kept in `anomalies`."""

    def __init__(self, f: BinaryIO, path: str, chunk_size: int = CHUNK_SIZE) -> None:
        head = f.read(24)
        if len(head) < 24 or head[:4] not in _MAGICS:
            raise CaptureFormatError(f"{path}: not a pcap file (magic {head[:4].hex() or 'missing'})")
        self.endian, self.frac_div, self.rec_len = _MAGICS[head[:4]]
        self.nano = self.frac_div == 1000
        _, _, _, _, self.snaplen, network = struct.unpack(self.endian + "HHiIII", head[4:24])
        self.linktype = network & LINKTYPE_MASK
        super().__init__(f, path, chunk_size)

    def chunks(self, start: int = 24, until: int | None = None) -> Iterator[Chunk]:
        """The records starting in [start, until) (start a record boundary; default: the whole file)."""
        hl = self.rec_len
        file_pos = start  # file offset of buf[0]
        self._f.seek(start)
        buf = b""
        index = 0
        need = self._first_need(start, 24)
        while True:
            buf, more = read_on(self._f, buf, need)
            n = len(buf)
            records, off, end = native.pick(record_walk, _packet_records)(buf, hl, self.endian == "<")
            offs = records[0]
            self.buffer_end = file_pos + n
            if until is not None and file_pos + off >= until:
                cut = int(np.searchsorted(offs, until - file_pos))
                if cut < len(offs):
                    records, off = tuple(column[:cut] for column in records), int(offs[cut])
                if cut:
                    yield self._chunk(buf, records, index, off)
                self.next_start = file_pos + off
                return
            if len(offs):
                yield self._chunk(buf, records, index, off)
                index += len(offs)
            file_pos += off
            buf = buf[off:]
            if not more:
                break
            if off + hl <= n and file_pos - off + end > self._size:
                break  # the record header promises more bytes than the file has: a cut file
            if off + hl <= n and end - off > MAX_FRAME:
                self.anomalies.append(Anomaly(
                    "corrupt_record", f"a record header claims {end - off - hl} bytes; the rest of the file is skipped",
                    self._size - file_pos, index))
                file_pos = self._size
                break
            need = max(self._chunk_size, end - n)
            self.shifted |= need > self._chunk_size
        self._truncated(file_pos, index, "record")

    def _chunk(self, buf: bytes, records: tuple[np.ndarray, ...], index: int, nbytes: int) -> Chunk:
        o, seconds, fractions, caplen, origlen = records
        return Chunk(buf, np.frombuffer(buf, np.uint8), o + self.rec_len, caplen, np.maximum(origlen, caplen),
                     seconds * 1_000_000 + fractions // self.frac_div, np.full(len(o), self.linktype, np.int64),
                     index, nbytes)


def read_on(f: BinaryIO, held: bytes, need: int) -> tuple[bytes, bool]:
    """The held bytes (the last ones read and not used yet) and up to `need` more, as one bytes object, and whether
    more came. Read again from where `held` starts instead of concatenated: one allocation and one copy of a chunk
    rather than two (the held bytes, less than a packet, come from the page cache again)."""
    if held:
        f.seek(-len(held), os.SEEK_CUR)
    buf = f.read(len(held) + need)
    return buf, len(buf) > len(held)


def record_walk(buf: bytes, head: int, little: bool) -> tuple[tuple[np.ndarray, ...], int, int]:
    """(the whole records at the start of buf as int64 columns of their offsets and their headers' fields: seconds,
    fractions of a second, caplen, origlen; offset after the last of them; end of the record the walk stopped at or
    after); head is the record header's length. The fields are read by the walk, which reads each header anyway: as
    numpy gathers at the offsets afterwards they were half the reading of a chatty capture."""
    fields_at = struct.Struct("<IIII" if little else ">IIII").unpack_from
    n = len(buf)
    off = end = 0
    rows: list[tuple[int, int, int, int, int]] = []
    append = rows.append
    while off + head <= n:
        seconds, fraction, caplen, origlen = fields_at(buf, off)
        end = off + head + caplen
        if end > n:
            break
        append((off, seconds, fraction, caplen, origlen))
        off = end
    columns = np.array(rows, np.int64).reshape(-1, 5).T
    return tuple(np.ascontiguousarray(column) for column in columns), off, end
