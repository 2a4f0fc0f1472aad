"""The compiled batch splitter (_batch_headers.pyx) against batch_headers.split_batches: the same batches, partial
bytes and error for every golden batch file, for runs of them, and for damaged copies (flips, cuts, absurd lengths, bad
magic)."""

from __future__ import annotations

import random

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkatap.dissect import native
from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import batch_headers
from tests.support import paths

compiled = native.extension("kafkatap.dissect.records._batch_headers")
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
        assert outcome(compiled.split_batches, data) == outcome(batch_headers.split_batches, data), data[:40]


@pytest.mark.parametrize("by_table", [False, True], ids=["cpu", "table"])
def test_crc32c_matches_the_package(by_table: bool) -> None:
    """The C checksum of small batches against the crc32c package, over every length up to past the cut-over, with
    the CPU's instruction (where it has one) and with the table a CPU without it uses."""
    rnd = random.Random(5)
    for n in list(range(0, 80)) + [rnd.randrange(80, 5000) for _ in range(200)]:
        data = rnd.randbytes(n)
        assert compiled.crc32c(data, by_table) == crc32c(data), n


@pytest.mark.parametrize("value_size", [10, 1_900, 2_100, 50_000])
def test_crc_ok_on_both_sides_of_the_cut_over(value_size: int) -> None:
    """Batches checked here and by the package: a right CRC is ok, any flipped byte after the CRC field is not."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 10 << 20)
    builder.append(0, 1_700_000_000_000, b"k", random.Random(value_size).randbytes(value_size), [])
    data = bytes(builder.build())
    assert outcome(compiled.split_batches, data)[0][0][8] is True
    for at in (21, len(data) // 2, len(data) - 1):
        bad = bytearray(data)
        bad[at] ^= 0x40
        got = outcome(compiled.split_batches, bytes(bad))
        assert got == outcome(batch_headers.split_batches, bytes(bad)) and got[0][0][8] is False
