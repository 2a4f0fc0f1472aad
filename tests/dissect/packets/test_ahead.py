"""Reading ahead in a thread: the same chunks and anomalies, at the same points, as a plain loop over `chunks()`; the
reader's errors raised in the consumer; a consumer that stops early stops the thread."""

from __future__ import annotations

import pytest

from kafkatap.dissect.packets import ahead as ahead_module
from kafkatap.dissect.packets.ahead import ReadAhead
from kafkatap.dissect.packets.files import open_capture
from tests.support.pcap import PcapngWriter

CHUNK = 2048  # a few blocks per chunk


def _capture(tmp_path, blocks: int = 40) -> str:
    """pcapng whose packet 17 names a missing interface (an anomaly mid-file) and whose last block is cut (one after
    the last chunk)."""
    w = PcapngWriter().shb().idb()
    for i in range(blocks):
        w.epb(7 if i == 17 else 0, 1_000 + i, bytes([i % 256]) * 300)
    path = tmp_path / "f.pcapng"
    path.write_bytes(w.bytes()[:-50])
    return str(path)


def _plain(path: str) -> tuple[list[tuple], list]:
    r = open_capture(path, CHUNK)
    out = []
    for c in r.chunks():
        out.append((c.index0, c.nbytes, c.off.tolist(), r.anomalies[:]))
        r.anomalies.clear()
    r.close()
    return out, r.anomalies


def test_same_chunks_and_anomalies_as_a_plain_loop(tmp_path):
    path = _capture(tmp_path)
    expected, expected_rest = _plain(path)
    reader = open_capture(path, CHUNK)
    ahead = ReadAhead(reader)
    got = [(c.index0, c.nbytes, c.off.tolist(), anomalies) for c, anomalies in ahead]
    ahead.close()
    reader.close()
    assert len(got) > 3 and got == expected and ahead.rest == expected_rest
    assert [a.kind for *_, found in got for a in found] == ["corrupt_block"]
    assert [a.kind for a in ahead.rest] == ["truncated_file"]


def test_a_reader_error_is_raised_in_the_consumer(tmp_path, monkeypatch):
    reader = open_capture(_capture(tmp_path), CHUNK)
    chunks = reader.chunks

    def failing():
        yield from list(chunks())[:2]
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(reader, "chunks", failing)
    ahead = ReadAhead(reader)
    seen = 0
    with pytest.raises(OSError, match="Input/output error"):
        for _ in ahead:
            seen += 1
    ahead.close()
    assert seen == 2


def test_a_consumer_that_stops_early_stops_the_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(ahead_module, "_POLL_S", 0.01)
    ahead = ReadAhead(open_capture(_capture(tmp_path, blocks=400), CHUNK))
    next(iter(ahead))  # the thread now waits on a full queue
    ahead.close()
    assert not ahead._thread.is_alive()
