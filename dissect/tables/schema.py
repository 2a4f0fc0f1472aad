"""The Parquet schemas of the dissector's output: the contract every later stage reads.

Each column is declared once here with its documentation; docs/schemas.md's tables are rendered from this module
(`python -m kafkatap.dissect.tables.schema --markdown`) and a test keeps the two in step.
"""

from __future__ import annotations

import sys

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")


def column(name: str, type_: pa.DataType, doc: str) -> pa.Field:
    """A nullable column with its documentation, which docs/schemas.md's tables are rendered from."""
    return pa.field(name, type_, nullable=True, metadata={"doc": doc})


def table(doc: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(list(fields), metadata={"doc": doc})


_CONN = [
    column("conn_id", pa.string(), "Connection id, unique across captures: `client_addr>broker_addr@first_seen_us`."),
    column("client_addr", pa.string(), "Client endpoint `ip:port` (IPv6 as `[ip]:port`)."),
    column("broker_addr", pa.string(), "Broker endpoint `ip:port`."),
]

FRAMES = table(
    "One row per request/response pair, or per unpaired half.",
    *_CONN,
    column("ts_request", TS, "Time of the packet carrying the request's first byte (UTC, microseconds)."),
    column("ts_response", TS, "Time of the packet carrying the response's first byte."),
    column("latency_us", pa.int64(), "`ts_response - ts_request` in microseconds; null when unpaired."),
    column("api_key", pa.int16(), "Kafka api key."),
    column("api_name", pa.string(), "Kafka api name (`Produce`, `Fetch`, ...), `unknown` for an unknown key."),
    column("api_version", pa.int16(), "Api version from the request header."),
    column("correlation_id", pa.int32(), "Correlation id shared by the request and its response."),
    column("client_id", pa.string(), "Client id from the request header."),
    column("request_bytes", pa.int64(), "Request size on the wire, including the 4-byte length prefix."),
    column("response_bytes", pa.int64(), "Response size on the wire, including the 4-byte length prefix."),
    column("error_code", pa.int16(), "Top-level error code of the response, else its first non-zero nested one."),
    column("error_name", pa.string(), "Name of `error_code` from Kafka's error table (`NONE` for 0)."),
    column("status", pa.string(), "`ok`, `unpaired_request`, `unpaired_response`, `unknown_api` or `decode_error`."),
    column("group_id", pa.string(), "Consumer, share or classic group id the request names."),
    column("member_id", pa.string(), "Group member id the request names (or the one the broker assigned)."),
    column("group_instance_id", pa.string(), "Static membership instance id, where sent."),
    column("generation_id", pa.int32(), "Classic group generation (request's, or the one JoinGroup answered); "
           "OffsetCommit's `generation_id_or_member_epoch`, which is the member epoch in KIP-848 groups."),
    column("member_epoch", pa.int32(), "KIP-848 / share-group member epoch the client sent."),
    column("response_member_epoch", pa.int32(), "Member epoch the broker answered."),
    column("group_epoch", pa.int32(), "Group epoch, where a message carries one."),
    column("share_session_epoch", pa.int32(), "ShareFetch / ShareAcknowledge share session epoch the client sent."),
    column("producer_id", pa.int64(), "Producer id (request's, else the one InitProducerId answered)."),
    column("producer_epoch", pa.int16(), "Producer epoch (request's, else the one InitProducerId answered)."),
    column("transactional_id", pa.string(), "Transactional id, where the message carries one."),
    column("topics", pa.list_(pa.string()), "Topics the request or response names (ids resolved to names when known), "
           "including those of classic consumer protocol subscriptions and assignments (`$consumer`)."),
    column("throttle_time_ms", pa.int32(), "Broker throttle time from the response."),
    column("decode_error", pa.string(), "Why decoding failed (`reason at offset N`), when status is `decode_error`."),
    column("request_json", pa.string(), "The full decoded request as JSON (schema field names, snake_case). Bytes are "
           "`{\"$bytes\": base64}`, record data `{\"$records\": size}`, secrets `{\"$redacted\": size}`. "
           "JoinGroup `metadata` and SyncGroup `assignment` bytes of classic `consumer` groups also carry their "
           "decoded consumer protocol: `{\"$bytes\": ..., \"$consumer\": {\"version\": 0, \"topics\": [...], "
           "\"user_data\": ...}}` (subscription; v1+ add `owned_partitions`, v2+ `generation_id`, v3+ `rack_id`) or "
           "`{\"$bytes\": ..., \"$consumer\": {\"version\": 0, \"assigned_partitions\": [{\"topic\": ..., "
           "\"partitions\": [...]}], \"user_data\": ...}}` (assignment); bytes that should decode but do not get "
           "`\"$consumer_error\": \"reason at offset N\"` and a `malformed_consumer_protocol` anomaly."),
    column("response_json", pa.string(), "The full decoded response as JSON, in the same form as `request_json`."),
    column("tls", pa.string(), "TLS version of a connection decrypted with `--tls-keylog` (`TLS 1.2`, `TLS 1.3`); "
           "null in the clear."),
    column("request_file", pa.string(), "Capture file holding the packet `request_packet` (as given to `dissect`); "
           "null when the request was not captured."),
    column("request_packet", pa.int64(), "Number of the packet that carried the request's first byte, counted from 1 "
           "in `request_file` as Wireshark's `frame.number`: the packet of `ts_request`. Wireshark shows a message "
           "that spans segments on the packet of its last segment, whose `tcp.segment` list starts with this one. "
           "Over TLS, the packet completing the record that carries the first byte."),
    column("response_file", pa.string(), "Capture file holding the packet `response_packet` (a ring's next file when "
           "the response crossed into it); null without a response."),
    column("response_packet", pa.int64(), "Number of the packet that carried the response's first byte, as "
           "`request_packet`: the packet of `ts_response`."),
)

BATCHES = table(
    "One row per record batch in Produce requests and Fetch / ShareFetch responses.",
    *_CONN,
    column("correlation_id", pa.int32(), "Correlation id of the carrying request/response."),
    column("api_version", pa.int16(), "Api version of the carrying message."),
    column("direction", pa.string(), "`produce`, `fetch` or `share_fetch`."),
    column("ts", TS, "Time of the carrying message (request for produce, response for fetches)."),
    column("client_id", pa.string(), "Client id of the carrying request."),
    column("group_id", pa.string(), "Share group of a ShareFetch, where known."),
    column("member_id", pa.string(), "Share member of a ShareFetch, where known."),
    column("topic", pa.string(), "Topic name (resolved from the topic id via Metadata seen in the capture, else the id)."),
    column("topic_id", pa.string(), "Topic id (Kafka's base64 form) where the message uses ids."),
    column("partition", pa.int32(), "Partition index."),
    column("magic", pa.int8(), "Record format: 2 for record batches, 0 or 1 for legacy message sets."),
    column("base_offset", pa.int64(), "Batch base offset (0 in Produce requests: the broker assigns it)."),
    column("last_offset", pa.int64(), "`base_offset + last_offset_delta`."),
    column("record_count", pa.int32(), "Records in the batch."),
    column("producer_id", pa.int64(), "Producer id (-1 when not idempotent)."),
    column("producer_epoch", pa.int16(), "Producer epoch."),
    column("base_sequence", pa.int32(), "Sequence of the first record (-1 when not idempotent)."),
    column("is_transactional", pa.bool_(), "Transactional attribute bit."),
    column("is_control", pa.bool_(), "Control batch (transaction marker)."),
    column("control_type", pa.string(), "`commit` or `abort` for control batches."),
    column("compression", pa.string(), "`none`, `gzip`, `snappy`, `lz4` or `zstd`."),
    column("batch_bytes", pa.int64(), "Batch size on the wire."),
    column("first_timestamp", TS, "Batch base timestamp."),
    column("max_timestamp", TS, "Batch max timestamp."),
    column("crc_ok", pa.bool_(), "CRC (crc32c for magic 2) matched."),
    column("fingerprint", pa.int64(), "With `--records`: the batch's records as one 64-bit value, the same for "
           "batches of the same records (each record's offset delta, key and value; not its timestamp or headers), "
           "wherever and whenever they were sent: a 64-bit BLAKE2b of them in the batch's order. Null without "
           "`--records` and for a batch without a readable record."),
    column("fetch_offset", pa.int64(), "Offset the matching fetch request asked for on this partition."),
    column("high_watermark", pa.int64(), "Partition high watermark from the fetch response."),
    column("assigned_offset", pa.int64(), "Base offset the Produce response assigned to this partition."),
    column("partition_error_code", pa.int16(), "Partition-level error of the carrying response."),
)

RECORDS = table(
    "With `--records`: one row per record of every batch in `batches/`.",
    column("conn_id", pa.string(), "Connection id (as in `batches`)."),
    column("correlation_id", pa.int32(), "Correlation id of the carrying message."),
    column("direction", pa.string(), "`produce`, `fetch` or `share_fetch`."),
    column("ts", TS, "Time of the carrying message."),
    column("client_id", pa.string(), "Client id of the carrying request."),
    column("topic", pa.string(), "Topic name (or id when unresolved)."),
    column("partition", pa.int32(), "Partition index."),
    column("base_offset", pa.int64(), "Base offset of the batch the record belongs to."),
    column("offset", pa.int64(), "Record offset (`base_offset + offset_delta`)."),
    column("sequence", pa.int32(), "Record sequence (`base_sequence + offset_delta`, -1 when not idempotent)."),
    column("producer_id", pa.int64(), "Producer id of the batch."),
    column("timestamp", TS, "Record timestamp."),
    column("key_size", pa.int32(), "Key length in bytes (-1 for a null key)."),
    column("value_size", pa.int32(), "Value length in bytes (-1 for a null value)."),
    column("key_hash", pa.int64(), "64-bit BLAKE2b of the key (null for a null key)."),
    column("value_hash", pa.int64(), "64-bit BLAKE2b of the value (null for a null value)."),
    column("header_keys", pa.list_(pa.string()), "Record header keys."),
    column("key", pa.binary(), "Key bytes, only with `--payloads`."),
    column("value", pa.binary(), "Value bytes, only with `--payloads`."),
)

SHARE = table(
    "KIP-932 share-group rows: acquired ranges (ShareFetch responses) and acknowledgement batches (requests).",
    *_CONN,
    column("kind", pa.string(), "`acquired` (ShareFetch response) or `ack` (ShareFetch / ShareAcknowledge request)."),
    column("api_key", pa.int16(), "78 ShareFetch or 79 ShareAcknowledge."),
    column("correlation_id", pa.int32(), "Correlation id of the carrying message."),
    column("ts", TS, "Time of the carrying message."),
    column("client_id", pa.string(), "Client id."),
    column("group_id", pa.string(), "Share group id."),
    column("member_id", pa.string(), "Share member id."),
    column("share_session_epoch", pa.int32(), "Share session epoch of the request."),
    column("topic", pa.string(), "Topic name (or id when unresolved)."),
    column("topic_id", pa.string(), "Topic id."),
    column("partition", pa.int32(), "Partition index."),
    column("first_offset", pa.int64(), "First offset of the range."),
    column("last_offset", pa.int64(), "Last offset of the range (inclusive)."),
    column("delivery_count", pa.int16(), "Delivery count of an acquired range."),
    column("ack_type", pa.string(), "`gap`, `accept`, `release`, `reject` or `renew` for ack rows."),
    column("error_code", pa.int16(), "Partition error of the response (acquired rows) or of the ack's response."),
)

ANOMALIES = table(
    "Every problem met while dissecting, with where it was and what it cost.",
    column("kind", pa.string(), "What went wrong: one of the closed list of kinds under \"Anomalies\" above "
           "(`dissect/anomalies.py`)."),
    column("detail", pa.string(), "A sentence explaining this occurrence."),
    column("capture_file", pa.string(), "Capture file the problem was found in."),
    column("packet_index", pa.int64(), "Index of the packet in that file (0-based), where it applies."),
    column("ts", TS, "Time of the packet."),
    column("conn_id", pa.string(), "Connection, where it applies."),
    column("direction", pa.string(), "`request` or `response` stream, where it applies."),
    column("stream_offset", pa.int64(), "Byte offset in that direction's stream."),
    column("bytes", pa.int64(), "Bytes the problem cost (skipped or undecoded)."),
    column("api_key", pa.int16(), "Api key involved, where known."),
    column("correlation_id", pa.int32(), "Correlation id involved, where known."),
)

CONNECTIONS = table(
    "One row per Kafka connection (a TLS one included), with tshark's TCP analysis counts. Counted until the capture "
    "forgets the connection (a minute of capture time after it closes, or its end), so a reset after the FINs "
    "counts; bytes are only analysed until it closes.",
    *_CONN,
    column("first_seen", TS, "Time of its first packet (the SYN when the capture holds it)."),
    column("closed_by", pa.string(), "`fin` (both sides), `rst`, `idle_timeout`, `port_reuse` (a new SYN on its "
           "ports) or `end_of_capture`."),
    column("handshake_rtt_us", pa.int64(), "Client's SYN to its ACK of the SYN-ACK, in microseconds, as tshark's "
           "`tcp.analysis.initial_rtt`: the whole round trip wherever the capture was taken. Null when the capture "
           "lacks the SYN, the SYN-ACK or that ACK."),
    column("retransmissions", pa.int64(), "Segments with payload behind the furthest byte seen that carry bytes seen "
           "before, or fill a hole later than the handshake RTT (3 ms without one) after the furthest segment, as "
           "tshark's `tcp.analysis.retransmission` (a segment lost before the capture point, sent again). Keep-alives "
           "are not counted, nor retransmitted SYNs and FINs without payload."),
    column("out_of_order", pa.int64(), "Segments with payload that fill a hole sooner than that, as tshark's "
           "`tcp.analysis.out_of_order` (reordered on the way; those before the first SYN-ACK is answered use 3 ms)."),
    column("resets", pa.int64(), "Segments with RST, from either side."),
    column("zero_windows", pa.int64(), "Segments advertising a zero receive window (without SYN, FIN or RST), from "
           "either side, as tshark's `tcp.analysis.zero_window`: the receiver could take no more data. Those before "
           "the connection's first segment with payload, SYN, FIN or RST are not seen."),
)

MESSAGE_TEXT = frozenset({"request_json", "response_json"})
"""The string columns whose values are each message's own (its body as JSON), where the others' repeat: the writer
gives those a dictionary, and no dictionary could hold these."""

TCP_COUNTS = ("handshake_rtt_us", "retransmissions", "out_of_order", "resets", "zero_windows")
"""The columns of CONNECTIONS the report's sessions/connections carries on (with their documentation)."""

TABLES: dict[str, pa.Schema] = {
    "frames": FRAMES,
    "batches": BATCHES,
    "records": RECORDS,
    "share": SHARE,
    "anomalies": ANOMALIES,
    "connections": CONNECTIONS,
}


def markdown(tables: dict[str, pa.Schema]) -> str:
    """Render schemas as Markdown tables (docs/schemas.md), so the documentation cannot drift from the code."""
    out: list[str] = []
    for name, schema in tables.items():
        out.append(f"#### `{name}/`\n\n{schema.metadata[b'doc'].decode()}\n")
        out.append("| column | type | meaning |\n|---|---|---|")
        for f in schema:
            doc = (f.metadata or {}).get(b"doc", b"").decode()
            out.append(f"| `{f.name}` | {f.type} | {doc} |")
        out.append("")
    return "\n".join(out)


def document() -> str:
    """docs/schemas.md's section for this module's tables."""
    return markdown(TABLES)


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print(document())
