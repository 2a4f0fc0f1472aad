"""Real TLS from OpenSSL (Python's ssl, both ends in memory) decrypted from its wire bytes and the client's key log:
every suite decrypted here, fed in random chunks with the directions interleaved; then the ways it goes wrong (no key,
a lost segment, a CBC suite, garbage, a damaged record), each booked so that the account balances."""

from __future__ import annotations

import ssl

import pytest

from kafkatap.dissect.tls import KeyLog, TlsSession
from kafkatap.dissect.tls.protection import Tls13Decrypter
from kafkatap.dissect.tls.records import HEADER_LENGTH
from tests.dissect.tls.conversations import Conversation, converse, converse_apart
from tests.dissect.tls.replay import balanced, replay

TLS12 = ssl.TLSVersion.TLSv1_2
CASES = {  # name: (how to make it, the suite the session must report)
    "tls13-aes256-rsa": (lambda: converse(), "TLS_AES_256_GCM_SHA384"),
    "tls13-aes256-ecdsa": (lambda: converse(key_type="ecdsa"), "TLS_AES_256_GCM_SHA384"),
    "tls13-aes128": (lambda: converse_apart(tls13_suite="TLS_AES_128_GCM_SHA256"), "TLS_AES_128_GCM_SHA256"),
    "tls13-chacha20": (lambda: converse_apart(tls13_suite="TLS_CHACHA20_POLY1305_SHA256"),
                       "TLS_CHACHA20_POLY1305_SHA256"),
    "tls12-ecdhe-rsa-aes128": (lambda: converse(maximum_version=TLS12, ciphers="ECDHE-RSA-AES128-GCM-SHA256"),
                               "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    "tls12-ecdhe-rsa-aes256": (lambda: converse(maximum_version=TLS12, ciphers="ECDHE-RSA-AES256-GCM-SHA384"),
                               "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    "tls12-ecdhe-rsa-chacha20": (lambda: converse(maximum_version=TLS12, ciphers="ECDHE-RSA-CHACHA20-POLY1305"),
                                 "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    "tls12-ecdhe-ecdsa-aes128": (lambda: converse(key_type="ecdsa", maximum_version=TLS12,
                                                  ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"),
                                 "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    "tls12-ecdhe-ecdsa-aes256": (lambda: converse(key_type="ecdsa", maximum_version=TLS12,
                                                  ciphers="ECDHE-ECDSA-AES256-GCM-SHA384"),
                                 "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    "tls12-ecdhe-ecdsa-chacha20": (lambda: converse(key_type="ecdsa", maximum_version=TLS12,
                                                    ciphers="ECDHE-ECDSA-CHACHA20-POLY1305"),
                                   "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
}
_made: dict[str, Conversation] = {}


def conversation(name: str) -> Conversation:
    if name not in _made:
        _made[name] = CASES[name][0]()
    return _made[name]


def keylog_of(conv: Conversation) -> KeyLog:
    keylog = KeyLog()
    keylog.add_lines(conv.keylog.splitlines())
    return keylog


def secrets_of(conv: Conversation) -> list[bytes]:
    return [bytes.fromhex(line.split()[2]) for line in conv.keylog.decode().splitlines() if not line.startswith("#")]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("seed", [1, 2])
def test_decrypts_every_suite_in_random_chunks(name: str, seed: int) -> None:
    conv = conversation(name)
    session = TlsSession(keylog_of(conv))
    plaintext = replay(session, conv.wire, seed=seed)
    assert session.suite_name == CASES[name][1]
    assert session.version_name == conv.version.replace("TLSv", "TLS ")
    assert plaintext == conv.sent
    assert balanced(session, (len(conv.wire[0]), len(conv.wire[1])))
    for direction, stats in enumerate(session.stats):
        assert stats.undecrypted == {} and stats.pending == 0 and stats.stopped is None
        assert stats.decrypted + stats.tls_overhead == len(conv.wire[direction])
        assert stats.plaintext == len(conv.sent[direction])
    assert [(a.direction, a.name, a.encrypted) for a in session.alerts] == [(0, "close_notify", True),
                                                                           (1, "close_notify", True)]


