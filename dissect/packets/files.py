"""A capture file of either format: the reader its first bytes call for, and the time of its first packet."""

from __future__ import annotations

from typing import BinaryIO

from kafkatap.dissect.packets.pcap import CHUNK_SIZE, CaptureFormatError, PcapReader, is_pcap
from kafkatap.dissect.packets.pcapng import PcapngReader, is_pcapng


def open_capture(path: str, chunk_size: int = CHUNK_SIZE, f: BinaryIO | None = None) -> PcapReader | PcapngReader:
    """A reader for a pcap or pcapng file (path, or the file f already open under that name: a pyarrow file of a
    URI); raises CaptureFormatError for anything else."""
    f = open(path, "rb") if f is None else f
    try:
        magic = f.read(4)
        f.seek(0)
        if is_pcap(magic):
            return PcapReader(f, path, chunk_size)
        if is_pcapng(magic):
            return PcapngReader(f, path, chunk_size)
        raise CaptureFormatError(f"{path}: not a pcap or pcapng file (starts with {magic.hex() or 'nothing'})")
    except BaseException:
        f.close()
        raise


def first_ts_us(path: str, f: BinaryIO | None = None) -> int | None:
    """Timestamp of the first packet (None for a capture without packets), reading as little as possible."""
    reader = open_capture(path, 1 << 16, f)
    try:
        return next((int(c.ts_us[0]) for c in reader.chunks()), None)
    finally:
        reader.close()
