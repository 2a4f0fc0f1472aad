"""Hand-built TLS 1.3 connections (forge.py) for the cases OpenSSL cannot be driven into from Python: every suite's
key schedule apart from OpenSSL, KeyUpdates, 0-RTT, a HelloRetryRequest, padding, empty records, waiting for the
other direction, and the ways a connection can be cut short."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tls import KeyLog, TlsSession
from kafkatap.dissect.tls.records import HEADER_LENGTH
from tests.dissect.tls.forge import LABELS, Tls13Forge, client_hello, record
from tests.dissect.tls.replay import balanced, replay

NAMES = {0x1301: "TLS_AES_128_GCM_SHA256", 0x1302: "TLS_AES_256_GCM_SHA384", 0x1303: "TLS_CHACHA20_POLY1305_SHA256"}


@pytest.mark.parametrize("suite", NAMES)
def test_each_suite_with_key_updates_padding_and_empty_records(suite: int) -> None:
    forge = Tls13Forge(suite)
    forge.send(0, b"request-1")
    forge.send(1, b"x" * 40_000, padding=100)  # three records, each padded
    forge.key_update(0, requested=True)
    forge.send(0, b"")  # an empty application record
    forge.key_update(1)
    forge.send(1, b"response-after-update")
    forge.key_update(0)
    forge.key_update(0)
    forge.send(0, b"request-2")
    forge.sealed(1, 21, b"\x01\x00")  # close_notify
    session = TlsSession(forge.keylog())
    assert replay(session, forge.wire, seed=suite) == tuple(forge.sent)
    assert session.suite_name == NAMES[suite]
    assert balanced(session, (len(forge.wire[0]), len(forge.wire[1])))
    assert all(stats.undecrypted == {} for stats in session.stats)
    assert [(a.direction, a.name) for a in session.alerts] == [(1, "close_notify")]


def test_early_data_is_booked_not_decrypted() -> None:
    forge = Tls13Forge(early_data=True)
    forge.send(0, b"after the handshake")
    session = TlsSession(forge.keylog())
    assert replay(session, forge.wire, seed=1) == tuple(forge.sent)
    assert session.client_hello is not None and session.client_hello.early_data
    assert session.stats[0].undecrypted == {"early_data": forge.early_bytes}
    assert balanced(session)


def test_hello_retry_request() -> None:
    forge = Tls13Forge(0x1302, retry=True, early_data=True)
    forge.send(0, b"ping")
    forge.send(1, b"pong")
    session = TlsSession(forge.keylog())
    assert replay(session, forge.wire, seed=2) == tuple(forge.sent)
    assert session.server_hello is not None and not session.server_hello.retry
    assert session.stats[0].undecrypted == {"early_data": forge.early_bytes}  # refused by the retry, still 0-RTT
    assert balanced(session)


def test_hello_split_across_records() -> None:
    forge = Tls13Forge(split_hello=True)
    forge.send(0, b"hello")
    session = TlsSession(forge.keylog())
    assert replay(session, forge.wire, seed=3) == tuple(forge.sent)


def test_server_first_then_client_releases_the_server_plaintext() -> None:
    forge = Tls13Forge()
    forge.send(1, b"server speaks first")
    session = TlsSession(forge.keylog())
    assert session.feed(1, forge.wire[1]) == []
    assert session.stats[1].pending > 0
    assert session.feed(0, memoryview(forge.wire[0])) == [(1, b"server speaks first")]
    assert session.stats[1].pending == 0 and balanced(session)


def test_too_much_waiting_is_no_handshake() -> None:
    forge = Tls13Forge()
    forge.send(1, b"y" * 100_000)
    session = TlsSession(forge.keylog(), max_held=50_000)
    session.feed(1, forge.wire[1])
    stats = session.stats[1]
    assert stats.undecrypted["no_handshake"] > 50_000 and stats.pending == 0 and stats.balanced


def test_close_books_a_cut_record_and_records_still_waiting() -> None:
    forge = Tls13Forge()
    forge.send(0, b"z" * 1000)
    session = TlsSession(forge.keylog())
    session.feed(0, forge.wire[0][:-10])  # the last record cut short, and the client waits for the ServerHello
    session.feed(1, forge.wire[1][:50])  # the ServerHello is not complete
    session.close()
    client, server = session.stats
    assert client.undecrypted == {"no_handshake": client.seen - client.tls_overhead} and client.pending == 0
    assert server.undecrypted == {"truncated": 50} and server.balanced and client.balanced


def test_close_mid_record() -> None:
    forge = Tls13Forge()
    forge.send(0, b"z" * 1000)
    session = TlsSession(forge.keylog())
    session.feed(1, forge.wire[1])
    assert session.feed(0, forge.wire[0][:-10]) == []
    session.close()
    assert session.stats[0].undecrypted == {"truncated": 1000 + HEADER_LENGTH + 17 - 10}
    assert balanced(session)


def test_capture_starting_mid_connection_is_no_handshake() -> None:
    forge = Tls13Forge()
    forge.send(0, b"a" * 5000)
    forge.send(1, b"b" * 5000)
    session = TlsSession(forge.keylog())
    session.feed(0, forge.wire[0][-(5000 + HEADER_LENGTH + 17):])  # the last record only
    session.feed(1, forge.wire[1][-(5000 + HEADER_LENGTH + 17):])
    for stats in session.stats:
        assert stats.undecrypted == {"no_handshake": 5000 + HEADER_LENGTH + 17}
        assert "mid-connection" in stats.stopped


def test_unsupported_tls13_suite() -> None:
    forge = Tls13Forge(0x1304)  # TLS_AES_128_CCM_SHA256
    forge.send(0, b"ccm")
    session = TlsSession(forge.keylog())
    replay(session, forge.wire)
    assert session.suite_name == "0x1304"
    assert all(set(stats.undecrypted) == {"unsupported_suite"} for stats in session.stats)
    assert balanced(session)


def test_missing_application_secret() -> None:
    forge = Tls13Forge()
    forge.send(0, b"secret data")
    session = TlsSession(forge.keylog(LABELS[0], LABELS[1]))  # handshake secrets only
    assert replay(session, forge.wire) == (b"", b"")
    for stats in session.stats:
        assert set(stats.undecrypted) == {"no_key"} and "CLIENT_TRAFFIC_SECRET_0" in session.stats[0].stopped
    assert session.stats[1].tls_overhead > 20_000  # the encrypted handshake was read


def test_all_padding_record_and_a_bad_tag_cost_one_record_each() -> None:
    forge = Tls13Forge()
    forge.send(0, b"before")
    padding_only = _all_zero_record(forge)
    forge.wire[0] += padding_only
    damaged = forge.sealed(0, 23, b"damaged")
    forge.wire[0][-1] ^= 1
    forge.send(0, b"after")
    session = TlsSession(forge.keylog())
    assert replay(session, forge.wire)[0] == b"beforeafter"
    assert session.stats[0].undecrypted == {"bad_record": len(padding_only) + len(damaged)}
    assert balanced(session)


def _all_zero_record(forge: Tls13Forge) -> bytes:
    """A record whose inner plaintext is only zeros: no content type (RFC 8446 §5.4: unexpected_message)."""
    sealer = forge.sealers[0]
    header = bytes([23, 3, 3, 0, 17])
    nonce = (sealer.iv ^ sealer.seq).to_bytes(12, "big")
    sealer.seq += 1
    return header + sealer.aead.encrypt(nonce, b"\0", header)


def test_server_refuses_with_a_plaintext_alert() -> None:
    hello = record(22, client_hello(bytes(32)), 0x0301)
    session = TlsSession(KeyLog())
    session.feed(0, hello)
    session.feed(1, record(21, b"\x02\x28"))  # fatal handshake_failure
    session.close()
    assert [(a.direction, a.level, a.name, a.encrypted) for a in session.alerts] == [
        (1, 2, "handshake_failure", False)]
    assert session.stats[1].tls_overhead == 7 and session.stats[0].tls_overhead == len(hello)
    assert balanced(session)
