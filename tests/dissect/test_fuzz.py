"""Fuzzing with real captures: mutate the capture file, or the Kafka bytes inside its connections, for a bounded time.

Zero crashes allowed, and every run's byte account must balance. The time budget is fixed (not the number of runs), so
a slower machine runs fewer mutations but the suite's duration stays bounded.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.mutations import mutate
from tests.support.paths import SAMPLES
from tests.support.pcap import pcap_bytes, timed
from tests.support.replay import Replay

BUDGET_S = 16.0
SAMPLE = "produce_consume"
CAPTURES = sorted(SAMPLES.glob("*.pcapng"))

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not CAPTURES, reason="no samples yet")]


def check(capture: Path, out: Path, ports: list[int]) -> None:
    summary = dissect_captures([str(capture)], str(out), ports=ports, records=True)
    assert summary["byte_account"]["balanced"], capture


def test_mutated_captures_never_crash(tmp_path: Path) -> None:
    rnd = random.Random(20261122)
    replay = Replay(SAMPLE)
    originals = [p.read_bytes() for p in CAPTURES]
    deadline = time.monotonic() + BUDGET_S
    runs = 0
    while time.monotonic() < deadline:
        capture = tmp_path / f"fuzz{runs % 2}.pcap"
        if runs % 2:  # damage the Kafka bytes themselves, then packetise them cleanly
            def edit(conn: int, side: int, n: int, data: bytes) -> bytes:
                return mutate(data, rnd, 0) if rnd.random() < 0.05 else data
            capture.write_bytes(pcap_bytes(timed([s.frame for s in replay.segments(edit=edit)])))
        else:  # damage the capture file
            capture.write_bytes(mutate(rnd.choice(originals), rnd, 64))
        try:
            check(capture, tmp_path / "out", [replay.port, 9092])
        except Exception:
            keep = tmp_path.parent / "fuzz-failure.pcap"
            keep.write_bytes(capture.read_bytes())
            raise
        runs += 1
    assert runs >= 10
