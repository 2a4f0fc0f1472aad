"""`kafkatap dissect --tls-keylog`: Kafka inside real TLS 1.3 and 1.2 comes out as the same Kafka in the clear would,
the byte account balances over the wire bytes, no secret reaches the output, and every way TLS can go wrong (no key
log, the wrong one, a lost segment, a damaged record, garbage, a connection cut short, a garbage key log) is a
counted anomaly, never an exception. Both dissector paths (compiled and pure Python) give the same output."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect import native
from kafkatap.dissect.anomalies import KINDS
from kafkatap.dissect.cli import main
from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tls import REASONS
from tests.dissect.tls.kafka_inside import PASSWORD, PORT, TLS12, Captured, encrypted, in_the_clear
from tests.support.kafka_messages import NEVER_NAMED
from tests.support.mutations import mutate
from tests.support.pcap import TcpFlow, pcap_bytes, timed

TABLES = ("frames", "batches", "records", "share", "anomalies")
WHERE = {"conn_id", "client_addr", "broker_addr", "ts_request", "ts_response", "latency_us", "ts", "tls",
         "request_file", "request_packet", "response_file", "response_packet"}
VERSIONS = {"TLS 1.3": None, "TLS 1.2": TLS12}
_made: dict[str, Captured] = {}


def captured(version: str) -> Captured:
    if version not in _made:
        _made[version] = encrypted(50001, maximum_version=VERSIONS[version])
    return _made[version]


def dissect(tmp_path: Path, capture: Path, keylogs: list[Path] | None, name: str = "out") -> tuple[Path, dict]:
    out = tmp_path / name
    summary = dissect_captures([str(capture)], str(out), ports=[PORT], records=True, payloads=True,
                               tls_keylog=[str(k) for k in keylogs or ()])
    return out, summary


def rows(out: Path, table: str) -> list[dict]:
    return pq.read_table(out / table).to_pylist()


def without_where(table: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in WHERE} for row in table]


def streams(summary: dict) -> dict[str, dict]:
    return {s["direction"]: s for s in summary["byte_account"]["streams"]}


@pytest.mark.parametrize("version", VERSIONS)
def test_decrypted_kafka_is_the_kafka_in_the_clear(tmp_path: Path, version: str) -> None:
    tls = captured(version)
    capture, keylog = tls.write(tmp_path, "tls")
    clear = tmp_path / "clear.pcap"
    clear.write_bytes(pcap_bytes(timed(in_the_clear(50002))))
    out, summary = dissect(tmp_path, capture, [keylog])
    plain_out, plain = dissect(tmp_path, clear, None, "plain")

    frames = rows(out, "frames")
    assert [(f["api_name"], f["status"], f["tls"]) for f in frames] == [
        (name, "ok", version) for name in ("SaslHandshake", "SaslAuthenticate", "Metadata", "Fetch", "Produce")]
    assert {f["tls"] for f in rows(plain_out, "frames")} == {None}
    for table in ("frames", "batches", "records", "share"):
        assert without_where(rows(out, table)) == without_where(rows(plain_out, table)), table
    assert [(b["topic"], b["record_count"], b["base_offset"], b["assigned_offset"]) for b in rows(out, "batches")] \
        == [("orders", 3, 5, None), (NEVER_NAMED, 1, 5, None), ("orders", 4, 0, 40)]  # an id no Metadata named
    assert summary["anomalies_by_kind"] == {} and summary["messages_by_api"] == plain["messages_by_api"]

    account = summary["byte_account"]
    assert account["balanced"]
    for direction, stream in streams(summary).items():
        clear_stream = streams(plain)[direction]
        assert stream["decoded"] == clear_stream["decoded"] == clear_stream["seen"]
        assert stream["skipped"] == {"tls_overhead": stream["seen"] - stream["decoded"]}
        assert stream["tls"]["version"] == version and stream["tls"]["plaintext"] == clear_stream["seen"]
        assert stream["tls"]["stopped"] is None and stream["tls"]["alerts"] == ["close_notify"]
    assert account["totals"]["seen"] == sum(len(w) for w in tls.conversation.wire)
    assert summary["tls"]["keylog_files"] == [str(keylog)]
    assert summary["tls"]["connections"] == {"decrypted": 1, "partly_decrypted": 0, "not_decrypted": 0}
    assert summary["connections"]["tls"] == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_no_secret_and_no_password_reaches_the_output(tmp_path: Path, version: str) -> None:
    tls = captured(version)
    capture, keylog = tls.write(tmp_path, "tls")
    out, _ = dissect(tmp_path, capture, [keylog])
    text, raw = (out / "summary.json").read_text(), (out / "summary.json").read_bytes()
    for table in TABLES:
        data = rows(out, table)
        text += json.dumps(data, default=repr)
        raw += b"".join(v for row in data for v in row.values() if isinstance(v, bytes))
    for parquet in out.glob("*/*.parquet"):
        raw += parquet.read_bytes()
    secrets = tls.secrets()
    assert secrets and PASSWORD in b"".join(tls.conversation.sent)
    for secret in secrets:
        assert secret.hex() not in text.lower() and secret.hex().upper() not in text and secret not in raw
        assert secret.hex() not in raw.decode("latin-1").lower()
    assert PASSWORD.decode() not in text and PASSWORD not in raw
    assert "alice" not in text  # the whole PLAIN token is redacted, not only the password


def test_without_a_key_log_tls_is_counted_and_the_anomaly_says_how_to_decrypt(tmp_path: Path) -> None:
    capture, _ = captured("TLS 1.3").write(tmp_path, "tls")
    out, summary = dissect(tmp_path, capture, None)
    (anomaly,) = rows(out, "anomalies")
    assert anomaly["kind"] == "tls" and "give --tls-keylog to decrypt" in anomaly["detail"]
    assert rows(out, "frames") == []
    assert summary["byte_account"]["balanced"]
    assert {d: s["skipped"] for d, s in streams(summary).items()} == {
        d: {"tls": s["seen"]} for d, s in streams(summary).items()}
    assert summary["tls"] == {"keylog_files": [], "keylog": None,
                              "connections": {"decrypted": 0, "partly_decrypted": 0, "not_decrypted": 1}}


def test_the_wrong_key_log_is_no_key(tmp_path: Path) -> None:
    capture, _ = captured("TLS 1.3").write(tmp_path, "tls")
    _, other = captured("TLS 1.2").write(tmp_path, "other")
    out, summary = dissect(tmp_path, capture, [other])
    anomalies = sorted(rows(out, "anomalies"), key=lambda a: a["direction"])
    assert [(a["kind"], a["direction"]) for a in anomalies] == [("tls_no_key", "request"), ("tls_no_key", "response")]
    assert all("CLIENT_HANDSHAKE_TRAFFIC_SECRET" in a["detail"] or "SERVER_HANDSHAKE_TRAFFIC_SECRET" in a["detail"]
               for a in anomalies)
    assert summary["byte_account"]["balanced"] and rows(out, "frames") == []
    for stream in streams(summary).values():
        assert set(stream["skipped"]) == {"tls_overhead", "tls_no_key"} and stream["decoded"] == 0
        assert stream["skipped"]["tls_overhead"] > 0  # the hellos, read in the clear
    assert [a["bytes"] for a in anomalies] == [s["skipped"]["tls_no_key"] for s in streams(summary).values()]
    assert summary["tls"]["connections"]["not_decrypted"] == 1


def test_a_lost_segment_stops_that_direction_only(tmp_path: Path) -> None:
    tls = captured("TLS 1.3")
    client = [i for i, p in enumerate(tls.packets) if _payload(p) and _from_client(p)]
    dropped = client[-2]  # the Produce request's flight
    capture, keylog = tls.write(tmp_path, "tls", [p for i, p in enumerate(tls.packets) if i != dropped])
    out, summary = dissect(tmp_path, capture, [keylog])
    kinds = [a["kind"] for a in rows(out, "anomalies")]
    assert "gap" in kinds and "tls_lost_segment" in kinds
    assert summary["byte_account"]["balanced"]
    request = streams(summary)["request"]
    assert request["lost_in_gaps"] == len(_payload(tls.packets[dropped])) and "tls_lost_segment" in request["skipped"]
    assert streams(summary)["response"]["tls"]["stopped"] is None
    frames = {f["api_name"]: f["status"] for f in rows(out, "frames")}
    assert frames["Fetch"] == "ok" and frames.get("Produce") != "ok"
    assert summary["tls"]["connections"]["partly_decrypted"] == 1


def test_a_damaged_record_costs_its_message_and_the_next_ones_still_decode(tmp_path: Path) -> None:
    tls = captured("TLS 1.3")
    server = [i for i, p in enumerate(tls.packets) if _payload(p) and not _from_client(p)]
    damaged = list(tls.packets)
    at = server[-4]  # the Metadata response's record (the Fetch, Produce and close_notify follow)
    damaged[at] = damaged[at][:-1] + bytes([damaged[at][-1] ^ 0xFF])  # the last byte of the record's tag
    capture, keylog = tls.write(tmp_path, "tls", damaged)
    out, summary = dissect(tmp_path, capture, [keylog])
    kinds = {a["kind"] for a in rows(out, "anomalies")}
    assert "tls_bad_record" in kinds
    statuses = {f["api_name"]: f["status"] for f in rows(out, "frames")}
    assert statuses["Metadata"] == "unpaired_request" and statuses["Fetch"] == statuses["Produce"] == "ok"
    assert summary["byte_account"]["balanced"]
    assert streams(summary)["response"]["tls"]["stopped"] is None  # a damaged record does not stop the direction


def test_garbage_truncation_and_a_garbage_key_log_are_counted_never_raised(tmp_path: Path) -> None:
    rnd = random.Random(5)
    tls = captured("TLS 1.2")
    garbage = TcpFlow(client=("127.0.0.1", 50003), server=("127.0.0.1", PORT))
    packets = garbage.handshake() + garbage.send(0, b"\x16\x03\x01\x02\x00" + rnd.randbytes(3000))
    packets += garbage.send(1, b"\x16\x03\x03" + rnd.randbytes(2000)) + garbage.fin(0)
    cut = TcpFlow(client=("127.0.0.1", 50004), server=("127.0.0.1", PORT))  # ends inside the Fetch response
    packets += cut.handshake()
    flights = tls.conversation.flights
    fetch = len(flights) - 4
    for direction, data in flights[:fetch]:
        packets += cut.send(direction, data)
    packets += cut.send(flights[fetch][0], flights[fetch][1][:100])
    capture, keylog = tls.write(tmp_path, "tls", packets)
    bad_keylog = tmp_path / "garbage.keys"
    bad_keylog.write_bytes(rnd.randbytes(5000) + b"\nCLIENT_RANDOM zz 00\n" + tls.conversation.keylog)
    out, summary = dissect(tmp_path, capture, [bad_keylog])
    kinds = [a["kind"] for a in rows(out, "anomalies")]
    assert "tls_bad_record" in kinds and "tls_truncated" in kinds and "truncated_frame" not in kinds
    assert summary["byte_account"]["balanced"]
    assert summary["tls"]["keylog"]["malformed_lines"] > 0
    assert any("lines of the TLS key logs" in w for w in summary["warnings"])
    assert {f["api_name"] for f in rows(out, "frames")} >= {"SaslHandshake", "Metadata"}  # the key log's good line
    assert summary["tls"]["connections"] == {"decrypted": 0, "partly_decrypted": 1, "not_decrypted": 1}


def test_damaged_tls_captures_are_counted_never_raised(tmp_path: Path) -> None:
    """Seeded damage to the TLS packets' payloads, dropped and repeated segments: every run balances."""
    rnd = random.Random(8)
    tls13, tls12 = captured("TLS 1.3"), captured("TLS 1.2")
    keylog = tmp_path / "both.keys"
    keylog.write_bytes(tls13.conversation.keylog + tls12.conversation.keylog)
    header = 14 + 20 + 20
    kinds: set[str] = set()
    for n in range(16):
        packets = []
        for packet in tls13.packets + tls12.packets:
            roll = rnd.random()
            if roll < 0.03:
                continue
            if roll < 0.06:
                packets.append(packet)
            elif roll < 0.15 and len(packet) > header:
                packet = packet[:header] + mutate(packet[header:], rnd, 0)
                packet = packet[:16] + len(packet[14:]).to_bytes(2, "big") + packet[18:]  # the IPv4 total length
            packets.append(packet)
        capture = tmp_path / f"damaged{n}.pcap"
        capture.write_bytes(pcap_bytes(timed(packets)))
        _, summary = dissect(tmp_path, capture, [keylog], f"out{n}")
        assert summary["byte_account"]["balanced"], n
        kinds |= set(summary["anomalies_by_kind"])
    assert {"tls_bad_record", "tls_lost_segment"} <= kinds, kinds


