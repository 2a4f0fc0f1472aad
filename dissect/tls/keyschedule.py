"""Traffic keys from the key log's secrets: TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1, §7.2, §7.3) and TLS 1.2's
PRF key block (RFC 5246 §5, §6.3). The key log already holds the traffic or master secrets, so no handshake secret
is ever recomputed here."""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from kafkatap.dissect.tls.suites import CipherSuite


def hkdf_expand_label(hash_type: type[hashes.HashAlgorithm], secret: bytes, label: bytes, context: bytes,
                      length: int) -> bytes:
    """HKDF-Expand(secret, HkdfLabel, length), HkdfLabel = length || "tls13 " + label || context (RFC 8446 §7.1)."""
    full_label = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(full_label)]) + full_label + bytes([len(context)]) + context
    return HKDFExpand(hash_type(), length, info).derive(secret)


def traffic_keys(suite: CipherSuite, secret: bytes) -> tuple[bytes, bytes]:
    """(write_key, write_iv) of a TLS 1.3 traffic secret (RFC 8446 §7.3)."""
    return (hkdf_expand_label(suite.hash, secret, b"key", b"", suite.key_length),
            hkdf_expand_label(suite.hash, secret, b"iv", b"", suite.iv_length))


def next_traffic_secret(suite: CipherSuite, secret: bytes) -> bytes:
    """application_traffic_secret_N+1, after a KeyUpdate (RFC 8446 §7.2)."""
    return hkdf_expand_label(suite.hash, secret, b"traffic upd", b"", suite.hash.digest_size)


def prf(hash_type: type[hashes.HashAlgorithm], secret: bytes, label: bytes, seed: bytes, length: int) -> bytes:
    """TLS 1.2's PRF: P_hash(secret, label + seed) cut to length (RFC 5246 §5)."""
    seed = label + seed
    keyed = hmac.HMAC(secret, hash_type())
    out = bytearray()
    a = seed  # A(0)
    while len(out) < length:
        step = keyed.copy()
        step.update(a)
        a = step.finalize()  # A(i) = HMAC(secret, A(i-1))
        block = keyed.copy()
        block.update(a + seed)
        out += block.finalize()
    return bytes(out[:length])


def key_block(suite: CipherSuite, master_secret: bytes, client_random: bytes, server_random: bytes
              ) -> tuple[tuple[bytes, bytes], tuple[bytes, bytes]]:
    """((client_write_key, client_write_IV), (server_write_key, server_write_IV)) of a TLS 1.2 AEAD suite
    (RFC 5246 §6.3: the AEAD suites have no MAC keys)."""
    k, i = suite.key_length, suite.iv_length
    block = prf(suite.hash, master_secret, b"key expansion", server_random + client_random, 2 * (k + i))
    return (block[:k], block[2 * k:2 * k + i]), (block[k:2 * k], block[2 * k + i:])
