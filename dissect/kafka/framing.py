"""Kafka framing: split one direction of a TCP stream into messages by their 4-byte size prefix.

Why a state machine rather than "read 4 bytes, read N bytes": captures have gaps, start mid-stream and carry garbage.
After any doubt (stream start, a gap, an impossible length) the framer scans for the next *plausible* frame, where a
`Sync` object decides what plausible means for its direction, and it reports every byte it skips with a reason.
It buffers at most one frame of at most `MAX_FRAME` bytes; longer frames that still look right are skipped by count.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Protocol

from kafkatap.dissect import native
from kafkatap.dissect.streams.reassembly import Where

MAX_FRAME = 100 * 1024 * 1024
"""Largest frame buffered: Kafka's own default request cap (`socket.request.max.bytes` = 104857600). A larger frame
whose header still looks right is skipped by count (`oversize_frame`), never held in memory."""

ABSURD_FRAME = 1024 * 1024 * 1024
"""A size prefix above this (e.g. 2 GB) is not a frame at all: the stream is out of step, so resynchronise."""


YES, NO, MORE = 1, 0, -1
"""Answers of `Sync.check`: the bytes at pos start a plausible frame, do not, or more bytes are needed to tell."""

SCAN_TAIL = 7
"""While resynchronising, bytes kept unscanned at the end of the buffer: a candidate needs 8 bytes to be found."""

_SIZE = struct.Struct(">i").unpack_from

Frame = tuple[Where, int, bytes]
"""(the packet carrying the frame's first byte, stream offset of its size prefix, payload after the size). The packet
is the `Where` its bytes came with, so its time, file and number travel together without a new object per frame."""

SkipHandler = Callable[[str, int, int, Where], None]
"""on_skip(reason, nbytes, stream_offset, where): bytes consumed without becoming a frame, and the packet being
handled when they were (the framer passes on the position its caller gives it)."""


class Sync(Protocol):
    """What a plausible frame start looks like in one direction (request header shape, or an awaited response)."""

    min_size: int
    """Smallest size prefix that is not a desync (a response header alone is 4 bytes; a SASL token may be 0)."""

    def check(self, buf: bytes | bytearray, pos: int) -> int:
        """YES, NO or MORE for a frame starting at buf[pos] (size prefix included)."""

    def check_start(self, buf: bytes | bytearray, pos: int) -> int:
        """YES, NO or MORE for the first frame of a stream that starts on a frame boundary (a Framer's `anchored`)."""

    def scan(self, buf: bytes | bytearray, pos: int) -> int:
        """The next position >= pos worth a `check`, or -1 if there is none in buf."""


_compiled = native.extension("kafkatap.dissect.kafka._framing")
_FIELDS = ("sync", "on_skip", "buf", "buf_at", "marks", "offset", "synced", "anchored", "skip", "skip_reason", "need")
_Base: type = _compiled.FramerFields if native.compiled and _compiled is not None else object


class Framer(_Base):  # type: ignore[valid-type, misc]
    """One direction of one connection. `feed` appends data and returns the complete frames it found."""

    # With the compiled core the fields are C struct members of the compiled base (which the compiled sink reads
    # directly); without it they are slots.
    __slots__ = _FIELDS if _Base is object else ()

    def __init__(self, sync: Sync, on_skip: SkipHandler, *, synced: bool = False, anchored: bool = False) -> None:
        """synced: the stream starts on a frame boundary and any frame may come first (a response stream after a
        SYN). anchored: it starts on a frame boundary, and its first frame needs only `sync.check_start` (a
        request stream after a SYN: the header must look like a request, its api need not be known)."""
        self.sync = sync
        self.on_skip = on_skip
        self.buf = bytearray()
        self.buf_at: Where | None = None  # the packet that carried buf[0]
        self.marks: list[tuple[int, Where]] = []
        """(stream offset, packet) of the bytes of each later packet appended to buf while out of step, when a frame
        may start anywhere in buf; in step one starts at buf[0] or in the bytes of the packet being fed."""
        self.offset = 0  # stream offset of buf[0], or of the next byte when buf is empty
        self.synced = synced
        self.anchored = anchored
        self.skip = 0  # bytes still to drop by count (an oversize frame, or the rest of a frame hit by a gap)
        self.skip_reason = ""
        self.need = 0  # buffered bytes needed before parsing can make progress

    def feed(self, data: bytes, where: Where) -> list[Frame]:
        """data: the next bytes of the stream, from the packet `where` (also the position skips are reported at)."""
        if self.skip:
            k = min(self.skip, len(data))
            self.skip -= k
            self.on_skip(self.skip_reason, k, self.offset, where)
            self.offset += k
            data = data[k:]
            if not data:
                return []
        old = len(self.buf)
        if not old and self.synced and type(data) is bytes and len(data) >= 4:
            size = _SIZE(data, 0)[0]
            if size + 4 == len(data) and self.sync.min_size <= size <= MAX_FRAME:
                # the usual segment: exactly one whole frame (what _parse and _keep would do, in one step)
                offset = self.offset
                self.offset += len(data)
                self.need = 4
                return [(where, offset, data[4:])]
        if old:
            if not self.synced:
                self.marks.append((self.offset + old, where))
            self.buf += data
            if len(self.buf) < self.need:
                return []
            buf: bytes | bytearray = self.buf
        else:
            buf = data
        frames: list[Frame] = []
        pos = self._parse(buf, frames, old, where)
        self._keep(buf, pos, self._packet_at(pos) if pos < old else where)
        return frames

    def _parse(self, buf: bytes | bytearray, frames: list[Frame], old: int, where: Where,
               final: bool = False) -> int:
        """Take every complete frame from buf; return the position of the first byte not consumed. The bytes from
        `old` on came with the packet where, those before it were buffered (`_packet_at`).

        final: no more bytes will come, so a candidate that needs more of them is not one."""
        end = len(buf)
        is_bytes = type(buf) is bytes
        pos = 0
        self.need = 0
        scan_from = 0
        while True:
            if not self.synced:
                pos = self._resync(buf, pos, scan_from, where, final)
                if not self.synced:
                    return pos
            if end - pos < 4:
                self.need = 4
                return pos
            size = _SIZE(buf, pos)[0]
            if size < self.sync.min_size or size > MAX_FRAME:
                verdict = self.sync.check(buf, pos) if MAX_FRAME < size <= ABSURD_FRAME else NO
                if verdict == MORE:
                    return pos
                if verdict == YES:
                    pos = self._skip_oversize(buf, pos, 4 + size, where)
                    continue
                self.on_skip("bad_length", 0, self.offset + pos, where)
                self.synced = False
                scan_from = pos + 1
                continue
            stop = pos + 4 + size
            if stop > end:
                self.need = stop - pos
                return pos
            payload = buf[pos + 4:stop] if is_bytes else bytes(memoryview(buf)[pos + 4:stop])  # one copy either way
            frames.append((self._packet_at(pos) if pos < old else where, self.offset + pos, payload))
            pos = stop

    def _resync(self, buf: bytes | bytearray, start: int, scan_from: int, where: Where, final: bool) -> int:
        """Scan for a plausible frame; bytes from start to it are reported as `resync`. Sets `synced` when found."""
        pos = max(start, scan_from)
        end = len(buf)
        if self.anchored and self.offset + pos == 0:
            verdict = self.sync.check_start(buf, pos)
            if verdict == MORE and not final:
                return pos
            self.anchored = False
            if verdict == YES:
                self.synced = True
                return pos
        while True:
            cand = self.sync.scan(buf, pos)
            if cand < 0:
                pos = end if final else max(pos, end - SCAN_TAIL)
                break
            verdict = self.sync.check(buf, cand)
            if verdict == YES:
                self.synced = True
                pos = cand
                break
            if verdict == MORE and not final:
                pos = cand
                break
            pos = cand + 1
        if pos > start:
            self.on_skip("resync", pos - start, self.offset + start, where)
        return pos

    def _skip_oversize(self, buf: bytes | bytearray, pos: int, total: int, where: Where) -> int:
        have = len(buf) - pos
        if have >= total:
            self.on_skip("oversize_frame", total, self.offset + pos, where)
            return pos + total
        self.on_skip("oversize_frame", have, self.offset + pos, where)
        self.skip = total - have
        self.skip_reason = "oversize_frame"
        return len(buf)

    def _packet_at(self, pos: int) -> Where:
        """The packet that carried buffered byte buf[pos]."""
        at = self.buf_at
        for offset, where in self.marks:
            if offset > self.offset + pos:
                break
            at = where
        return at

    def _keep(self, buf: bytes | bytearray, pos: int, at_pos: Where) -> None:
        """Drop consumed bytes and keep the unconsumed tail (at most one partial frame or a scan tail)."""
        self.offset += pos
        if buf is self.buf:
            if pos:
                del self.buf[:pos]
        elif pos < len(buf):
            self.buf = bytearray(buf[pos:])
        if self.buf:
            self.buf_at = at_pos
        if self.marks:
            self.marks = [m for m in self.marks if m[0] > self.offset] if self.buf else []

    def gap(self, nbytes: int, where: Where) -> None:
        """nbytes of this direction are missing from the capture: drop the frame they cut and resynchronise.

        A gap inside a frame whose size is known keeps the frame boundary: the frame's remaining bytes are skipped
        by count and the next frame is then checked (not trusted), so nothing decodable after the gap is lost.
        """
        if self.skip:
            k = min(self.skip, nbytes)
            self.skip -= k
            self.offset += k
            nbytes -= k
            if not nbytes:
                return
        have = len(self.buf)
        if have and self.synced and have >= 4:
            total = 4 + _SIZE(self.buf, 0)[0]
            left = total - have
            self.on_skip("frame_lost_in_gap", have, self.offset, where)
            self.buf = bytearray()
            self.marks = []
            if nbytes < left:
                self.offset += have + nbytes
                self.skip = left - nbytes
                self.skip_reason = "frame_lost_in_gap"
                self.synced = False
                self.need = 0
                return
            self.offset += have
        elif have:
            self.on_skip("frame_lost_in_gap" if self.synced else "resync", have, self.offset, where)
            self.offset += have
            self.buf = bytearray()
            self.marks = []
        self.offset += nbytes
        self.synced = False
        self.need = 0

    def close(self, where: Where) -> list[Frame]:
        """End of the stream: frames still found in an unscanned tail, then report what is left (a frame cut by
        the end, or bytes no frame starts in)."""
        frames: list[Frame] = []
        if self.buf and not self.synced:
            buf = self.buf
            pos = self._parse(buf, frames, len(buf), where, final=True)
            self._keep(buf, pos, self._packet_at(pos))
        if self.buf:
            self.on_skip("truncated_frame" if self.synced else "resync", len(self.buf), self.offset, where)
            self.offset += len(self.buf)
            self.buf = bytearray()
            self.marks = []
        self.need = 0
        return frames