def test_every_tls_reason_has_an_anomaly_kind() -> None:
    for reason in REASONS:
        assert f"tls_{reason}" in KINDS


def test_both_dissector_paths_give_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if native.missing():
        pytest.skip("the compiled core is not built")
    tls = captured("TLS 1.3")
    server = [i for i, p in enumerate(tls.packets) if _payload(p) and not _from_client(p)]
    damaged = list(tls.packets)
    damaged[server[-4]] = damaged[server[-4]][:-1] + b"\0"
    packets = captured("TLS 1.2").packets + tls.packets + damaged[:-10]
    capture, keylog = tls.write(tmp_path, "tls", packets)
    (tmp_path / "both.keys").write_bytes(keylog.read_bytes() + captured("TLS 1.2").conversation.keylog)
    results = []
    for compiled in (True, False):
        monkeypatch.setattr(native, "compiled", compiled)
        out, summary = dissect(tmp_path, capture, [tmp_path / "both.keys"], f"out-{compiled}")
        results.append(({t: pq.read_table(out / t) for t in TABLES}, summary))
    (ours, our_summary), (theirs, their_summary) = results
    assert our_summary == their_summary
    for table in TABLES:
        assert ours[table].equals(theirs[table], check_metadata=True), table
    assert our_summary["frames_by_status"]["ok"] >= 5


