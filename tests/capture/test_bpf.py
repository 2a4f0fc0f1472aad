"""Ports -> capture filter; every filter built is compiled by a real libpcap (dumpcap -d) as the oracle."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatap.capture.bpf import PortError, build_filter, parse_ports


def test_parse_forms() -> None:
    assert parse_ports(["9092"]) == [9092]
    assert parse_ports(["9093,9092", "9092"]) == [9092, 9093]
    assert parse_ports(["9092-9094", "19092"]) == [9092, 9093, 9094, 19092]


@pytest.mark.parametrize("values", [[], [""], [","], ["9092,"], ["0"], ["65536"], ["kafka"], ["9094-9092"],
                                    ["-1"], ["9092-"], ["1.5"]])
def test_parse_rejects(values: list[str]) -> None:
    with pytest.raises(PortError):
        parse_ports(values)


def test_filter_shapes() -> None:
    assert build_filter([9092]) == "tcp and (port 9092)"
    assert build_filter([9092, 9093, 9094, 9096]) == "tcp and (portrange 9092-9094 or port 9096)"
    with pytest.raises(PortError):
        build_filter([])


@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap (wireshark-common) not installed")
@settings(max_examples=15, deadline=None)
@given(st.sets(st.integers(1, 65535), min_size=1, max_size=12))
def test_libpcap_compiles_every_filter(ports: set[int]) -> None:
    bpf = build_filter(sorted(ports))
    done = subprocess.run(["dumpcap", "-i", "lo", "-d", "-f", bpf], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "ret" in done.stdout
