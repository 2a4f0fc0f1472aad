"""The frames table's packet numbers are counted per capture file: a capture cut into a ring of files dissects to the
rows of the whole file, each packet number moved into the file that holds it (tshark's agreement on single files is
tests/dissect/test_tshark_packets.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.paths import SAMPLES

PER_FILE = 1000
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap not installed")]


def in_whole_file(row: dict, ring: list[str]) -> str:
    """The row with each (file, packet) of the ring as (the whole file, its packet number there)."""
    row = dict(row)
    for direction in ("request", "response"):
        if row[f"{direction}_file"] is not None:
            row[f"{direction}_packet"] += ring.index(row[f"{direction}_file"]) * PER_FILE
            row[f"{direction}_file"] = "whole"
    return json.dumps(row, sort_keys=True, default=str)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_ring_numbers_packets_per_file(tmp_path: Path, workers: int) -> None:
    original = SAMPLES / "rebalances_classic.pcapng"
    ports = json.loads((SAMPLES / "rebalances_classic.truth.json").read_text())["broker_ports"]
    cut = tmp_path / "cut"
    cut.mkdir()
    subprocess.run(["editcap", "-c", str(PER_FILE), str(original), str(cut / "ring.pcapng")], check=True,
                   capture_output=True)
    ring = [str(p) for p in sorted(cut.iterdir())]
    assert len(ring) >= 3
    dissect_captures([str(original)], str(tmp_path / "whole"), ports=ports, workers=1)
    dissect_captures(ring, str(tmp_path / "ring"), ports=ports, workers=workers)
    whole = pq.read_table(tmp_path / "whole" / "frames").to_pylist()
    rows = pq.read_table(tmp_path / "ring" / "frames").to_pylist()
    assert {r["request_file"] for r in rows} == set(ring)
    assert all(0 < r["request_packet"] <= PER_FILE for r in rows)
    crossing = [r for r in rows if r["response_file"] not in (None, r["request_file"])]
    assert crossing, "no exchange crosses from one file of the ring into the next"
    assert sorted(in_whole_file(r, ring) for r in rows) == sorted(in_whole_file(r, [str(original)]) for r in whole)
