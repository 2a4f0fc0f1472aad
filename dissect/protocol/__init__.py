"""Schema-driven codec for every Kafka request and response (api keys 0-94, every version of either schema set).

Tables are generated from Kafka's JSON schemas (`python -m kafkatap.dissect.protocol.generate`); decoders are
compiled once per (api_key, version, direction) at first use. See docs in codec.py. The classic consumer protocol
carried inside JoinGroup / SyncGroup bytes is decoded by `kafkatap.dissect.protocol.embedded`.
"""

from kafkatap.dissect.protocol.codec import (
    decode_request,
    decode_request_header,
    decode_response,
    decode_response_header,
    encode_request,
    encode_request_header,
    encode_response,
    encode_response_header,
)
from kafkatap.dissect.protocol.jsonout import to_json
from kafkatap.dissect.protocol.registry import (
    api_name,
    api_versions,
    error_name,
    is_known,
    request_header_version,
    response_header_version,
)

__all__ = [
    "api_name", "api_versions", "is_known", "request_header_version", "response_header_version",
    "decode_request_header", "decode_response_header", "decode_request", "decode_response",
    "encode_request_header", "encode_request", "encode_response_header", "encode_response",
    "error_name", "to_json",
]
