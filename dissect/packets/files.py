"""A capture file of either format: the reader its first bytes call for, and the time of its first packet."""

from __future__ import annotations

from kafkatap.dissect.packets.pcap import CHUNK_SIZE, CaptureFormatError, PcapReader, is_pcap
from kafkatap.dissect.packets.pcapng import PcapngReader, is_pcapng


def open_capture(path: str, chunk_size: int = CHUNK_SIZE) -> PcapReader | PcapngReader:
    """A reader for a pcap or pcapng file; raises CaptureFormatError for anything else."""
    f = open(path, "rb")
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


def first_ts_us(path: str) -> int | None:
    """Timestamp of the first packet (None for a capture without packets), reading as little as possible."""
    reader = open_capture(path, chunk_size=1 << 16)
    try:
        return next((int(c.ts_us[0]) for c in reader.chunks()), None)
    finally:
        reader.close()
