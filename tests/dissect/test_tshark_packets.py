"""An outside oracle for the frames table's packet numbers: each request and response is where tshark says it is.

tshark shows a Kafka message on the packet of its last segment (`frame.number`) and, when it spans segments, lists
the packets of all of them (`tcp.segment`); our `request_packet` / `response_packet` is the packet of the first
byte, so the comparable tshark number is the first of `tcp.segment`, else `frame.number`. The samples' messages each
fit in one segment (loopback captures); a hand-made capture covers messages cut over several.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.kafka_messages import metadata_request, metadata_response
from tests.support.paths import SAMPLES
from tests.support.pcap import TcpFlow, timed, write_pcap

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

PLAIN_SAMPLES = ("classic_group", "rebalances_classic")
"""Samples of plain Kafka on their truth's broker ports whose messages tshark 4.0 dissects (`tshark_comparable`)."""

Key = tuple[int, int, str]  # (client port, correlation id, "request" or "response")


def tshark_packets(capture: Path, ports: list[int]) -> dict[Key, int]:
    """The packet carrying the first byte of every Kafka message tshark finds, by client port, correlation id and
    direction (one Kafka message per packet, as in the captures this is given)."""
    args = ["tshark", "-r", str(capture), "-Y", "kafka", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
            "-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "kafka.correlation_id",
            "-e", "tcp.segment"]
    for port in ports:
        args += ["-d", f"tcp.port=={port},kafka"]
    out: dict[Key, int] = {}
    for line in subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines():
        number, sport, dport, corr, segments = line.split("\t")
        assert "|" not in corr, f"packet {number} holds several Kafka messages: this oracle reads one per packet"
        response = int(sport) in ports
        key = (int(dport) if response else int(sport), int(corr), "response" if response else "request")
        assert key not in out, f"{key} twice in {capture.name}"
        out[key] = min(int(s) for s in segments.split("|")) if segments else int(number)
    return out


def our_packets(capture: Path, ports: list[int], out: Path) -> dict[Key, int]:
    dissect_captures([str(capture)], str(out), ports=ports)
    found: dict[Key, int] = {}
    for row in pq.read_table(out / "frames").to_pylist():
        port = int(row["client_addr"].rsplit(":", 1)[1])
        for direction in ("request", "response"):
            if row[f"{direction}_packet"] is not None:
                assert row[f"{direction}_file"] == str(capture)
                found[(port, row["correlation_id"], direction)] = row[f"{direction}_packet"]
    return found


@pytest.mark.parametrize("name", PLAIN_SAMPLES)
def test_sample_packet_numbers_are_tsharks(name: str, tmp_path: Path) -> None:
    truth = json.loads((SAMPLES / f"{name}.truth.json").read_text())
    capture, ports = SAMPLES / truth["capture"], truth["broker_ports"]
    theirs = tshark_packets(capture, ports)
    ours = our_packets(capture, ports, tmp_path / "out")
    assert len(theirs) > 400
    assert ours == theirs


def test_messages_over_several_segments_get_their_first_packet(tmp_path: Path) -> None:
    flow = TcpFlow(client=("10.0.0.1", 40001), server=("10.0.0.2", 9092))
    request1 = flow.handshake() + flow.send(0, metadata_request(1), mss=9)  # packets 1-3, then 4 on
    response1 = flow.send(1, metadata_response(1), mss=16)
    request2 = flow.send(0, metadata_request(2) + metadata_request(3)[:6])  # 3 begins in the packet of 2...
    request3 = flow.send(0, metadata_request(3)[6:])  # ...and ends in the next one
    responses = flow.send(1, metadata_response(2)) + flow.send(1, metadata_response(3), mss=16)
    frames = request1 + response1 + request2 + request3 + responses
    capture = Path(write_pcap(str(tmp_path / "segments.pcap"), timed(frames)))
    ours = our_packets(capture, [9092], tmp_path / "out")
    at_2 = len(request1 + response1) + 1
    assert len(request1) > 5 and len(response1) > 2 and len(request2) == 1
    assert (ours[(40001, 1, "request")], ours[(40001, 1, "response")]) == (4, len(request1) + 1)
    assert (ours[(40001, 2, "request")], ours[(40001, 3, "request")]) == (at_2, at_2)
    assert (ours[(40001, 2, "response")], ours[(40001, 3, "response")]) == (at_2 + 2, at_2 + 3)
    assert tshark_packets(capture, [9092]) == ours
