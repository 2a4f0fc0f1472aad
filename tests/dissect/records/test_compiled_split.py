"""The compiled batch splitter (_split.pyx) against split.split_batches: the same batches, partial bytes and error
for every golden batch file, for runs of them, and for damaged copies (flips, cuts, absurd lengths, bad magic)."""

from __future__ import annotations

import random

import pytest

from kafkatap.dissect import native
from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import split
from tests.support import paths

compiled = native.extension("kafkatap.dissect.records._split")
pytestmark = pytest.mark.skipif(compiled is None, reason="the compiled core is not built (pure-Python run)")
GOLDEN = [p.read_bytes() for p in sorted((paths.DATA / "records").glob("*.bin"))]


def outcome(split_batches, data: bytes) -> tuple:
    batches, partial, error = split_batches(data)
    rows = [tuple(b[:15]) + (b.data is data, repr(b.inner)) for b in batches]
    if isinstance(error, DecodeError):
        error = (error.reason, error.offset, str(error))
    return rows, partial, error


def test_golden_batches_and_damaged_copies() -> None:
    assert len(GOLDEN) >= 10
    rnd = random.Random(11)
    corpus = GOLDEN + [b"".join(rnd.sample(GOLDEN, 4)) for _ in range(20)] + [b"", b"\x00" * 16, b"\x00" * 17]
    for data in list(corpus):
        for _ in range(25):
            buf = bytearray(data or b"\x00")
            kind = rnd.randrange(4)
            at = rnd.randrange(len(buf))
            if kind == 0:
                buf[at] ^= 1 << rnd.randrange(8)
            elif kind == 1:
                del buf[at:]
            elif kind == 2:
                buf[at:at + 4] = rnd.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x00\x00\x00\x05"))
            else:
                buf[at:at + 1] = bytes([rnd.choice((0, 1, 2, 3, 255))])
            corpus.append(bytes(buf))
    for data in corpus:
        assert outcome(compiled.split_batches, data) == outcome(split.split_batches, data), data[:40]
