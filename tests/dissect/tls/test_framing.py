"""The pieces under the session: record framing, handshake messages from hostile bytes, and the key schedules
against published vectors (RFC 8448 for TLS 1.3, the TLS working group's PRF vectors for TLS 1.2)."""

from __future__ import annotations

import struct

import pytest
from cryptography.hazmat.primitives import hashes
from hypothesis import given, settings, strategies as st

from kafkatap.dissect.tls.handshake import (
    HELLO_RETRY_REQUEST_RANDOM, HandshakeReader, Malformed, parse_client_hello, parse_server_hello,
)
from kafkatap.dissect.tls.keyschedule import hkdf_expand_label, next_traffic_secret, prf, traffic_keys
from kafkatap.dissect.tls.records import MAX_LENGTH, RecordBuffer, header_problem
from kafkatap.dissect.tls.suites import SUITES, CipherSuite
from tests.dissect.tls.forge import client_hello, expand_label, message, server_hello

AES128, AES256, CHACHA = SUITES[0x1301], SUITES[0x1302], SUITES[0x1303]


# -- records

def test_records_come_out_whole_whatever_the_chunks() -> None:
    stream = b"".join(struct.pack(">BHH", 23, 0x0303, n) + bytes([n % 256]) * n for n in (0, 1, 300, 2**14))
    buffer = RecordBuffer()
    lengths = []
    for i in range(0, len(stream), 7):
        buffer.extend(stream[i:i + 7])
        while (record := buffer.peek()) is not None:
            lengths.append(len(record.fragment))
            assert record.header == struct.pack(">BHH", 23, 0x0303, len(record.fragment))
            buffer.pop(record)
    assert lengths == [0, 1, 300, 2**14] and buffer.pending == 0 and buffer.error is None


@pytest.mark.parametrize("header, problem", [
    ((25, 0x0303, 10), "content type 25"),
    ((23, 0x0200, 10), "version 0x0200"),
    ((23, 0x0305, 10), "version 0x0305"),
    ((23, 0x0303, MAX_LENGTH + 1), "exceeds"),
    ((22, 0x0301, 0), "empty record"),
])
def test_headers_no_peer_sends(header: tuple[int, int, int], problem: str) -> None:
    assert problem in (header_problem(*header) or "")
    buffer = RecordBuffer()
    buffer.extend(struct.pack(">BHH", *header) + b"rest")
    assert buffer.peek() is None and problem in (buffer.error or "")
    assert buffer.drain() == 9 and buffer.pending == 0


def test_largest_record_is_accepted() -> None:
    assert header_problem(23, 0x0303, MAX_LENGTH) is None and header_problem(23, 0x0300, 0) is None


# -- handshake messages

def test_hellos() -> None:
    random = bytes(range(32))
    hello = parse_client_hello(client_hello(random, early_data=True)[4:])
    assert hello.random == random and hello.versions == (0x0304,) and hello.early_data
    server = parse_server_hello(server_hello(random, 0x1302)[4:])
    assert (server.random, server.cipher_suite, server.version, server.retry) == (random, 0x1302, 0x0304, False)
    assert parse_server_hello(server_hello(HELLO_RETRY_REQUEST_RANDOM, 0x1301)[4:]).retry


def test_old_style_hellos_without_extensions() -> None:
    body = b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\xc0\x2f" + b"\x01\x00"
    assert parse_client_hello(body).versions == (0x0303,)
    server = parse_server_hello(b"\x03\x01" + bytes(32) + b"\x00" + b"\xc0\x14" + b"\x00")
    assert (server.version, server.cipher_suite) == (0x0301, 0xC014)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_hostile_hellos_raise_only_malformed(data: st.DataObject) -> None:
    genuine = client_hello(bytes(32), early_data=True)[4:] if data.draw(st.booleans()) else \
        server_hello(bytes(32), 0x1301)[4:]
    body = bytearray(genuine[:data.draw(st.integers(0, len(genuine)))])
    for _ in range(data.draw(st.integers(0, 4))):
        if body:
            body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    body += data.draw(st.binary(max_size=8))
    for parse in (parse_client_hello, parse_server_hello):
        try:
            parse(bytes(body))
        except Malformed:
            pass


@given(st.lists(st.integers(1, 50), min_size=1, max_size=40))
def test_handshake_reader_is_chunk_independent(cuts: list[int]) -> None:
    stream = (message(1, b"a" * 70) + message(11, b"c" * 3000) + message(14, b"") + message(24, b"\x01")
              + message(20, b"f" * 32))
    reader, messages, pos = HandshakeReader(), [], 0
    for cut in cuts + [len(stream)]:
        messages += reader.feed(stream[pos:pos + cut])
        pos += cut
    assert messages == [(1, b"a" * 70), (11, None), (14, None), (24, b"\x01"), (20, None)]


def test_handshake_reader_refuses_a_huge_kept_message() -> None:
    with pytest.raises(Malformed):
        HandshakeReader().feed(b"\x01\xff\xff\xff")
    assert HandshakeReader().feed(b"\x0b\xff\xff\xff" + b"x" * 100) == []  # skipped, not buffered


# -- key schedules

def test_tls13_traffic_keys_rfc8448() -> None:
    """RFC 8448 §3 (Simple 1-RTT Handshake, TLS_AES_128_GCM_SHA256)."""
    server_hs = bytes.fromhex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
    client_hs = bytes.fromhex("b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21")
    server_ap = bytes.fromhex("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643")
    assert traffic_keys(AES128, server_hs) == (bytes.fromhex("3fce516009c21727d0f2e4e86ee403bc"),
                                               bytes.fromhex("5d313eb2671276ee13000b30"))
    assert traffic_keys(AES128, client_hs) == (bytes.fromhex("dbfaa693d1762c5b666af5d950258d01"),
                                               bytes.fromhex("5bd3c71b836e0b76bb73265f"))
    assert traffic_keys(AES128, server_ap) == (bytes.fromhex("9f02283b6c9c07efc26bb9f2ac92e356"),
                                               bytes.fromhex("cf782b88dd83549aadf1e984"))


@pytest.mark.parametrize("suite", [AES128, AES256, CHACHA])
def test_tls13_schedule_matches_an_independent_hkdf(suite: CipherSuite) -> None:
    secret = bytes(range(suite.hash.digest_size))
    name = suite.hash.name
    assert traffic_keys(suite, secret) == (expand_label(name, secret, b"key", suite.key_length),
                                           expand_label(name, secret, b"iv", 12))
    assert next_traffic_secret(suite, secret) == expand_label(name, secret, b"traffic upd", len(secret))
    assert hkdf_expand_label(suite.hash, secret, b"iv", b"", 12) == expand_label(name, secret, b"iv", 12)


def test_tls12_prf_vectors() -> None:
    """P_SHA256 and P_SHA384 vectors circulated on the TLS WG list (ietf.org/mail-archive/web/tls/current/msg03416)."""
    sha256 = prf(hashes.SHA256, bytes.fromhex("9bbe436ba940f017b17652849a71db35"), b"test label",
                 bytes.fromhex("a0ba9f936cda311827a6f796ffd5198c"), 100)
    assert sha256.hex() == ("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a"
                            "6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab"
                            "4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701"
                            "87347b66")
    sha384 = prf(hashes.SHA384, bytes.fromhex("b80b733d6ceefcdc71566ea48e5567df"), b"test label",
                 bytes.fromhex("cd665cf6a8447dd6ff8b27555edb7465"), 148)
    assert sha384.hex().startswith("7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cd"
                                   "e9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd"
                                   "8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d918425"
                                   "9b5bf8c")
    assert len(sha384) == 148
