"""Splits of a capture file read by separate tasks: wherever the split offsets fall (inside a record, inside a header,
on a boundary), the splits together read exactly the records of one read from the start, or say they do not agree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkatap.dissect.packets.files import open_capture
from kafkatap.dissect.packets.splits import Outcome, Split, agree, ranges
from tests.support.paths import SAMPLES

SAMPLE = SAMPLES / "idempotent.pcapng"


def sequential(path: Path) -> list[tuple[int, bytes]]:
    reader = open_capture(str(path), 1 << 12)
    try:
        return [(int(t), c.buf[o:o + n]) for c in reader.chunks()
                for t, o, n in zip(c.ts_us.tolist(), c.off.tolist(), c.caplen.tolist())]
    finally:
        reader.close()


def in_splits(path: Path, bounds: list[tuple[int, int]]) -> tuple[bool, list[tuple[int, bytes]]]:
    outcomes, got = [], []
    for lo, hi in bounds:
        with open(path, "rb") as f:
            split = Split(str(path), f, lo, hi, 1 << 12)
            got += [(int(t), c.buf[o:o + n]) for c, _ in split.pieces()
                    for t, o, n in zip(c.ts_us.tolist(), c.off.tolist(), c.caplen.tolist())]
            outcomes.append(Outcome(lo, hi, split.start, split.next_start, split.plain))
    return agree(outcomes), got


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The first packets of a sample as pcapng and as pcap (editcap writes both)."""
    folder = tmp_path_factory.mktemp("splits")
    out = {"pcapng": folder / "small.pcapng", "pcap": folder / "small.pcap"}
    subprocess.run(["editcap", "-r", str(SAMPLE), str(out["pcapng"]), "1-12"], check=True)
    subprocess.run(["editcap", "-F", "pcap", str(out["pcapng"]), str(out["pcap"])], check=True)
    return out


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_every_split_offset_reads_the_same_records(small: dict[str, Path], kind: str) -> None:
    path = small[kind]
    size = path.stat().st_size
    expected = sequential(path)
    assert len(expected) == 12
    for cut in range(1, size):
        ok, got = in_splits(path, [(0, cut), (cut, size)])
        assert ok and got == expected, cut


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
@pytest.mark.parametrize("split_size", [7, 64, 333, 1000])
def test_many_splits_read_the_same_records(small: dict[str, Path], kind: str, split_size: int) -> None:
    path = small[kind]
    ok, got = in_splits(path, ranges(path.stat().st_size, split_size))
    assert ok and got == sequential(path)


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_a_truncated_file_reads_what_the_reader_reads(small: dict[str, Path], tmp_path: Path, kind: str) -> None:
    """A split holding only the start of the cut record cannot tell it from payload (it needs a whole record before
    it): then the file does not agree, and is read from its start."""
    data = small[kind].read_bytes()
    path = tmp_path / f"cut.{kind}"
    path.write_bytes(data[:-37])
    expected = sequential(path)
    for split_size in (50, 200, 700):
        ok, got = in_splits(path, ranges(len(data) - 37, split_size))
        assert not ok or got == expected, split_size
    assert in_splits(path, ranges(len(data) - 37, 700)) == (True, expected)


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_junk_in_the_middle_is_caught_or_read_alike(small: dict[str, Path], tmp_path: Path, kind: str) -> None:
    """Junk inside a file sends the sequential read astray (or stops it): splits after it either read what it reads
    or the file is found not to agree (and is then read from its start as one split)."""
    data = small[kind].read_bytes()
    middle = len(data) // 2 // 4 * 4
    path = tmp_path / f"junk.{kind}"
    path.write_bytes(data[:middle] + bytes(range(7, 47)) + data[middle:])
    expected = sequential(path)
    size = path.stat().st_size
    for split_size in (100, 300, 900):
        ok, got = in_splits(path, ranges(size, split_size))
        assert not ok or got == expected, split_size
    assert in_splits(path, [(0, size)]) == (True, expected)


def test_ranges_cover_the_file() -> None:
    assert ranges(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert ranges(0, 4) == [(0, 0)]


def test_agree_checks_each_split_starts_where_the_last_went_on() -> None:
    assert agree([Outcome(0, 10, 24, 12, True), Outcome(10, 20, 12, 30, True), Outcome(20, 30, None, None, True),
                  Outcome(30, 40, 30, None, True)])
    assert not agree([Outcome(0, 10, 24, 12, True), Outcome(10, 20, 14, 30, True)])
    assert not agree([Outcome(0, 10, 24, None, True), Outcome(10, 20, 12, None, True)])
    assert not agree([Outcome(0, 10, 24, 12, False)])