def test_whole_streams_fed_one_after_the_other_either_way() -> None:
    """The server's records wait for the ClientHello (and the client's for the ServerHello): nothing is lost."""
    for name in ("tls13-aes256-rsa", "tls12-ecdhe-rsa-aes128"):
        conv = conversation(name)
        for first in (0, 1):
            session = TlsSession(keylog_of(conv))
            early = session.feed(first, conv.wire[first])
            assert early == [] and session.stats[first].pending > 0  # waits for the other direction's hello
            late = session.feed(1 - first, conv.wire[1 - first])
            got = (b"".join(p for d, p in early + late if d == 0), b"".join(p for d, p in early + late if d == 1))
            assert got == conv.sent
            assert balanced(session) and all(stats.pending == 0 for stats in session.stats)


def test_key_update_in_tls13(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenSSL's SSL_key_update (requested) mid-conversation: the client updates, the server answers with its own."""
    try:
        conv = converse_apart(tls13_suite="TLS_AES_128_GCM_SHA256", key_update=True)
    except RuntimeError as error:
        pytest.skip(f"cannot make OpenSSL send a KeyUpdate from here: {error}")
    updates: list[int] = []
    original = Tls13Decrypter.update
    monkeypatch.setattr(Tls13Decrypter, "update", lambda self: (updates.append(self.seq), original(self)))
    session = TlsSession(keylog_of(conv))
    assert replay(session, conv.wire, seed=3) == conv.sent
    assert len(updates) == 2 and balanced(session)
    assert all(stats.undecrypted == {} for stats in session.stats)


def test_no_key_log_entry_books_the_encrypted_bytes_as_no_key() -> None:
    for name in ("tls13-aes256-rsa", "tls12-ecdhe-rsa-aes128"):
        conv = conversation(name)
        other = conversation("tls13-aes256-ecdsa")  # a key log, but of another connection
        for keylog in (KeyLog(), keylog_of(other)):
            session = TlsSession(keylog)
            assert replay(session, conv.wire, seed=4) == (b"", b"")
            assert balanced(session, (len(conv.wire[0]), len(conv.wire[1])))
            for stats in session.stats:
                assert set(stats.undecrypted) == {"no_key"} and stats.decrypted == 0
                assert stats.tls_overhead > 0  # the hellos were read in the clear
                assert stats.stopped.startswith("no_key")


def test_lost_segment_keeps_what_came_before() -> None:
    conv = conversation("tls13-aes256-rsa")
    cut = len(conv.wire[0]) // 2  # inside the 40 KB message's records
    session = TlsSession(keylog_of(conv))
    got = b"".join(p for d, p in session.feed(0, conv.wire[0][:cut]) + session.feed(1, conv.wire[1]) if d == 0)
    session.gap(0, 1000)
    assert session.feed(0, conv.wire[0][cut + 1000:]) == []
    session.close()
    assert got and conv.sent[0].startswith(got)
    client, server = session.stats
    assert client.lost_in_gaps == 1000 and client.seen == len(conv.wire[0]) - 1000
    assert client.undecrypted["lost_segment"] > len(conv.wire[0]) - cut - 1000  # the later bytes and the cut record
    assert client.balanced and client.stopped.startswith("lost_segment")
    assert server.undecrypted == {} and server.plaintext == len(conv.sent[1])  # the other direction is unharmed


def test_gap_before_the_client_hello_stops_both_directions() -> None:
    conv = conversation("tls13-aes256-rsa")
    session = TlsSession(keylog_of(conv))
    session.gap(0, 300)
    session.feed(0, conv.wire[0][300:])
    session.feed(1, conv.wire[1])
    assert set(session.stats[0].undecrypted) == {"lost_segment"}
    assert set(session.stats[1].undecrypted) == {"lost_segment"}  # its records needed the ClientHello's random
    assert balanced(session)


def test_cbc_suite_is_unsupported() -> None:
    conv = converse(maximum_version=TLS12, ciphers="ECDHE-RSA-AES128-SHA256")
    session = TlsSession(keylog_of(conv))
    assert replay(session, conv.wire, seed=5) == (b"", b"")
    assert session.suite_name == "0xC027" and session.version_name == "TLS 1.2"
    assert balanced(session, (len(conv.wire[0]), len(conv.wire[1])))
    for stats in session.stats:
        assert set(stats.undecrypted) == {"unsupported_suite"} and stats.tls_overhead > 0


def test_garbage_is_a_bad_record() -> None:
    session = TlsSession(KeyLog())
    assert session.feed(0, b"GET / HTTP/1.1\r\nHost: kafka\r\n\r\n") == []
    assert session.feed(0, b"more") == []
    stats = session.stats[0]
    assert stats.undecrypted == {"bad_record": stats.seen} and stats.balanced
    assert "content type 71" in stats.stopped


def test_a_damaged_record_costs_only_itself() -> None:
    for name in ("tls13-aes256-rsa", "tls12-ecdhe-rsa-chacha20"):
        conv = conversation(name)
        wire = bytearray(conv.wire[1])
        start = _record_starts(wire)[-10]  # a small application record near the end
        size = HEADER_LENGTH + int.from_bytes(wire[start + 3:start + 5], "big")
        wire[start + size - 1] ^= 0xFF  # its tag
        session = TlsSession(keylog_of(conv))
        plaintext = replay(session, (conv.wire[0], bytes(wire)), seed=6)[1]
        assert session.stats[1].undecrypted == {"bad_record": size}
        assert len(plaintext) < len(conv.sent[1]) and conv.sent[1].startswith(plaintext[:1000])
        assert balanced(session)
        session = TlsSession(keylog_of(conv))  # the plaintext says where the record was missed
        output = session.feed(0, conv.wire[0]) + session.feed(1, bytes(wire))
        assert [item for item in output if isinstance(item[1], int)] == [(1, size)]
        before = b"".join(p for d, p in output[:output.index((1, size))] if d == 1)
        after = b"".join(p for d, p in output[output.index((1, size)) + 1:] if d == 1)
        assert conv.sent[1].startswith(before) and conv.sent[1].endswith(after) and before and after


def test_no_secret_reaches_a_repr_or_a_counter() -> None:
    conv = conversation("tls12-ecdhe-rsa-aes128")
    conv13 = conversation("tls13-aes256-rsa")
    keylog = keylog_of(conv)
    keylog.add_lines(conv13.keylog.splitlines())
    keylog.add_lines(["garbage line", "CLIENT_RANDOM zz 00"])
    sessions = [TlsSession(keylog) for _ in range(2)]
    replay(sessions[0], conv.wire)
    replay(sessions[1], conv13.wire)
    objects: list[object] = [keylog, *sessions]
    for session in sessions:
        objects += [session.stats, *session.stats, session.alerts, session.client_hello, session.server_hello,
                    *session._sides, *(side.decrypter for side in session._sides)]
        objects += [keylog.get(session.client_hello.random)]
    text = " ".join(repr(o) + str(o) for o in objects) + repr(vars(sessions[0].stats[0]))
    secrets = secrets_of(conv) + secrets_of(conv13)
    assert len(secrets) == 6
    for secret in secrets:
        assert secret.hex() not in text.lower() and repr(secret) not in text
        assert secret.hex()[:16] not in text.lower()


def _record_starts(wire: bytes | bytearray) -> list[int]:
    starts, pos = [], 0
    while pos + HEADER_LENGTH <= len(wire):
        starts.append(pos)
        pos += HEADER_LENGTH + int.from_bytes(wire[pos + 3:pos + 5], "big")
    return starts
