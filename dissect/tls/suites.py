"""The protocol versions and AEAD cipher suites this package decrypts (RFC 8446 §B.4, RFC 5288, RFC 5289, RFC 7905).

Only the record protection matters here: TLS 1.2 suites differ by key exchange (ECDHE_RSA, ECDHE_ECDSA) but the key
log hands over the master secret, so the six suites below are three ciphers. Every other suite (CBC, RC4, CCM, ...)
is `unsupported_suite`.
"""

from __future__ import annotations

from typing import NamedTuple

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

TLS12 = 0x0303
TLS13 = 0x0304
VERSION_NAMES = {0x0300: "SSL 3.0", 0x0301: "TLS 1.0", 0x0302: "TLS 1.1", TLS12: "TLS 1.2", TLS13: "TLS 1.3"}
TAG_LENGTH = 16  # both AEADs


class CipherSuite(NamedTuple):
    code: int
    name: str
    version: int  # the protocol version the suite belongs to
    aead: type[AESGCM] | type[ChaCha20Poly1305]
    key_length: int
    iv_length: int  # TLS 1.3 and ChaCha20: the whole 12-byte nonce mask; TLS 1.2 GCM: the implicit 4-byte salt
    record_iv_length: int  # the explicit nonce each record carries (TLS 1.2 GCM: 8, otherwise 0)
    hash: type[hashes.SHA256] | type[hashes.SHA384]


SUITES = {suite.code: suite for suite in (
    CipherSuite(0x1301, "TLS_AES_128_GCM_SHA256", TLS13, AESGCM, 16, 12, 0, hashes.SHA256),
    CipherSuite(0x1302, "TLS_AES_256_GCM_SHA384", TLS13, AESGCM, 32, 12, 0, hashes.SHA384),
    CipherSuite(0x1303, "TLS_CHACHA20_POLY1305_SHA256", TLS13, ChaCha20Poly1305, 32, 12, 0, hashes.SHA256),
    CipherSuite(0xC02F, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", TLS12, AESGCM, 16, 4, 8, hashes.SHA256),
    CipherSuite(0xC030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", TLS12, AESGCM, 32, 4, 8, hashes.SHA384),
    CipherSuite(0xC02B, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", TLS12, AESGCM, 16, 4, 8, hashes.SHA256),
    CipherSuite(0xC02C, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", TLS12, AESGCM, 32, 4, 8, hashes.SHA384),
    CipherSuite(0xCCA8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", TLS12, ChaCha20Poly1305, 32, 12, 0,
                hashes.SHA256),
    CipherSuite(0xCCA9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", TLS12, ChaCha20Poly1305, 32, 12, 0,
                hashes.SHA256),
)}


def suite_name(code: int) -> str:
    """The RFC name of a suite decrypted here, else its code point (0xC027): the name says it is supported."""
    suite = SUITES.get(code)
    return suite.name if suite else f"0x{code:04X}"


def version_name(version: int) -> str:
    return VERSION_NAMES.get(version, f"0x{version:04X}")