@pytest.mark.slow
def test_workers_decrypt_what_one_process_does(tmp_path: Path) -> None:
    """The key log travels to spawned workers; each decrypts its own connections."""
    tls13, tls12 = captured("TLS 1.3"), encrypted(50005, maximum_version=TLS12)
    capture, keylog = tls13.write(tmp_path, "tls", tls13.packets + tls12.packets)
    keylog.write_bytes(tls13.conversation.keylog + tls12.conversation.keylog)
    results = []
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        summary = dissect_captures([str(capture)], str(out), ports=[PORT], tls_keylog=[str(keylog)], workers=workers)
        results.append((sorted(json.dumps(r, default=str) for r in rows(out, "frames")), summary["tls"]))
    assert results[0] == results[1]
    assert results[1][1]["connections"] == {"decrypted": 2, "partly_decrypted": 0, "not_decrypted": 0}


def test_cli_key_log_errors_and_sslkeylogfile(tmp_path: Path, capsys: pytest.CaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    capture, keylog = captured("TLS 1.3").write(tmp_path, "tls")
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    for bad, phrase in ((tmp_path / "missing.keys", "cannot be read (No such file"), (tmp_path, "is a folder")):
        assert main([str(capture), "-o", str(tmp_path / "out"), "--port", str(PORT), "--tls-keylog", str(bad)]) == 2
        err = capsys.readouterr().err
        assert phrase in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()

    monkeypatch.setenv("SSLKEYLOGFILE", str(keylog))
    assert main([str(capture), "-o", str(tmp_path / "env"), "--port", str(PORT), "-q"]) == 0
    summary = json.loads((tmp_path / "env" / "summary.json").read_text())
    assert summary["tls"]["keylog_files"] == [str(keylog)] and summary["frames_by_status"] == {"ok": 5}

    monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / "not-written-yet.keys"))  # set for some other program
    # nothing decrypted, so no Kafka found: exit 3, with the key log as the way to point kafkatap at it
    assert main([str(capture), "-o", str(tmp_path / "unset"), "--port", str(PORT), "-q"]) == 3
    err = capsys.readouterr().err
    assert "SSLKEYLOGFILE=" in err and "1 connection is TLS: give the key log" in err
    summary = json.loads((tmp_path / "unset" / "summary.json").read_text())
    assert summary["tls"]["keylog_files"] == [] and summary["anomalies_by_kind"] == {"tls": 1}

    os.environ.pop("SSLKEYLOGFILE")
    assert main([str(capture), "-o", str(tmp_path / "given"), "--port", str(PORT), "-q",
                 "--tls-keylog", str(keylog), "--tls-keylog", str(keylog)]) == 0


def _payload(packet: bytes) -> bytes:
    """The TCP payload of one of TcpFlow's Ethernet + IPv4 + TCP frames."""
    return packet[14 + 20 + 20:]


def _from_client(packet: bytes) -> bool:
    return int.from_bytes(packet[14 + 20:14 + 22], "big") != PORT
