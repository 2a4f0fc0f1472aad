"""Whatever bytes come in, the session never raises and every byte fed is booked: random bytes, and real
conversations damaged at random (bytes changed, inserted, removed, cut, segments lost)."""

from __future__ import annotations

import random
import ssl

from hypothesis import HealthCheck, given, settings, strategies as st

from kafkatap.dissect.tls import KeyLog, TlsSession
from tests.dissect.tls.conversations import Conversation, converse
from tests.dissect.tls.forge import Tls13Forge
from tests.dissect.tls.replay import balanced

_made: list[tuple[tuple[bytes, bytes], KeyLog]] = []


def streams() -> list[tuple[tuple[bytes, bytes], KeyLog]]:
    """Short real conversations (TLS 1.3 and 1.2) and a forged one with 0-RTT, a retry and KeyUpdates."""
    if not _made:
        messages = [(0, b"q" * 20_000), (1, b"r" * 300), (0, b"s" * 50), (1, b"t" * 5)]
        for conv in (converse(messages=messages),
                     converse(messages=messages, maximum_version=ssl.TLSVersion.TLSv1_2,
                              ciphers="ECDHE-RSA-AES128-GCM-SHA256")):
            _made.append(_with_keylog(conv))
        forge = Tls13Forge(0x1303, early_data=True, retry=True)
        forge.send(0, b"x" * 20_000)
        forge.key_update(1, requested=True)
        forge.key_update(0)
        forge.send(1, b"y" * 100)
        _made.append(((bytes(forge.wire[0]), bytes(forge.wire[1])), forge.keylog()))
    return _made


def _with_keylog(conv: Conversation) -> tuple[tuple[bytes, bytes], KeyLog]:
    keylog = KeyLog()
    keylog.add_lines(conv.keylog.splitlines())
    return conv.wire, keylog


def _feed(session: TlsSession, seed: int, wire: list[bytes], gaps: bool) -> list[int]:
    """Both directions in random chunks, interleaved, sometimes a gap instead of a chunk; return the bytes fed."""
    rng = random.Random(seed)
    pos, fed = [0, 0], [0, 0]
    while pos[0] < len(wire[0]) or pos[1] < len(wire[1]):
        direction = rng.choice([d for d in (0, 1) if pos[d] < len(wire[d])])
        size = rng.choice((1, 5, rng.randrange(1, 6000)))
        if gaps and rng.randrange(30) == 0:
            session.gap(direction, size)
        else:
            chunk = wire[direction][pos[direction]:pos[direction] + size]
            fed[direction] += len(chunk)
            for which, plaintext in session.feed(direction, chunk):
                assert which in (0, 1) and plaintext
        pos[direction] += size
    session.close()
    return fed


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=3000), st.binary(max_size=3000), st.integers(0, 2**32))
def test_random_bytes(client: bytes, server: bytes, seed: int) -> None:
    session = TlsSession(KeyLog())
    assert _feed(session, seed, [client, server], gaps=False) == [len(client), len(server)]
    assert balanced(session, (len(client), len(server)))
    assert all(stats.pending == 0 for stats in session.stats)


@st.composite
def mutations(draw: st.DrawFn, stream: bytes) -> bytes:
    damaged = bytearray(stream)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, max(len(damaged) - 1, 0)))
        how = draw(st.sampled_from(["flip", "insert", "delete", "cut", "header"]))
        if how == "flip" and damaged:
            damaged[at] ^= draw(st.integers(1, 255))
        elif how == "insert":
            damaged[at:at] = draw(st.binary(min_size=1, max_size=20))
        elif how == "delete":
            del damaged[at:at + draw(st.integers(1, 20))]
        elif how == "cut":
            del damaged[at:]
        elif how == "header" and len(damaged) > at + 5:  # a record length or type the stream does not keep
            damaged[at + draw(st.integers(0, 4))] = draw(st.integers(0, 255))
    return bytes(damaged)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_real_streams(data: st.DataObject) -> None:
    wire, keylog = data.draw(st.sampled_from(streams()))
    damaged = [data.draw(mutations(wire[0])), data.draw(mutations(wire[1]))]
    session = TlsSession(keylog, max_held=data.draw(st.sampled_from([64 << 20, 1000])))
    fed = _feed(session, data.draw(st.integers(0, 2**32)), damaged, gaps=data.draw(st.booleans()))
    assert balanced(session, (fed[0], fed[1]))
    assert all(stats.pending == 0 for stats in session.stats)
    assert repr(session)
