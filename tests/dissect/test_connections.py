"""The connections table's TCP analysis counts, on a hand-made capture with one of each, checked by hand and against
tshark's `tcp.analysis` flags on the same file; and on cut captures, where what the capture lacks is null, not 0."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.kafka_messages import metadata_request, metadata_response
from tests.support.pcap import ACK, TcpFlow, ether, ipv4, tcp_segment, write_pcap

T0 = 1_700_000_000_000_000
CLIENT, SERVER = ("10.0.0.1", 40000), ("10.0.0.2", 9092)


def one_of_each() -> list[tuple[int, bytes]]:
    """Handshake (RTT 2 ms), a request in four segments of which the second comes after the third (1 ms: out of
    order), the response, a zero window from the client, its first segment again 10 ms later (a retransmission) and
    a reset."""
    flow = TcpFlow(client=CLIENT, server=SERVER)
    handshake = flow.handshake()
    request = metadata_request(1)
    s0, s1, s2, s3 = flow.send(0, request, mss=-(-len(request) // 4))
    response = flow.send(1, metadata_response(1))
    zero = ether(ipv4(CLIENT[0], SERVER[0], tcp_segment(CLIENT[1], SERVER[1], flow.next[0], flow.next[1], ACK,
                                                         window=0)))
    frames = handshake + [s0, s2, s1, s3] + response + [zero]
    timed = [(T0 + n * 1000, f) for n, f in enumerate(frames)]
    last = timed[-1][0]
    return timed + [(last + 10_000, s0), (last + 11_000, flow.rst(0)[0])]


def ours(capture: Path, out: Path) -> dict:
    dissect_captures([str(capture)], str(out), ports=[9092])
    rows = pq.read_table(out / "connections").to_pylist()
    assert len(rows) == 1
    return rows[0]


def test_one_of_each_is_counted(tmp_path: Path) -> None:
    capture = Path(write_pcap(str(tmp_path / "one_of_each.pcap"), one_of_each()))
    row = ours(capture, tmp_path / "out")
    assert row["client_addr"] == "10.0.0.1:40000" and row["closed_by"] == "rst"
    assert (row["retransmissions"], row["out_of_order"], row["resets"], row["zero_windows"]) == (1, 1, 1, 1)
    assert row["handshake_rtt_us"] == 2000
    frames = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    assert [(f["status"], f["request_packet"], f["response_packet"]) for f in frames] == [("ok", 4, 8)]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_one_of_each_as_tshark_counts(tmp_path: Path) -> None:
    capture = Path(write_pcap(str(tmp_path / "one_of_each.pcap"), one_of_each()))
    row = ours(capture, tmp_path / "out")

    def count(flag: str) -> int:
        out = subprocess.run(["tshark", "-r", str(capture), "-Y", flag, "-T", "fields", "-e", "frame.number"],
                             check=True, capture_output=True, text=True).stdout
        return len(out.split())

    assert row["retransmissions"] == count("tcp.analysis.retransmission")
    assert row["out_of_order"] == count("tcp.analysis.out_of_order")
    assert row["zero_windows"] == count("tcp.analysis.zero_window")
    assert row["resets"] == count("tcp.flags.reset == 1")
    rtt = subprocess.run(["tshark", "-r", str(capture), "-Y", "tcp.analysis.initial_rtt", "-T", "fields", "-e",
                          "tcp.analysis.initial_rtt"], check=True, capture_output=True, text=True).stdout.split()
    assert round(float(rtt[0]) * 1e6) == row["handshake_rtt_us"]


def test_without_the_handshake_the_rtt_is_null(tmp_path: Path) -> None:
    frames = one_of_each()
    row = ours(Path(write_pcap(str(tmp_path / "mid.pcap"), frames[3:])), tmp_path / "mid")
    assert row["handshake_rtt_us"] is None
    row = ours(Path(write_pcap(str(tmp_path / "no_ack.pcap"), frames[:2] + frames[3:])), tmp_path / "no_ack")
    assert row["handshake_rtt_us"] == 3000  # the pure ACK is missing: the client's first data segment acks it
    row = ours(Path(write_pcap(str(tmp_path / "no_syn_ack.pcap"), frames[:1] + frames[2:])), tmp_path / "no_syn_ack")
    assert row["handshake_rtt_us"] is None
    assert (row["retransmissions"], row["out_of_order"], row["resets"], row["zero_windows"]) == (1, 1, 1, 1)


def test_counts_stop_where_the_capture_does(tmp_path: Path) -> None:
    """A capture cut before the retransmission and the reset: they are not counted, nothing else changes."""
    row = ours(Path(write_pcap(str(tmp_path / "cut.pcap"), one_of_each()[:-2])), tmp_path / "cut")
    assert (row["retransmissions"], row["out_of_order"], row["resets"], row["zero_windows"]) == (0, 1, 0, 1)
    assert row["closed_by"] == "end_of_capture" and row["handshake_rtt_us"] == 2000
