"""TCP reassembly: reordering, duplicates, differing overlaps, loss, wraparound, odd starts and endings."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from kafkatap.dissect.streams.reassembly import Reassembler
from kafkatap.dissect.streams.driver import run_streams
from tests.support.pcap import ACK, PSH, SYN, RecordingSink, TcpFlow, tcp_frame, timed, write_pcap

DATA = bytes(range(256)) * 40  # 10,240 bytes: 8 segments of 1,280


def run(tmp_path, frames, name="r.pcap", **limits):
    sink = RecordingSink()
    stats = run_streams([write_pcap(tmp_path / name, timed(frames))], sink, **limits)
    return sink, stats


def flow_with_data(side=0, data=DATA, mss=1280, **kw):
    flow = TcpFlow(**kw)
    return flow, flow.handshake(), flow.send(side, data, mss)


def test_in_order_with_handshake_and_fin(tmp_path):
    flow, hs, segs = flow_with_data()
    sink, stats = run(tmp_path, hs + segs + flow.send(1, b"reply") + flow.fin(0) + flow.fin(1))
    (conn,) = sink.conns
    assert conn.syn_seen and conn.addr == (("10.0.0.1", 40000), ("10.0.0.2", 9092))
    assert sink.data(conn, 0) == DATA and sink.data(conn, 1) == b"reply"
    assert sink.closes() == [(conn, "fin")] and stats.gap_bytes == 0 and stats.payload_bytes == len(DATA) + 5


def test_reordered(tmp_path):
    flow, hs, segs = flow_with_data()
    order = [segs[i] for i in (0, 3, 1, 2, 7, 5, 6, 4)]
    sink, stats = run(tmp_path, hs + order + flow.fin(0) + flow.fin(1))
    assert sink.data(sink.conns[0], 0) == DATA and not sink.anomalies() and stats.gap_bytes == 0


def test_duplicated(tmp_path):
    flow, hs, segs = flow_with_data()
    dup = [s for seg in segs for s in (seg, seg)] + segs[2:4]
    sink, stats = run(tmp_path, hs + dup)
    assert sink.data(sink.conns[0], 0) == DATA and not sink.anomalies()
    assert stats.skipped_bytes["retransmitted"] == len(DATA) + 2 * 1280


def test_overlap_that_differs_keeps_the_first_copy(tmp_path):
    c, s = ("10.0.0.1", 40000), ("10.0.0.2", 9092)
    frames = [tcp_frame(c, s, 100, b"A" * 100),  # delivered: bytes 0..99
              tcp_frame(c, s, 150, b"B" * 100),  # 50..149: 50 bytes overlap the delivered copy and differ
              tcp_frame(c, s, 400, b"C" * 100),  # pending 300..399
              tcp_frame(c, s, 350, b"D" * 100),  # 250..349 overlaps the pending copy by 50 and differs
              tcp_frame(c, s, 250, b"E" * 100)]  # fills the hole 150..249
    sink, stats = run(tmp_path, frames)
    conn = sink.conns[0]
    assert sink.data(conn, 0) == b"A" * 100 + b"B" * 50 + b"E" * 100 + b"D" * 50 + b"C" * 100
    mism = sink.anomalies("overlap_mismatch")
    assert [a[4] for a in mism] == [50, 50] and stats.anomalies == {"overlap_mismatch": 2}
    assert [a[3].packet_index for a in mism] == [1, 3] and mism[0][5] is conn and mism[0][6] == 0


def test_lost_segments_are_gaps_with_exact_counts(tmp_path):
    flow, hs, segs = flow_with_data()
    kept = [segs[0], segs[2], segs[3], segs[6]]  # lose 1, 4, 5 and the last one (7)
    sink, stats = run(tmp_path, hs + kept + flow.fin(0) + flow.fin(1))
    conn = sink.conns[0]
    assert sink.pieces(conn, 0) == [DATA[:1280], ("gap", 1280), DATA[2560:5120], ("gap", 2560), DATA[7680:8960],
                                    ("gap", 1280)]
    assert stats.gap_bytes == 5120 and sink.closes() == [(conn, "fin")]


def test_sequence_wraparound(tmp_path):
    flow, hs, segs = flow_with_data(isn=[2 ** 32 - 3000, 2 ** 32 - 1])
    frames = hs + segs[:3] + segs[4:] + [segs[3]] + flow.send(1, b"x" * 3000) + flow.fin(0) + flow.fin(1)
    sink, _ = run(tmp_path, frames)
    conn = sink.conns[0]
    assert sink.data(conn, 0) == DATA and sink.data(conn, 1) == b"x" * 3000 and not sink.anomalies()


def test_capture_starting_mid_connection(tmp_path):
    flow, hs, segs = flow_with_data(side=1)
    sink, _ = run(tmp_path, segs[2:] + flow.send(0, b"request"))
    conn = sink.conns[0]
    assert not conn.syn_seen and conn.addr[0] == ("10.0.0.2", 9092)  # side 0 = sender of the first packet
    assert sink.data(conn, 0) == DATA[2560:] and sink.data(conn, 1) == b"request"
    assert sink.closes() == [(conn, "end_of_capture")]


def test_syn_ack_seen_first_still_finds_the_client(tmp_path):
    flow, hs, segs = flow_with_data()
    sink, _ = run(tmp_path, hs[1:] + segs)
    conn = sink.conns[0]
    assert conn.syn_seen and conn.addr[0] == ("10.0.0.1", 40000) and sink.data(conn, 0) == DATA


def test_port_reuse_starts_a_new_connection(tmp_path):
    old, hs1, segs1 = flow_with_data(data=b"first", isn=[1000, 5000])
    new, hs2, segs2 = flow_with_data(data=b"second", isn=[900_000, 7000])
    sink, _ = run(tmp_path, hs1 + segs1 + [hs1[0]] + hs2 + segs2 + new.fin(0) + new.fin(1))  # hs1[0]: SYN resent
    first, second = sink.conns
    assert sink.data(first, 0) == b"first" and sink.data(second, 0) == b"second"
    assert sink.closes() == [(first, "port_reuse"), (second, "fin")]


def test_port_reuse_after_fin(tmp_path):
    old, hs1, segs1 = flow_with_data(data=b"first")
    new, hs2, segs2 = flow_with_data(data=b"second", isn=[77, 88])
    sink, stats = run(tmp_path, hs1 + segs1 + old.fin(0) + old.fin(1) + old.send(0, b"late") + hs2 + segs2)
    first, second = sink.conns
    assert sink.closes() == [(first, "fin"), (second, "end_of_capture")] and sink.data(second, 0) == b"second"
    assert stats.skipped_bytes["after_close"] == 4


def test_every_change_to_the_connection_keys_moves_their_version(tmp_path, monkeypatch):
    """The compiled driver keeps each segment's lookup of its connection while `keys_version` stays what it was
    (_driver.pyx): a change to `keys` that left it would hand a segment a connection no longer there. Here connections
    open, close, reuse their ports, and are let go by the sweep after each chunk and at the end."""
    moved = {}
    for name in ("segment", "sweep", "finish"):
        def watched(self, *args, _name=name, _call=getattr(Reassembler, name)):
            before, version = dict(self.keys), self.keys_version
            _call(self, *args)
            if self.keys.keys() != before.keys() or any(self.keys[key] is not found for key, found in before.items()
                                                        if key in self.keys):
                assert self.keys_version > version, f"{_name} changed the keys and left their version"
                moved[_name] = moved.get(_name, 0) + 1
        monkeypatch.setattr(Reassembler, name, watched)
    _, hs1, segs1 = flow_with_data(data=b"first", isn=[1000, 5000])
    new, hs2, segs2 = flow_with_data(data=b"second", isn=[900_000, 7000])
    _, hs3, segs3 = flow_with_data(data=b"idle", client=("10.0.0.3", 40001))
    frames = (hs1 + segs1 + [hs1[0]] + hs2 + segs2 + new.fin(0) + new.fin(1) + new.send(0, b"late") + hs3 + segs3
              + [tcp_frame(("10.0.0.4", 40002), ("10.0.0.2", 9092), 1, b"mid-connection")] + flow_with_data()[1])
    sink, _ = run(tmp_path, frames, chunk_size=2, idle_timeout_us=3000, linger_us=1000)
    assert sink.data(sink.conns[1], 0) == b"second" and set(moved) == {"segment", "sweep", "finish"}


def test_rst_closes_and_declares_holes(tmp_path):
    flow, hs, segs = flow_with_data()
    sink, stats = run(tmp_path, hs + [segs[0], segs[2]] + flow.rst(1))
    conn = sink.conns[0]
    assert sink.pieces(conn, 0) == [DATA[:1280], ("gap", 1280), DATA[2560:3840]]
    assert sink.closes() == [(conn, "rst")]


def test_keepalive_and_zero_window_probe(tmp_path):
    flow, hs, segs = flow_with_data(data=b"abcdef")
    c, s = flow.client, flow.server
    keepalive = tcp_frame(c, s, flow.next[0] - 1, b"\0", ACK)  # one garbage byte before the next sequence number
    probe = tcp_frame(c, s, flow.next[0], b"g", ACK)  # zero-window probe: the next byte, sent again later
    more = flow.send(0, b"ghij")
    sink, stats = run(tmp_path, hs + segs + [keepalive, keepalive, probe] + more)
    assert sink.data(sink.conns[0], 0) == b"abcdefghij" and not sink.anomalies()
    assert stats.skipped_bytes == {"keepalive": 2, "retransmitted": 1}


def test_connections_without_payload_never_reach_the_sink(tmp_path):
    flow = TcpFlow()
    sink, stats = run(tmp_path, flow.handshake() + flow.fin(0) + flow.fin(1))
    assert sink.events == [] and stats.connections == 0 and stats.tcp_packets == 5


def test_sink_can_stop_tracking_a_connection(tmp_path):
    flow, hs, segs = flow_with_data()
    again, hs2, segs2 = flow_with_data(data=b"new life", isn=[424242, 1])
    sink = RecordingSink(stop_after=2)
    stats = run_streams([write_pcap(tmp_path / "s.pcap", timed(hs + segs + hs2 + segs2))], sink)
    first, second = sink.conns
    assert sink.data(first, 0) == DATA[:2560] and sink.data(second, 0) == b"new life"
    assert [c for c, _ in sink.closes()] == []  # the sink said stop each time: no more calls for that connection
    assert stats.skipped_bytes["ignored_connection"] == len(DATA) - 2560


def test_out_of_order_buffer_is_bounded(tmp_path):
    flow, hs, segs = flow_with_data()
    sink, stats = run(tmp_path, hs + segs[1:], max_buffer=3000)
    conn = sink.conns[0]
    assert sink.pieces(conn, 0) == [("gap", 1280), DATA[1280:]]  # the hole was given up once 3 segments waited
    assert stats.gap_bytes == 1280


def test_idle_and_closed_connections_are_released():
    sink = RecordingSink()
    r = Reassembler(sink, sink.on_anomaly, {}, idle_timeout_us=1000, linger_us=10)
    key = (-1, 1, -1, 2, 40000 << 16 | 9092)
    r.segment(0, 0, key, 10, 0, ACK | PSH, b"hello", 0)
    assert len(r.conns) == 1
    r.sweep(500, 1)
    assert len(r.conns) == 1
    r.sweep(2000, 1)
    assert not r.conns and not r.keys and sink.closes() == [(sink.conns[0], "idle_timeout")]


def test_syn_with_data_and_retransmitted_syn():
    sink = RecordingSink()
    r = Reassembler(sink, sink.on_anomaly, {})
    key = (-1, 1, -1, 2, 40000 << 16 | 9092)
    r.segment(0, 0, key, 10, 0, SYN, b"fast open", 0)
    r.segment(1, 1, key, 10, 0, SYN, b"fast open", 0)
    r.segment(2, 2, key, 20, 0, PSH, b"!", 0)
    assert sink.data(sink.conns[0], 0) == b"fast open!" and len(sink.conns) == 1


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 2 ** 32 - 1), st.integers(1, 700))
def test_any_order_with_duplicates_gives_the_stream(rnd: random.Random, isn: int, mss: int):
    data = rnd.randbytes(rnd.randint(1, 6000))
    flow = TcpFlow(isn=[isn, 3])
    hs = flow.handshake()
    segs = flow.send(0, data, mss)
    shuffled = segs + rnd.sample(segs, k=min(len(segs), 3))
    rnd.shuffle(shuffled)
    sink = RecordingSink()
    r = Reassembler(sink, sink.on_anomaly, {})
    import numpy as np
    from kafkatap.dissect.packets import ip, link, tcp
    for n, frame in enumerate(hs + shuffled + flow.fin(0) + flow.fin(1)):
        d = np.frombuffer(frame, np.uint8)
        one = np.array([0])
        l3 = link.network_layer(d, one, np.array([len(frame)]), 1)[0]
        f = ip.parse_ip(d, l3, np.array([len(frame)]), np.array([len(frame)]), np.array([4]))
        t = tcp.parse_tcp(d, f.l4, f.l4end)
        po, pl = int(t.payload[0]), int(t.payload_len[0])
        key = (int(f.src_hi[0]), int(f.src_lo[0]), int(f.dst_hi[0]), int(f.dst_lo[0]),
               int(t.sport[0]) << 16 | int(t.dport[0]))
        r.segment(n, n, key, int(t.seq[0]), int(t.ack[0]), int(t.flags[0]), frame[po:po + pl], 0)
    assert sink.pieces(sink.conns[0], 0) == [data] and sink.closes() == [(sink.conns[0], "fin")]


def test_far_away_segments_are_skipped_then_followed(tmp_path):
    c, s = ("10.0.0.1", 40000), ("10.0.0.2", 9092)
    far = 100 + 3_000_000_000  # as if the capture had lost 3 GB of this direction
    frames = [tcp_frame(c, s, 100, b"a" * 10), tcp_frame(c, s, 2_000_000_000, b"junk"),
              tcp_frame(c, s, 110, b"b" * 10)] + [tcp_frame(c, s, far + 10 * n, b"c" * 10) for n in range(4)]
    sink, stats = run(tmp_path, frames)
    conn = sink.conns[0]
    assert sink.pieces(conn, 0) == [b"a" * 10 + b"b" * 10, ("gap", 3_000_000_000), b"c" * 20]
    assert stats.anomalies == {"out_of_window": 3, "sequence_jump": 1}


def test_acknowledged_hole_is_a_gap_at_once(tmp_path):
    flow, hs, segs = flow_with_data()
    c, s = flow.client, flow.server
    early_ack = tcp_frame(s, c, flow.next[1], b"", ACK, ack=flow.isn[0] + 1 + 1280)  # covers segment 0 only
    full_ack = tcp_frame(s, c, flow.next[1], b"", ACK, ack=flow.isn[0] + 1 + 3 * 1280)  # receiver got 0..2
    sink, stats = run(tmp_path, hs + [segs[0], segs[2], early_ack, segs[3], full_ack, segs[4]])
    conn = sink.conns[0]
    kinds = [(e[0], len(e[3]) if e[0] == "data" else e[3]) for e in sink.events if e[0] in ("data", "gap")]
    assert kinds == [("data", 1280), ("gap", 1280), ("data", 1280), ("data", 1280), ("data", 1280)]
    assert [e[4].packet_index for e in sink.events if e[0] == "gap"] == [7]  # declared at the full ACK
    assert sink.pieces(conn, 0) == [DATA[:1280], ("gap", 1280), DATA[2560:6400]] and stats.gap_bytes == 1280


def test_retransmission_after_acks_below_the_hole_fills_it(tmp_path):
    flow, hs, segs = flow_with_data()
    c, s = flow.client, flow.server
    dup_ack = tcp_frame(s, c, flow.next[1], b"", ACK, ack=flow.isn[0] + 1 + 1280)
    sink, stats = run(tmp_path, hs + [segs[0], segs[2], dup_ack, segs[3], dup_ack, segs[1]] + segs[4:])
    assert sink.data(sink.conns[0], 0) == DATA and stats.gap_bytes == 0
