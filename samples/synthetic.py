"""Protocol-faithful synthetic captures, for flows no local broker can produce (e.g. Apache Kafka's aborted
transaction index in Fetch responses, which Tansu leaves empty).

Messages are encoded by the project's own codec (dissect.protocol encode_*), record batches by kafka-python's
batch builder (so the CRC and varints are a real client's), and packets by scapy; the result is an Ethernet-framed
loopback pcapng like a `dumpcap -i lo` capture: handshakes, data segments split at a 1448-byte MSS, pure ACKs, FINs.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import PcapNgWriter

from kafkatap.dissect.protocol import (decode_request, decode_response, encode_request, encode_request_header,
                                       encode_response, encode_response_header, error_name)
from kafkatap.samples.truth import api_name

MSS = 1448
CONTROL_ABORT, CONTROL_COMMIT = 0, 1


class _ControlBatchBuilder(DefaultRecordBatchBuilder):
    """kafka-python writes only client batches; the control bit (0x20) is the one thing a broker adds."""

    def _get_attributes(self, include_compression_type: bool = True) -> int:
        return super()._get_attributes(include_compression_type) | 0x20


def record_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], timestamp_ms: int, *,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 transactional: bool = False) -> bytes:
    """A magic-2 record batch as a client would send it, with the broker-assigned base offset filled in."""
    builder = DefaultRecordBatchBuilder(2, 0, transactional, producer_id, producer_epoch, base_sequence, 1 << 20)
    for delta, (key, value) in enumerate(records):
        builder.append(delta, timestamp_ms + delta, key, value, [])
    return _with_base_offset(builder.build(), base_offset)


def control_batch(offset: int, control_type: int, timestamp_ms: int, producer_id: int, producer_epoch: int,
                  coordinator_epoch: int = 0) -> bytes:
    """A transaction marker (COMMIT or ABORT) as the broker writes it after EndTxn."""
    builder = _ControlBatchBuilder(2, 0, True, producer_id, producer_epoch, -1, 1 << 10)
    builder.append(0, timestamp_ms, struct.pack(">hh", 0, control_type), struct.pack(">hi", 0, coordinator_epoch), [])
    return _with_base_offset(builder.build(), offset)


def _with_base_offset(batch: bytearray, base_offset: int) -> bytes:
    struct.pack_into(">q", batch, 0, base_offset)  # the base offset is outside the CRC's span
    return bytes(batch)


class Connection:
    """One client connection: every message becomes TCP segments with consistent sequence numbers."""

    def __init__(self, wire: "Wire", client_port: int, broker_port: int, client_id: str) -> None:
        self.wire, self.client_id = wire, client_id
        self.ports = (client_port, broker_port)
        self.seq = [1_000_000 + client_port * 7, 2_000_000 + broker_port * 13]  # next byte to send, per side
        self.correlation_id = 0
        self._segment(0, "S", b"", seq_delta=1)
        self._segment(1, "SA", b"", seq_delta=1)
        self._segment(0, "A", b"")

    def _segment(self, side: int, flags: str, payload: bytes, seq_delta: int = 0) -> None:
        src, dst = (self.ports[0], self.ports[1]) if side == 0 else (self.ports[1], self.ports[0])
        ack = self.seq[1 - side] if "A" in flags else 0
        pkt = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IP(src="127.0.0.1", dst="127.0.0.1") / TCP(
            sport=src, dport=dst, flags=flags, seq=self.seq[side], ack=ack, window=65535)
        if payload:
            pkt = pkt / Raw(payload)
        self.wire.add(pkt)
        self.seq[side] = (self.seq[side] + len(payload) + seq_delta) & 0xFFFFFFFF

    def _send(self, side: int, message: bytes) -> None:
        framed = struct.pack(">i", len(message)) + message
        for start in range(0, len(framed), MSS):
            self._segment(side, "PA", framed[start:start + MSS])
        self._segment(1 - side, "A", b"")

    def call(self, api_key: int, api_version: int, request: dict, response: dict, *, rtt_us: int = 400) -> int:
        """Send one request and its response; returns the correlation id used."""
        self.correlation_id += 1
        self.wire.requests[(self.client_id, api_key)] += 1
        header = {"api_key": api_key, "api_version": api_version, "correlation_id": self.correlation_id,
                  "client_id": self.client_id}
        body = encode_request(api_key, api_version, request)
        _check_fields(request, decode_request(api_key, api_version, body)[0], f"{api_name(api_key)} v{api_version}")
        self._send(0, encode_request_header(header) + body)
        self.wire.advance(rtt_us)
        body = encode_response(api_key, api_version, response)
        _check_fields(response, decode_response(api_key, api_version, body)[0],
                      f"{api_name(api_key)} v{api_version} response")
        self._send(1, encode_response_header(api_key, api_version, {"correlation_id": self.correlation_id}) + body)
        code = _first_error_code(response)
        if code:
            self.wire.error_events.append((self.client_id, api_name(api_key), error_name(code)))
        self.wire.advance(200)
        return self.correlation_id

    def close(self) -> None:
        self._segment(0, "FA", b"", seq_delta=1)
        self._segment(1, "FA", b"", seq_delta=1)
        self._segment(0, "A", b"")


def _first_error_code(obj: object) -> int:
    """Top-level error code of a response, else the first non-zero nested one (the dissector's documented rule)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key.endswith("error_code") and isinstance(value, int) and value:
                return value
        children = obj.values()
    elif isinstance(obj, list):
        children = obj
    else:
        return 0
    for child in children:
        code = _first_error_code(child)
        if code:
            return code
    return 0


def _check_fields(sent: dict, decoded: dict, where: str) -> None:
    """The encoder fills absent fields with defaults, so a misspelt field name would vanish silently: every field a
    flow sets must come back from the decoder with its value."""
    for key, value in sent.items():
        if key not in decoded:
            raise KeyError(f"{where}: no field {key!r} in this version")
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for a, b in zip(value, decoded[key]):
                _check_fields(a, b, f"{where}.{key}")
        elif isinstance(value, dict):
            _check_fields(value, decoded[key], f"{where}.{key}")


class Wire:
    """The packets of a synthetic capture on a simulated clock (microseconds)."""

    def __init__(self, start_us: int) -> None:
        self.now_us = start_us
        self.packets: list = []
        self.requests: Counter = Counter()  # (client_id, api_key) -> requests written
        self.error_events: list[tuple[str, str, str]] = []  # (client_id, api_name, error_name) of error responses

    def advance(self, us: int) -> None:
        self.now_us += us

    def add(self, pkt) -> None:
        pkt.time = self.now_us / 1e6
        self.packets.append(pkt)
        self.now_us += 15

    def connect(self, client_port: int, broker_port: int, client_id: str) -> Connection:
        return Connection(self, client_port, broker_port, client_id)

    def requests_by_client(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (client, key), n in sorted(self.requests.items()):
            out.setdefault(client, {})[api_name(key)] = n
        return out

    def write(self, path: str | Path) -> None:
        writer = PcapNgWriter(str(path))
        for pkt in self.packets:
            writer.write(pkt)
        writer.close()
