"""run_streams end to end: several files as one capture, progress, and real loopback captures (tcpdump, dumpcap)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkatap.dissect.streams.driver import run_streams
from kafkatap.samples.brokers import free_ports
from tests.support.paths import SAMPLES as SAMPLE_DIR
from tests.support.pcap import (PcapngWriter, RecordingSink, TcpFlow, ether, ipv4, ipv6, pcap_bytes, tcp_segment, timed,
                                write_pcap)


def test_files_are_one_capture_in_time_order(tmp_path):
    flow = TcpFlow()
    frames = timed(flow.handshake() + flow.send(0, b"a" * 5000) + flow.send(1, b"b" * 3000) + flow.fin(0)
                   + flow.fin(1))
    early = write_pcap(tmp_path / "z_early.pcap", frames[:5])
    w = PcapngWriter().shb().idb(1, tsresol=9)
    for ts, frame in frames[5:]:
        w.epb(0, ts, frame)
    late = w.write(str(tmp_path / "a_late.pcapng"))
    sink = RecordingSink()
    seen = []
    stats = run_streams([late, early], sink, progress=seen.append, chunk_size=1000)
    (conn,) = sink.conns
    assert sink.data(conn, 0) == b"a" * 5000 and sink.data(conn, 1) == b"b" * 3000
    assert sink.closes() == [(conn, "fin")] and stats.files == 2 and stats.packets == len(frames)
    assert [e[4].capture_file for e in sink.events if e[0] == "data"][:1] == [early]
    assert sum(seen) == os.path.getsize(late) + os.path.getsize(early) and len(seen) > 2
    assert stats.first_ts_us == frames[0][0] and stats.last_ts_us == frames[-1][0]


def test_bad_file_among_good_ones(tmp_path):
    flow = TcpFlow()
    good = write_pcap(tmp_path / "g.pcap", timed(flow.handshake() + flow.send(0, b"ok")))
    (tmp_path / "bad.pcap").write_bytes(b"\0" * 100)
    sink = RecordingSink()
    stats = run_streams([str(tmp_path / "bad.pcap"), str(tmp_path / "missing.pcap"), good], sink)
    assert sink.data(sink.conns[0], 0) == b"ok"
    assert stats.anomalies == {"bad_capture_file": 2} and stats.files == 1


def test_big_frames_across_small_chunks(tmp_path):
    flow = TcpFlow(client=("127.0.0.1", 50000), server=("127.0.0.1", 9092))
    data = os.urandom(300_000)
    sink = RecordingSink()
    run_streams([write_pcap(tmp_path / "big.pcap", timed(flow.handshake() + flow.send(0, data, 65483)))], sink,
                chunk_size=4096)
    assert sink.data(sink.conns[0], 0) == data


# ---- real captures on loopback -------------------------------------------------------------------------------

def _exchange(port: int, sends: list[tuple[int, bytes]]) -> None:
    """One connection on 127.0.0.1:port; sends is a script of (side, bytes), side 0 = client. Waits for each."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(1)
    accepted: list[socket.socket] = []
    t = threading.Thread(target=lambda: accepted.append(srv.accept()[0]))
    t.start()
    cli = socket.create_connection(("127.0.0.1", port))
    t.join()
    ends = [cli, accepted[0]]
    for side, data in sends:
        ends[side].sendall(data)
        got = b""
        while len(got) < len(data):
            got += ends[1 - side].recv(1 << 20)
        assert got == data
    cli.close()
    ends[1].close()
    srv.close()


def _capture(cmd: list[str], path: str, port: int, sends: list[tuple[int, bytes]]) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline().decode()
        if "listening" not in line and "Capturing" not in line:
            pytest.skip(f"cannot capture on lo: {line.strip()}")
        time.sleep(1.0)  # the tools announce themselves slightly before their filter is attached
        _exchange(port, sends)
        expected = sum(len(d) for _, d in sends)
        deadline, last = time.time() + 15, -1
        while time.time() < deadline:  # wait until the capture file stops growing past the payload
            time.sleep(0.3)
            size = os.path.getsize(path) if os.path.exists(path) else 0
            if size > expected and size == last:
                break
            last = size
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def _check(path: str, sends: list[tuple[int, bytes]], port: int) -> None:
    sink = RecordingSink()
    stats = run_streams([path], sink)
    (conn,) = sink.conns
    assert conn.syn_seen and conn.addr[1] == ("127.0.0.1", port)
    for side in (0, 1):
        assert sink.data(conn, side) == b"".join(d for s, d in sends if s == side)
    assert stats.gap_bytes == 0 and not sink.anomalies() and sink.closes() == [(conn, "fin")]


