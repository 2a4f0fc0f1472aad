"""Cut a capture file back to its last complete record.

An engine killed by a full disk (or SIGKILL) can leave half a packet at the end of the file it was writing; readers
then stop with "cut short in the middle of a packet". Walking the record lengths finds the last whole record. Written
by hand because it needs byte offsets, which packet readers (scapy, dpkt, our dissector) do not expose.
"""

from __future__ import annotations

import os
import struct

_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}
_SHB = b"\x0a\x0d\x0d\x0a"
_BOM = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}


def complete_length(path: str) -> int:
    """Bytes of `path` that form whole records (0: not even a whole file header)."""
    size = os.path.getsize(path)
    with open(path, "rb", buffering=1 << 20) as f:
        head = f.read(12)
        if head[:4] in _PCAP_MAGICS:
            return _pcap_length(f, size, _PCAP_MAGICS[head[:4]])
        if head[:4] == _SHB and head[8:12] in _BOM:
            return _pcapng_length(f, size)
    return 0


def _pcap_length(f, size: int, endian: str) -> int:
    good = 24
    if size < good:
        return 0
    header = struct.Struct(endian + "8xI4x")
    while good + 16 <= size:
        f.seek(good)
        incl_len, = header.unpack(f.read(16))
        if good + 16 + incl_len > size:
            break
        good += 16 + incl_len
    return good


def _pcapng_length(f, size: int) -> int:
    # Each block: type, total length, body, total length again. A new section (SHB) may switch the byte order.
    good = 0
    endian = "<"
    while good + 12 <= size:
        f.seek(good)
        head = f.read(12)
        if head[:4] == _SHB:
            endian = _BOM.get(head[8:12], "")
            if not endian:
                break
        length, = struct.unpack(endian + "I", head[4:8])
        if length < 12 or length % 4 or good + length > size:
            break
        f.seek(good + length - 4)
        if struct.unpack(endian + "I", f.read(4))[0] != length:
            break
        good += length
    return good


def trim(path: str) -> int:
    """Truncate `path` to its whole records; remove it if no whole header is left. Returns the bytes cut."""
    size = os.path.getsize(path)
    keep = complete_length(path)
    if keep == 0:
        os.unlink(path)
    elif keep < size:
        os.truncate(path, keep)
    return size - keep
