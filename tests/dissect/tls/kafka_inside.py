"""Kafka conversations inside real TLS (OpenSSL through Python's ssl, conversations.py), as capture files: the same
Kafka messages once encrypted and once in the clear, so a test can hold the decrypted output to the plaintext one."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from tests.dissect.tls.conversations import Conversation, converse
from tests.support.kafka_messages import (
    batch, fetch_request, fetch_response, metadata_request, metadata_response, request, response,
)
from tests.support.pcap import TcpFlow, pcap_bytes, timed

PORT = 9093
PASSWORD = b"kafka-in-tls-pa55word"
TLS12 = ssl.TLSVersion.TLSv1_2


def script() -> list[tuple[int, bytes]]:
    """(direction, Kafka frame): metadata naming a topic id, a fetch of record batches by id, a produce with its
    offsets, and a SASL/PLAIN login carrying PASSWORD."""
    produce = {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 1, "records": batch(0, 4)}]}]}
    produced = {"throttle_time_ms": 0, "responses": [{"name": "orders", "partition_responses": [
        {"index": 1, "error_code": 0, "base_offset": 40, "log_append_time_ms": -1, "log_start_offset": 0,
         "record_errors": [], "error_message": None}]}]}
    return [
        (0, request(17, 1, 1, {"mechanism": "PLAIN"})),
        (1, response(17, 1, 1, {"error_code": 0, "mechanisms": ["PLAIN"]})),
        (0, request(36, 2, 2, {"auth_bytes": b"\0alice\0" + PASSWORD})),
        (1, response(36, 2, 2, {"error_code": 0, "error_message": None, "auth_bytes": b"",
                                "session_lifetime_ms": 0})),
        (0, metadata_request(3)), (1, metadata_response(3)),
        (0, fetch_request(4)), (1, fetch_response(4)),
        (0, request(0, 9, 5, produce)), (1, response(0, 9, 5, produced)),
    ]


@dataclass
class Captured:
    conversation: Conversation
    packets: list[bytes]  # Ethernet frames of one TCP connection, SYN to FIN
    flow: TcpFlow

    def write(self, folder: Path, name: str, packets: list[bytes] | None = None) -> tuple[Path, Path]:
        """The capture (these packets, else all) and the client's key log, as files."""
        capture, keylog = folder / f"{name}.pcap", folder / f"{name}.keys"
        capture.write_bytes(pcap_bytes(timed(self.packets if packets is None else packets)))
        keylog.write_bytes(self.conversation.keylog)
        return capture, keylog

    def secrets(self) -> list[bytes]:
        return [bytes.fromhex(line.split()[2]) for line in self.conversation.keylog.decode().splitlines()
                if line.strip() and not line.startswith("#")]


def encrypted(client_port: int, messages: list[tuple[int, bytes]] | None = None,
              maximum_version: ssl.TLSVersion | None = None) -> Captured:
    """The messages over TLS on one connection to PORT, each TLS flight in the packets in the order it was sent."""
    conversation = converse(messages=script() if messages is None else messages, maximum_version=maximum_version)
    flow = TcpFlow(client=("127.0.0.1", client_port), server=("127.0.0.1", PORT))
    packets = flow.handshake()
    for direction, data in conversation.flights:
        packets += flow.send(direction, data)
    return Captured(conversation, packets + flow.fin(0) + flow.fin(1), flow)


def in_the_clear(client_port: int, messages: list[tuple[int, bytes]] | None = None) -> list[bytes]:
    """The same messages without TLS."""
    flow = TcpFlow(client=("127.0.0.1", client_port), server=("127.0.0.1", PORT))
    packets = flow.handshake()
    for direction, data in script() if messages is None else messages:
        packets += flow.send(direction, data)
    return packets + flow.fin(0) + flow.fin(1)
