"""TLS alerts (RFC 8446 §6, RFC 5246 §7.2): what each side said when it closed or gave up, by RFC name."""

from __future__ import annotations

from typing import NamedTuple

MAX_PER_RECORD = 4  # RFC 8446 forbids coalescing alerts; a record of thousands is not a list of alerts
DESCRIPTIONS = {
    0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 21: "decryption_failed",
    22: "record_overflow", 30: "decompression_failure", 40: "handshake_failure", 41: "no_certificate",
    42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked", 45: "certificate_expired",
    46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied", 50: "decode_error",
    51: "decrypt_error", 60: "export_restriction", 70: "protocol_version", 71: "insufficient_security",
    80: "internal_error", 86: "inappropriate_fallback", 90: "user_canceled", 100: "no_renegotiation",
    109: "missing_extension", 110: "unsupported_extension", 111: "certificate_unobtainable",
    112: "unrecognized_name", 113: "bad_certificate_status_response", 114: "bad_certificate_hash_value",
    115: "unknown_psk_identity", 116: "certificate_required", 120: "no_application_protocol",
}


class Alert(NamedTuple):
    direction: int  # 0: sent by the client, 1: by the server
    level: int  # 1 warning, 2 fatal
    description: int
    encrypted: bool  # read from a decrypted record (False: sent in the clear, before or instead of encryption)

    @property
    def name(self) -> str:
        return DESCRIPTIONS.get(self.description, f"alert_{self.description}")


def parse_alerts(direction: int, content: bytes, encrypted: bool) -> list[Alert]:
    """The alerts of one record's content (two bytes each; a stray odd byte is not an alert)."""
    end = min(len(content) - 1, 2 * MAX_PER_RECORD)
    return [Alert(direction, content[i], content[i + 1], encrypted) for i in range(0, end, 2)]
