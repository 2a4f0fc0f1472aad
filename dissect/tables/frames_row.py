# cython: annotation_typing=False
"""The frames/ row, written in one place: `frame_row` lays out its columns in the order of dissect/tables/schema.py
for every builder of that row (rows.frame, Rows.response_only and their compiled twin in _rows.pyx), so a column is
added here and in schema.py, nowhere else.

Plain Python that setup.py also compiles (Cython's pure-Python mode: frames_row.pxd declares its C signature), so
the compiled twin calls it in C while the pure-Python dissector imports this file: one source for both.
"""

from __future__ import annotations

ENTITIES = 11
"""group_id .. transactional_id: the values rows._entities takes from the request and response."""
NO_ENTITIES = (None,) * ENTITIES


def frame_row(conn_id: str, client_addr: str, broker_addr: str, ts_request: int | None, ts_response: int | None,
              api_key: int | None, api_name: str, api_version: int | None, correlation_id: int,
              client_id: str | None, request_bytes: int | None, response_bytes: int | None, error_code: int | None,
              error_name: str | None, status: str, entities: tuple, topics: tuple | None,
              throttle_time_ms: int | None, decode_error: str | None, request_json: str | None,
              response_json: str | None, tls: str | None, request_file: str | None, request_packet: int | None,
              response_file: str | None, response_packet: int | None) -> tuple:
    """One frames/ row, its arguments named as its columns, but for latency_us (from the two timestamps) and
    `entities` (a tuple of ENTITIES values, group_id .. transactional_id). A tuple of atoms: the writer transposes it
    into columns. The connection's columns are values, not its state: a compiled caller reads them as C fields."""
    return (
        conn_id, client_addr, broker_addr, ts_request, ts_response,
        None if ts_request is None or ts_response is None else ts_response - ts_request, api_key, api_name,
        api_version, correlation_id, client_id, request_bytes, response_bytes, error_code, error_name, status,
        entities[0], entities[1], entities[2], entities[3], entities[4], entities[5], entities[6], entities[7],
        entities[8], entities[9], entities[10], topics, throttle_time_ms, decode_error, request_json, response_json,
        tls, request_file, request_packet, response_file, response_packet,
    )
