"""Seeded fuzzing of the compiled packet layer: mutated frames and record headers fed straight into each compiled
function must never crash it and must give exactly what its pure-Python twin gives. Bounded by count, not time."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from kafkatap.dissect import native
from kafkatap.dissect.packets import frames, pcap, pcapng
from tests.support.frames import assert_same, damage, shapes

try:
    from kafkatap.dissect.packets import _frames, _packet_records
except ImportError:
    pytestmark = pytest.mark.skip(reason="the compiled core is not built (pure-Python run)")

CHUNKS = 1500
LINKS = sorted({lt for lt, _ in shapes()})


def chunk(rnd: random.Random, corpus: list[tuple[int, bytes]]) -> tuple:
    """The arguments of parse_frames for up to 24 damaged frames, with junk between them and a link type that is
    now and then not the frame's own."""
    parts, off, caplen, origlen, linktype = [], [], [], [], []
    pos = 0
    for _ in range(rnd.randrange(1, 25)):
        lt, frame = rnd.choice(corpus)
        cut, wire = damage(frame, rnd)
        junk = rnd.randbytes(rnd.choice((0, 0, 1, 7, 64)))
        parts += [junk, cut]
        pos += len(junk)
        off.append(pos)
        caplen.append(len(cut))
        origlen.append(max(wire, len(cut)))
        linktype.append(lt if rnd.random() < 0.9 else rnd.choice(LINKS))
        pos += len(cut)
    parts.append(rnd.randbytes(rnd.choice((0, 3))))
    n = len(off)
    ts = np.arange(n, dtype=np.int64) * 10 + 1_700_000_000_000_000
    return (b"".join(parts), np.array(off, np.int64), np.array(caplen, np.int64), np.array(origlen, np.int64), ts,
            np.array(linktype, np.int64))


def test_parse_frames_matches_numpy_on_damaged_frames() -> None:
    rnd = random.Random(20261124)
    corpus = shapes()
    seen = set()
    for n in range(CHUNKS):
        args = chunk(rnd, corpus)
        compiled = _frames.parse_frames(*args)
        assert_same(compiled, frames.parse_frames(*args), f"chunk {n}")
        seen |= set(compiled[0].tolist())
    assert seen == set(range(frames.VERDICTS))


def test_parse_frames_rejects_arrays_that_do_not_fit_the_buffer() -> None:
    buf, off, caplen, origlen, ts, lt = chunk(random.Random(1), shapes())
    for bad in ((buf, off - 1 - off[0], caplen, origlen, ts, lt), (buf, off + len(buf) + 1, caplen, origlen, ts, lt),
                (buf, off, caplen[:-1], origlen, ts, lt), (b"", off, caplen, origlen, ts, lt)):
        with pytest.raises(ValueError):
            _frames.parse_frames(*bad)


def records(rnd: random.Random, head: int, little: bool) -> bytes:
    """pcap records with damaged lengths now and then, any timestamps and original lengths, and a cut one at the end."""
    e = "<" if little else ">"
    out = []
    for _ in range(rnd.randrange(0, 40)):
        body = rnd.randbytes(rnd.randrange(0, 90))
        caplen = len(body) if rnd.random() < 0.9 else rnd.choice((0, 1, 0xFFFFFFFF, len(body) + 5, 1 << 31))
        origlen = caplen if rnd.random() < 0.7 else rnd.getrandbits(32)
        out.append(struct.pack(e + "IIII", rnd.getrandbits(32), rnd.getrandbits(32), caplen, origlen)
                   + b"\0" * (head - 16) + body)
    data = b"".join(out)
    return data[:rnd.randrange(len(data) + 1)] if rnd.random() < 0.5 else data


def test_record_walk_matches_python() -> None:
    rnd = random.Random(5)
    for _ in range(3000):
        head, little = rnd.choice((16, 24)), rnd.random() < 0.5
        buf = records(rnd, head, little)
        assert_same(_packet_records.record_walk(buf, head, little), pcap.record_walk(buf, head, little))


def blocks(rnd: random.Random, little: bool) -> bytes:
    """pcapng blocks, mostly enhanced packet blocks, with damaged types, lengths, caplens and interfaces."""
    e = "<" if little else ">"
    out = []
    for _ in range(rnd.randrange(0, 40)):
        data = rnd.randbytes(rnd.randrange(0, 70))
        padded = data + b"\0" * (-len(data) % 4)
        btype = 6 if rnd.random() < 0.85 else rnd.choice((1, 2, 3, 5, 0x0A0D0D0A))
        blen = 32 + len(padded)
        if rnd.random() < 0.1:
            blen = rnd.choice((0, 12, 28, 30, blen + 4, blen - 4, 0xFFFFFFF0, (64 << 20) + 4))
        caplen = len(data) if rnd.random() < 0.9 else rnd.choice((len(padded) + 1, 0xFFFFFFFF))
        iface = 0 if rnd.random() < 0.9 else rnd.choice((1, 2, 0xFFFFFFFF))
        origlen = rnd.choice((caplen, min(caplen + 100, 0xFFFFFFFF), 0))
        head = struct.pack(e + "7I", btype, blen, iface, rnd.getrandbits(32), rnd.getrandbits(32), caplen, origlen)
        out.append(head + padded + struct.pack(e + "I", blen))
    data = b"".join(out)
    return data[:rnd.randrange(len(data) + 1)] if rnd.random() < 0.5 else data


def test_epb_run_matches_python() -> None:
    rnd = random.Random(6)
    for _ in range(3000):
        little = rnd.random() < 0.5
        buf = blocks(rnd, little)
        off = rnd.choice((0, 0, 0, rnd.randrange(len(buf) + 8)))
        args = (buf, off, little, rnd.choice((0, 1)), rnd.choice((0, 1, 2, 3)))
        assert_same(_packet_records.epb_run(*args), pcapng.epb_run(*args))


def test_pick_follows_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "compiled", True)
    assert native.pick(frames.parse_frames, _frames) is _frames.parse_frames
    monkeypatch.setattr(native, "compiled", False)
    assert native.pick(frames.parse_frames, _frames) is frames.parse_frames
