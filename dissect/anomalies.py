"""The closed list of anomaly kinds: every row of anomalies/ names one of these.

Like `errors.REASONS` for decode errors, a kind is declared once with the stage that finds it and what it means, so
a user can look up any `kind` they meet, docs/schemas.md's list is rendered from here
(`python -m kafkatap.dissect.anomalies --markdown`), and writing a row with an undeclared kind fails at once instead
of adding an undocumented word to the output.
"""

from __future__ import annotations

import sys
from typing import NamedTuple


class Kind(NamedTuple):
    stage: str
    meaning: str


KINDS: dict[str, Kind] = {
    "bad_capture_file": Kind("capture file", "The input is not a pcap or pcapng capture, or cannot be read."),
    "truncated_file": Kind("capture file", "The file ends inside a packet record or block (a capture cut short)."),
    "corrupt_record": Kind("capture file", "A pcap record header claims an impossible length: the rest of the file "
                                           "is skipped."),
    "corrupt_block": Kind("capture file", "A pcapng block that cannot be read (bad length or trailer) is skipped."),
    "unknown_link_type": Kind("capture file", "An interface whose link type is not supported: its packets are "
                                              "skipped."),
    "snapped_packet": Kind("packets", "The snaplen cut the packet short: the bytes not captured become a gap."),
    "bad_link_header": Kind("packets", "A frame too short for its link-layer header."),
    "bad_ip_header": Kind("packets", "An IPv4 or IPv6 header (or IPv6 extension header) that cannot be used."),
    "bad_tcp_header": Kind("packets", "A TCP header that cannot be used."),
    "fragment_timeout": Kind("packets", "An IP datagram whose fragments never all arrived."),
    "fragments_evicted": Kind("packets", "Fragments dropped because too many datagrams were being reassembled."),
    "gap": Kind("TCP", "Bytes of a stream the capture does not have (lost, or never captured)."),
    "overlap_mismatch": Kind("TCP", "Retransmitted bytes that differ from the first copy (the first copy is kept)."),
    "out_of_window": Kind("TCP", "A segment too far from the expected sequence number to belong to the stream."),
    "sequence_jump": Kind("TCP", "The stream goes on at another sequence number: the bytes in between are a gap."),
    "resync": Kind("framing", "Bytes skipped while searching for the next plausible frame (after a gap, a bad size "
                              "or mid-stream)."),
    "bad_length": Kind("framing", "An impossible frame size prefix: the framer resynchronises."),
    "frame_lost_in_gap": Kind("framing", "Part of a frame that a capture gap (or a TLS record not decrypted) cut: the "
                                         "frame cannot be decoded."),
    "oversize_frame": Kind("framing", "A frame larger than the 100 MiB buffering cap, skipped by count."),
    "truncated_frame": Kind("framing", "A frame cut short by the end of the connection or capture."),
    "decode_error": Kind("messages", "A request or response body the codec cannot decode; the detail gives the "
                                     "reason and offset."),
    "unknown_api": Kind("messages", "A request whose api key or version the schemas do not define."),
    "trailing_bytes": Kind("messages", "Bytes left after the end of a decoded body."),
    "malformed_header": Kind("messages", "A frame too short for a request header."),
    "malformed_consumer_protocol": Kind("messages", "JoinGroup or SyncGroup bytes of a classic `consumer` group "
                                                    "that should hold the consumer protocol but do not decode."),
    "malformed_batch": Kind("record data", "Record data that cannot be split into batches or records: the batches "
                                           "before it are kept."),
    "crc_mismatch": Kind("record data", "A record batch whose CRC does not match its bytes."),
    "tls": Kind("connection", "TLS on a Kafka port and no key log: the connection's bytes are counted, not "
                              "decoded (give `--tls-keylog` to decrypt)."),
    "tls_no_key": Kind("TLS", "The key log has no secret for this connection (another client's or broker's key log, "
                              "or one written after the connection): its encrypted records are not decrypted."),
    "tls_no_handshake": Kind("TLS", "The TLS hellos are not in the capture (it began mid-connection, or holds one "
                                    "direction only): the connection's secrets cannot be found."),
    "tls_unsupported_suite": Kind("TLS", "A TLS version or cipher suite not decrypted here (only AEAD suites of TLS "
                                         "1.2 and 1.3 are: CBC, RC4, CCM and TLS 1.0/1.1 are not)."),
    "tls_early_data": Kind("TLS", "TLS 1.3 0-RTT records, sent before the handshake ends: not decrypted."),
    "tls_lost_segment": Kind("TLS", "Bytes after a capture gap: TLS records are numbered and chained, so that "
                                    "direction is not decrypted after it."),
    "tls_bad_record": Kind("TLS", "A record that fails authentication (damaged, or a wrong key), or bytes that are "
                                  "not a TLS record (then the rest of that direction)."),
    "tls_truncated": Kind("TLS", "A TLS record cut short by the end of the connection or capture."),
    "tls_renegotiation": Kind("TLS", "TLS 1.2 after a renegotiation: its new keys are not followed, so the rest "
                                     "of that direction is not decrypted."),
}


def document() -> str:
    """docs/schemas.md's list of anomaly kinds."""
    lines = ["| kind | stage | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind.stage} | {kind.meaning} |" for name, kind in KINDS.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print(document())
