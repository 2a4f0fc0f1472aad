"""Bad input: real client traffic replayed with faults injected at the packet level.

A sample capture's connections are re-packetised (same addresses, same bytes, fresh TCP segments) so a test can drop,
reorder, duplicate or corrupt segments and know exactly which Kafka messages the damage touched. Every run must
finish, report the damage as anomalies, keep the byte account balanced, and still decode every message it could.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.paths import SAMPLES
from tests.support.pcap import TcpFlow, pcap_bytes, timed
from tests.support.replay import Replay

SAMPLE = "produce_consume"

pytestmark = pytest.mark.skipif(not (SAMPLES / f"{SAMPLE}.pcapng").exists(), reason="sample not generated yet")


@pytest.fixture(scope="module")
def replay() -> Replay:
    return Replay(SAMPLE)


def dissect(tmp_path: Path, name: str, frames: list[bytes] | bytes, ports: list[int]) -> tuple[dict, list, list]:
    capture = tmp_path / f"{name}.pcap"
    capture.write_bytes(frames if isinstance(frames, bytes) else pcap_bytes(timed(frames)))
    out = tmp_path / name
    summary = dissect_captures([str(capture)], str(out), ports=ports)
    assert summary["byte_account"]["balanced"], summary["byte_account"]["totals"]
    return summary, pq.read_table(out / "frames").to_pylist(), pq.read_table(out / "anomalies").to_pylist()


def requests_seen(frames: list[dict]) -> set[tuple[int, int]]:
    return {(int(r["client_addr"].rsplit(":", 1)[1]), r["correlation_id"]) for r in frames
            if r["ts_request"] is not None}


def responses_seen(frames: list[dict]) -> set[tuple[int, int]]:
    return {(int(r["client_addr"].rsplit(":", 1)[1]), r["correlation_id"]) for r in frames
            if r["ts_response"] is not None}


def pairs(frames: list[dict]) -> set[tuple]:
    return {(r["client_addr"], r["correlation_id"], r["api_key"], r["api_version"], r["status"], r["error_code"],
             r["request_bytes"], r["response_bytes"], r["request_json"], r["response_json"]) for r in frames}


@pytest.fixture(scope="module")
def baseline(replay: Replay, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    summary, frames, anomalies = dissect(tmp_path_factory.mktemp("base"), "base",
                                         [s.frame for s in replay.segments()], [replay.port])
    assert anomalies == []
    assert {r["status"] for r in frames} <= {"ok", "unpaired_request"}
    return frames


def test_reordered_and_duplicated_segments_change_nothing(replay: Replay, baseline: list, tmp_path: Path) -> None:
    segs = replay.segments()
    rnd = random.Random(1)
    frames = [s.frame for s in segs]
    for _ in range(30):  # swap neighbours of the same connection and direction
        i = rnd.randrange(len(segs) - 1)
        if segs[i].side >= 0 and (segs[i].conn, segs[i].side) == (segs[i + 1].conn, segs[i + 1].side):
            frames[i], frames[i + 1] = frames[i + 1], frames[i]
    dups = sorted(rnd.sample(range(len(frames)), 20), reverse=True)
    for i in dups:
        frames.insert(i + 3, frames[i])
    _, got, _ = dissect(tmp_path, "shuffled", frames, [replay.port])
    assert pairs(got) == pairs(baseline)


@pytest.mark.parametrize("seed", range(6))
def test_a_dropped_segment_loses_only_the_messages_it_touched(replay: Replay, baseline: list, tmp_path: Path,
                                                              seed: int) -> None:
    segs = replay.segments()
    data = [i for i, s in enumerate(segs) if s.side >= 0]
    victim = segs[random.Random(seed).choice(data[len(data) // 4:])]
    frames = [s.frame for s in segs if s is not victim]
    summary, got, anomalies = dissect(tmp_path, f"drop{seed}", frames, [replay.port])
    assert any(a["kind"] == "gap" and a["bytes"] == victim.end - victim.start for a in anomalies)
    port = replay.conns[victim.conn].addr[0][1]
    touched = {(port, corr) for start, end, corr in replay.messages(victim.conn, victim.side)
               if start < victim.end and end > victim.start}
    expect_requests = requests_seen(baseline) - (touched if victim.side == 0 else set())
    expect_responses = responses_seen(baseline) - (touched if victim.side == 1 else set())
    assert requests_seen(got) >= expect_requests
    assert responses_seen(got) >= expect_responses
    ok = sum(r["status"] == "ok" for r in got)
    assert ok >= sum(r["status"] == "ok" for r in baseline) - len(touched)


def test_a_lost_first_request_leaves_the_rest_of_the_connection(replay: Replay, baseline: list,
                                                                tmp_path: Path) -> None:
    segs = replay.segments()
    conn = max(range(len(replay.conns)), key=lambda c: sum(s.side == 0 for s in segs if s.conn == c))
    victim = next(s for s in segs if s.conn == conn and s.side == 0)
    _, got, anomalies = dissect(tmp_path, "first", [s.frame for s in segs if s is not victim], [replay.port])
    port = replay.conns[conn].addr[0][1]
    touched = {(port, corr) for start, end, corr in replay.messages(conn, 0) if start < victim.end}
    assert requests_seen(got) >= requests_seen(baseline) - touched
    assert responses_seen(got) >= responses_seen(baseline)
    assert sum(r["status"] == "ok" for r in got) == sum(r["status"] == "ok" for r in baseline) - len(touched)


def test_a_capture_starting_mid_stream_decodes_what_follows(replay: Replay, baseline: list, tmp_path: Path) -> None:
    segs = replay.segments()
    produce_conn = max(range(len(replay.conns)), key=lambda c: sum(s.end - s.start for s in segs if s.conn == c))
    own = [s for s in segs if s.conn == produce_conn]
    cut = own[len(own) // 3]  # everything of this connection before this segment (SYN included) is not captured
    frames = [s.frame for s in segs if s.conn != produce_conn or s.side >= 0 and own.index(s) >= own.index(cut)]
    _, got, anomalies = dissect(tmp_path, "midstream", frames, [replay.port])
    port = replay.conns[produce_conn].addr[0][1]
    first_kept = {side: min(s.start for s in own[own.index(cut):] if s.side == side) for side in (0, 1)}
    later = {(port, corr) for start, _, corr in replay.messages(produce_conn, 0) if start >= first_kept[0]}
    assert later and requests_seen(got) >= later
    assert {r for r in requests_seen(baseline) if r[0] != port} <= requests_seen(got)


def test_kafka_on_an_unconfigured_port_is_found(replay: Replay, baseline: list, tmp_path: Path) -> None:
    _, with_syn, _ = dissect(tmp_path, "noport", [s.frame for s in replay.segments()], [9092])
    assert pairs(with_syn) == pairs(baseline)
    _, without_syn, _ = dissect(tmp_path, "noport_nosyn", [s.frame for s in replay.segments(handshake=False)], [9092])
    assert pairs(without_syn) == pairs(baseline)


def test_truncated_files_finish_and_keep_what_they_hold(replay: Replay, baseline: list, tmp_path: Path) -> None:
    whole = pcap_bytes(timed([s.frame for s in replay.segments()]))
    known = pairs(baseline)
    rnd = random.Random(7)
    for n in range(6):
        cut = rnd.randrange(24, len(whole))
        _, got, anomalies = dissect(tmp_path, f"cut{n}", whole[:cut], [replay.port])
        assert {p for p in pairs(got) if p[4] == "ok"} <= known
        assert any(a["capture_file"] for a in anomalies) or cut == len(whole)


def test_random_bytes_on_the_kafka_port(replay: Replay, baseline: list, tmp_path: Path) -> None:
    rnd = random.Random(3)
    flow = TcpFlow(client=("127.0.0.1", 50001), server=("127.0.0.1", replay.port))
    noise = flow.handshake() + flow.send(0, rnd.randbytes(20000)) + flow.send(1, rnd.randbytes(5000)) + flow.fin(0)
    summary, got, anomalies = dissect(tmp_path, "noise", [s.frame for s in replay.segments()] + noise, [replay.port])
    assert pairs(got) == pairs(baseline)
    stream = [s for s in summary["byte_account"]["streams"] if s["conn_id"].startswith("127.0.0.1:50001>")]
    assert sum(s["seen"] for s in stream) == 25000
    assert sum(s["decoded"] for s in stream) == 0
    kinds = {a["kind"] for a in anomalies if a["conn_id"] and a["conn_id"].startswith("127.0.0.1:50001>")}
    assert "resync" in kinds and kinds <= {"resync", "bad_length", "truncated_frame"}


def test_tls_on_the_kafka_port_is_one_anomaly(replay: Replay, baseline: list, tmp_path: Path) -> None:
    rnd = random.Random(4)
    flow = TcpFlow(client=("127.0.0.1", 50002), server=("127.0.0.1", replay.port))
    hello = b"\x16\x03\x01\x02\x00" + rnd.randbytes(512)
    server = b"\x16\x03\x03\x04\x00" + rnd.randbytes(1024) + b"\x17\x03\x03\x01\x00" + rnd.randbytes(256)
    tls = flow.handshake() + flow.send(0, hello) + flow.send(1, server) + flow.send(0, rnd.randbytes(300))
    before = [s.frame for s in replay.segments()] + tls
    _, got, anomalies = dissect(tmp_path, "tls", before + flow.fin(0), [replay.port])
    assert pairs(got) == pairs(baseline)
    tls_rows = [a for a in anomalies if a["kind"] == "tls"]
    assert len(tls_rows) == 1 and tls_rows[0]["bytes"] == len(hello) + len(server) + 300
    assert tls_rows[0]["packet_index"] >= len(before), "reported at the packet that closed the connection"
    assert [a for a in anomalies if a["kind"] != "tls"] == []


@pytest.mark.parametrize("prefix", [b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", struct.pack(">i", 200 << 20)])
def test_absurd_length_prefix_resynchronises(replay: Replay, baseline: list, tmp_path: Path, prefix: bytes) -> None:
    junk = prefix + bytes(range(64))

    def edit(conn: int, side: int, n: int, data: bytes) -> bytes:
        return junk + data if (conn, side, n) == (target, 0, 3) else data

    counts: dict[int, int] = {}
    for conn, side, _ in replay.events:
        counts[conn] = counts.get(conn, 0) + (side == 0)
    target = max(counts, key=counts.get)
    _, got, anomalies = dissect(tmp_path, "absurd", [s.frame for s in replay.segments(edit=edit)], [replay.port])
    kinds = {a["kind"]: a["bytes"] for a in anomalies}
    assert kinds == {"bad_length": 0, "resync": len(junk)}
    assert requests_seen(got) == requests_seen(baseline)
    assert {p[:8] for p in pairs(got)} == {p[:8] for p in pairs(baseline)}
