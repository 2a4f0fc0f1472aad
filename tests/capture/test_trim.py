"""Cutting a half-written capture back to whole packets; tshark is the reader that must accept the result."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kafkatap.capture.trim import complete_length, trim
from tests.support.paths import SAMPLES

SAMPLE = SAMPLES / "produce_consume.pcapng"
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def frame_lengths(path: Path) -> list[str]:
    done = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.len"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr  # tshark exits non-zero for a file cut short
    assert "cut short" not in done.stderr
    return done.stdout.split()


def scapy_pcap(path: Path, count: int) -> None:
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import PcapWriter

    with PcapWriter(str(path), linktype=1) as w:
        for i in range(count):
            w.write(Ether() / IP(dst="127.0.0.1") / TCP(dport=9092, seq=i) / (b"k" * (i * 37 % 500)))


@pytest.mark.parametrize("fraction", [0.013, 0.25, 0.5, 0.77, 0.999])
def test_pcapng_cut_anywhere(tmp_path: Path, fraction: float) -> None:
    full = frame_lengths(SAMPLE)
    cut = tmp_path / "cut.pcapng"
    data = SAMPLE.read_bytes()
    cut.write_bytes(data[:int(len(data) * fraction)])
    removed = trim(str(cut))
    assert 0 <= removed < 70000
    kept = frame_lengths(cut)
    assert kept == full[:len(kept)] and len(kept) < len(full)
    assert trim(str(cut)) == 0  # idempotent: nothing half-written is left


def test_pcap_cut_mid_record(tmp_path: Path) -> None:
    path = tmp_path / "a.pcap"
    scapy_pcap(path, 40)
    data = path.read_bytes()
    assert complete_length(str(path)) == len(data)
    path.write_bytes(data[:-5])
    trim(str(path))
    assert len(frame_lengths(path)) == 39


def test_whole_file_untouched_and_headerless_removed(tmp_path: Path) -> None:
    whole = tmp_path / "whole.pcapng"
    shutil.copy(SAMPLE, whole)
    assert trim(str(whole)) == 0 and whole.read_bytes() == SAMPLE.read_bytes()
    stub = tmp_path / "stub.pcapng"
    stub.write_bytes(SAMPLE.read_bytes()[:10])
    trim(str(stub))
    assert not stub.exists()
