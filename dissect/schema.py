"""The Parquet schemas of the dissector's output: the contract every later stage reads.

Each column is declared once here with its documentation; the README's schema tables are rendered from this module
(`python -m dissect.schema --markdown`) and a test keeps the two in step.
"""

from __future__ import annotations

import sys

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")


def _field(name: str, type_: pa.DataType, doc: str) -> pa.Field:
    return pa.field(name, type_, nullable=True, metadata={"doc": doc})


def _schema(doc: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(list(fields), metadata={"doc": doc})


_CONN = [
    _field("conn_id", pa.string(), "Connection id, unique across captures: `client_addr>broker_addr@first_seen_us`."),
    _field("client_addr", pa.string(), "Client endpoint `ip:port` (IPv6 as `[ip]:port`)."),
    _field("broker_addr", pa.string(), "Broker endpoint `ip:port`."),
]

FRAMES = _schema(
    "One row per request/response pair, or per unpaired half.",
    *_CONN,
    _field("ts_request", TS, "Time of the packet carrying the request's first byte (UTC, microseconds)."),
    _field("ts_response", TS, "Time of the packet carrying the response's first byte."),
    _field("latency_us", pa.int64(), "`ts_response - ts_request` in microseconds; null when unpaired."),
    _field("api_key", pa.int16(), "Kafka api key."),
    _field("api_name", pa.string(), "Kafka api name (`Produce`, `Fetch`, ...), `unknown` for an unknown key."),
    _field("api_version", pa.int16(), "Api version from the request header."),
    _field("correlation_id", pa.int32(), "Correlation id shared by the request and its response."),
    _field("client_id", pa.string(), "Client id from the request header."),
    _field("request_bytes", pa.int64(), "Request size on the wire, including the 4-byte length prefix."),
    _field("response_bytes", pa.int64(), "Response size on the wire, including the 4-byte length prefix."),
    _field("error_code", pa.int16(), "Top-level error code of the response, else its first non-zero nested one."),
    _field("error_name", pa.string(), "Name of `error_code` from Kafka's error table (`NONE` for 0)."),
    _field("status", pa.string(), "`ok`, `unpaired_request`, `unpaired_response`, `unknown_api` or `decode_error`."),
    _field("group_id", pa.string(), "Consumer, share or classic group id the request names."),
    _field("member_id", pa.string(), "Group member id the request names (or the one the broker assigned)."),
    _field("group_instance_id", pa.string(), "Static membership instance id, where sent."),
    _field("generation_id", pa.int32(), "Classic group generation (request's, or the one JoinGroup answered); "
           "OffsetCommit's `generation_id_or_member_epoch`, which is the member epoch in KIP-848 groups."),
    _field("member_epoch", pa.int32(), "KIP-848 / share-group member epoch the client sent."),
    _field("response_member_epoch", pa.int32(), "Member epoch the broker answered."),
    _field("group_epoch", pa.int32(), "Group epoch, where a message carries one."),
    _field("share_session_epoch", pa.int32(), "ShareFetch / ShareAcknowledge share session epoch the client sent."),
    _field("producer_id", pa.int64(), "Producer id (request's, else the one InitProducerId answered)."),
    _field("producer_epoch", pa.int16(), "Producer epoch (request's, else the one InitProducerId answered)."),
    _field("transactional_id", pa.string(), "Transactional id, where the message carries one."),
    _field("topics", pa.list_(pa.string()), "Topics the request or response names (ids resolved to names when known)."),
    _field("throttle_time_ms", pa.int32(), "Broker throttle time from the response."),
    _field("decode_error", pa.string(), "Why decoding failed (`reason at offset N`), when status is `decode_error`."),
    _field("request_json", pa.string(), "The full decoded request as JSON (schema field names, snake_case)."),
    _field("response_json", pa.string(), "The full decoded response as JSON."),
)

BATCHES = _schema(
    "One row per record batch in Produce requests and Fetch / ShareFetch responses.",
    *_CONN,
    _field("correlation_id", pa.int32(), "Correlation id of the carrying request/response."),
    _field("api_version", pa.int16(), "Api version of the carrying message."),
    _field("direction", pa.string(), "`produce`, `fetch` or `share_fetch`."),
    _field("ts", TS, "Time of the carrying message (request for produce, response for fetches)."),
    _field("client_id", pa.string(), "Client id of the carrying request."),
    _field("group_id", pa.string(), "Share group of a ShareFetch, where known."),
    _field("member_id", pa.string(), "Share member of a ShareFetch, where known."),
    _field("topic", pa.string(), "Topic name (resolved from the topic id via Metadata seen in the capture, else the id)."),
    _field("topic_id", pa.string(), "Topic id (Kafka's base64 form) where the message uses ids."),
    _field("partition", pa.int32(), "Partition index."),
    _field("magic", pa.int8(), "Record format: 2 for record batches, 0 or 1 for legacy message sets."),
    _field("base_offset", pa.int64(), "Batch base offset (0 in Produce requests: the broker assigns it)."),
    _field("last_offset", pa.int64(), "`base_offset + last_offset_delta`."),
    _field("record_count", pa.int32(), "Records in the batch."),
    _field("producer_id", pa.int64(), "Producer id (-1 when not idempotent)."),
    _field("producer_epoch", pa.int16(), "Producer epoch."),
    _field("base_sequence", pa.int32(), "Sequence of the first record (-1 when not idempotent)."),
    _field("is_transactional", pa.bool_(), "Transactional attribute bit."),
    _field("is_control", pa.bool_(), "Control batch (transaction marker)."),
    _field("control_type", pa.string(), "`commit` or `abort` for control batches."),
    _field("compression", pa.string(), "`none`, `gzip`, `snappy`, `lz4` or `zstd`."),
    _field("batch_bytes", pa.int64(), "Batch size on the wire."),
    _field("first_timestamp", TS, "Batch base timestamp."),
    _field("max_timestamp", TS, "Batch max timestamp."),
    _field("crc_ok", pa.bool_(), "CRC (crc32c for magic 2) matched."),
    _field("fetch_offset", pa.int64(), "Offset the matching fetch request asked for on this partition."),
    _field("high_watermark", pa.int64(), "Partition high watermark from the fetch response."),
    _field("assigned_offset", pa.int64(), "Base offset the Produce response assigned to this partition."),
    _field("partition_error_code", pa.int16(), "Partition-level error of the carrying response."),
)

RECORDS = _schema(
    "With `--records`: one row per record of every batch in `batches/`.",
    _field("conn_id", pa.string(), "Connection id (as in `batches`)."),
    _field("correlation_id", pa.int32(), "Correlation id of the carrying message."),
    _field("direction", pa.string(), "`produce`, `fetch` or `share_fetch`."),
    _field("ts", TS, "Time of the carrying message."),
    _field("client_id", pa.string(), "Client id of the carrying request."),
    _field("topic", pa.string(), "Topic name (or id when unresolved)."),
    _field("partition", pa.int32(), "Partition index."),
    _field("base_offset", pa.int64(), "Base offset of the batch the record belongs to."),
    _field("offset", pa.int64(), "Record offset (`base_offset + offset_delta`)."),
    _field("sequence", pa.int32(), "Record sequence (`base_sequence + offset_delta`, -1 when not idempotent)."),
    _field("producer_id", pa.int64(), "Producer id of the batch."),
    _field("timestamp", TS, "Record timestamp."),
    _field("key_size", pa.int32(), "Key length in bytes (-1 for a null key)."),
    _field("value_size", pa.int32(), "Value length in bytes (-1 for a null value)."),
    _field("key_hash", pa.int64(), "64-bit BLAKE2b of the key (null for a null key)."),
    _field("value_hash", pa.int64(), "64-bit BLAKE2b of the value (null for a null value)."),
    _field("header_keys", pa.list_(pa.string()), "Record header keys."),
    _field("key", pa.binary(), "Key bytes, only with `--payloads`."),
    _field("value", pa.binary(), "Value bytes, only with `--payloads`."),
)

SHARE = _schema(
    "KIP-932 share-group rows: acquired ranges (ShareFetch responses) and acknowledgement batches (requests).",
    *_CONN,
    _field("kind", pa.string(), "`acquired` (ShareFetch response) or `ack` (ShareFetch / ShareAcknowledge request)."),
    _field("api_key", pa.int16(), "78 ShareFetch or 79 ShareAcknowledge."),
    _field("correlation_id", pa.int32(), "Correlation id of the carrying message."),
    _field("ts", TS, "Time of the carrying message."),
    _field("client_id", pa.string(), "Client id."),
    _field("group_id", pa.string(), "Share group id."),
    _field("member_id", pa.string(), "Share member id."),
    _field("share_session_epoch", pa.int32(), "Share session epoch of the request."),
    _field("topic", pa.string(), "Topic name (or id when unresolved)."),
    _field("topic_id", pa.string(), "Topic id."),
    _field("partition", pa.int32(), "Partition index."),
    _field("first_offset", pa.int64(), "First offset of the range."),
    _field("last_offset", pa.int64(), "Last offset of the range (inclusive)."),
    _field("delivery_count", pa.int16(), "Delivery count of an acquired range."),
    _field("ack_type", pa.string(), "`gap`, `accept`, `release`, `reject` or `renew` for ack rows."),
    _field("error_code", pa.int16(), "Partition error of the response (acquired rows) or of the ack's response."),
)

ANOMALIES = _schema(
    "Every problem met while dissecting, with where it was and what it cost.",
    _field("kind", pa.string(), "What went wrong (`gap`, `overlap_mismatch`, `malformed`, `unknown_api`, `tls`, ...)."),
    _field("detail", pa.string(), "A sentence explaining this occurrence."),
    _field("capture_file", pa.string(), "Capture file the problem was found in."),
    _field("packet_index", pa.int64(), "Index of the packet in that file (0-based), where it applies."),
    _field("ts", TS, "Time of the packet."),
    _field("conn_id", pa.string(), "Connection, where it applies."),
    _field("direction", pa.string(), "`request` or `response` stream, where it applies."),
    _field("stream_offset", pa.int64(), "Byte offset in that direction's stream."),
    _field("bytes", pa.int64(), "Bytes the problem cost (skipped or undecoded)."),
    _field("api_key", pa.int16(), "Api key involved, where known."),
    _field("correlation_id", pa.int32(), "Correlation id involved, where known."),
)

TABLES: dict[str, pa.Schema] = {
    "frames": FRAMES,
    "batches": BATCHES,
    "records": RECORDS,
    "share": SHARE,
    "anomalies": ANOMALIES,
}


def markdown(tables: dict[str, pa.Schema]) -> str:
    """Render schemas as README tables, so the documentation cannot drift from the code."""
    out: list[str] = []
    for name, schema in tables.items():
        out.append(f"#### `{name}/`\n\n{schema.metadata[b'doc'].decode()}\n")
        out.append("| column | type | meaning |\n|---|---|---|")
        for f in schema:
            doc = (f.metadata or {}).get(b"doc", b"").decode()
            out.append(f"| `{f.name}` | {f.type} | {doc} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print(markdown(TABLES))