SENDS = [(0, b"hello " * 10), (1, os.urandom(200_000)), (0, os.urandom(70_000)), (1, b"bye")]


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("tcpdump"), reason="tcpdump not installed")
@pytest.mark.parametrize("precision", ["micro", "nano"])
def test_real_tcpdump_capture(tmp_path, precision):
    port, = free_ports(1)  # out of the ephemeral range, which another test's connection may hold a port of
    path = str(tmp_path / "lo.pcap")
    _capture(["tcpdump", "-i", "lo", "-U", "-s", "0", "-B", "131072", f"--time-stamp-precision={precision}",
              "-w", path, f"tcp port {port}"], path, port, SENDS)
    with open(path, "rb") as f:
        assert f.read(4) == (b"\x4d\x3c\xb2\xa1" if precision == "nano" else b"\xd4\xc3\xb2\xa1")
    _check(path, SENDS, port)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("dumpcap"), reason="dumpcap not installed")
def test_real_dumpcap_pcapng_capture(tmp_path):
    port, = free_ports(1)
    path = str(tmp_path / "lo.pcapng")
    _capture(["dumpcap", "-q", "-i", "lo", "-s", "0", "-B", "128", "-f", f"tcp port {port}", "-w", path], path, port,
             SENDS)
    with open(path, "rb") as f:
        assert f.read(4) == b"\x0a\x0d\x0d\x0a"
    _check(path, SENDS, port)


# ---- tshark as an outside oracle -----------------------------------------------------------------------------

SAMPLES = sorted(str(p) for p in SAMPLE_DIR.glob("*.pcapng"))


def _tshark_follow(path: str) -> dict[frozenset, dict[tuple, bytes]]:
    """Each TCP stream's bytes per endpoint, as `tshark -z follow,tcp,raw` reassembles them."""
    fields = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", "tcp.stream"], capture_output=True,
                            text=True, check=True).stdout.split()
    args = ["tshark", "-r", path, "-q"]
    for n in range(max(map(int, fields)) + 1 if fields else 0):
        args += ["-z", f"follow,tcp,raw,{n}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    streams = {}
    for block in out.split("=" * 67 + "\n"):
        m = re.search(r"Node 0: (\S+):(\d+)\nNode 1: (\S+):(\d+)\n", block)
        if m:
            nodes = ((m[1], int(m[2])), (m[3], int(m[4])))
            data = {nodes[0]: b"", nodes[1]: b""}
            for line in block[m.end():].splitlines():
                if line.strip():
                    data[nodes[line.startswith("\t")]] += bytes.fromhex(line.strip())
            streams[frozenset(nodes)] = data
    return streams


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("tshark") or not SAMPLES, reason="needs tshark and samples/*.pcapng")
@pytest.mark.parametrize("path", SAMPLES, ids=os.path.basename)
def test_streams_equal_tsharks(path):
    sink = RecordingSink()
    run_streams([path], sink)
    theirs = _tshark_follow(path)
    assert len(sink.conns) == sum(1 for d in theirs.values() if any(d.values()))
    for conn in sink.conns:
        d = theirs[frozenset(conn.addr)]
        assert (sink.data(conn, 0), sink.data(conn, 1)) == (d[conn.addr[0]], d[conn.addr[1]])


# ---- bad input never crashes ---------------------------------------------------------------------------------

def _sample_capture() -> tuple[bytes, bytes]:
    flow = TcpFlow()
    seg = tcp_segment(1, 2, 3, payload=b"f" * 40)
    extra = [ether(ipv4("10.0.0.1", "10.0.0.2", seg[:24], frag=0x2000)),
             ether(ipv4("10.0.0.1", "10.0.0.2", seg[24:], frag=3)),
             ether(ipv6("::1", "::2", seg, next_header=0, ext=bytes([6, 0, 1, 4, 0, 0, 0, 0])), 0x86DD)]
    frames = timed(flow.handshake() + flow.send(0, b"q" * 3000) + extra + flow.send(1, b"r" * 500) + flow.fin(0))
    w = PcapngWriter().shb().idb(1)
    for ts, frame in frames:
        w.epb(0, ts, frame)
    return pcap_bytes(frames), w.bytes()


@settings(max_examples=int(os.environ.get("FUZZ_N", 60)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 1), flips=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), max_size=8),
       cut=st.integers(0, 10 ** 6))
def test_mutated_captures_never_crash(tmp_path, which, flips, cut):
    data = bytearray(_sample_capture()[which])
    for pos, value in flips:
        data[pos % len(data)] = value
    path = tmp_path / "m.cap"
    path.write_bytes(bytes(data[:max(cut % (len(data) + 1), 0)]))
    sink = RecordingSink()
    stats = run_streams([str(path)], sink, chunk_size=256)
    assert stats.packets >= 0 and all(e[0] != "anomaly" or e[4] >= 0 for e in sink.events)
