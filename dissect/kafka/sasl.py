# cython: annotation_typing=False
"""Raw SASL tokens: after a SaslHandshake v0 request the client sends size-prefixed SASL tokens with no Kafka header,
and the broker answers the same way, until the client's next real request. Both directions' framers must accept
such frames, and the exchange counts them as `sasl_token` bytes, never decoding them.

Plain Python that setup.py also compiles (Cython's pure-Python mode, sasl.pxd): one source for both paths."""

from __future__ import annotations

import struct

from kafkatap.dissect.kafka.framing import YES
from kafkatap.dissect.kafka.plausible import (REQUEST_MIN_SIZE, RESPONSE_MIN_SIZE, RequestSync, ResponseSync,
                                              request_check)
from kafkatap.dissect.protocol.generated.api_keys import ApiKey


_SIZE = struct.Struct(">i").pack


class SaslTokens:
    """Whether raw tokens are expected on a connection, kept in step with its two framers' syncs."""

    __slots__ = ("req_sync", "resp_sync", "expected")

    def __init__(self, req_sync: RequestSync, resp_sync: ResponseSync) -> None:
        self.req_sync = req_sync
        self.resp_sync = resp_sync
        self.expected = False

    def after_request(self, api_key: int, api_version: int) -> None:
        """A decoded request: SaslHandshake v0 is the one followed by raw tokens (later versions wrap them in
        SaslAuthenticate)."""
        if api_key == ApiKey.SASL_HANDSHAKE and api_version == 0:
            self._expect(True)

    def is_token(self, payload: bytes) -> bool:
        """While tokens are expected: is this client frame one? The first frame that is a plausible request ends
        the tokens."""
        if request_check(_SIZE(len(payload)) + payload, 0) != YES:
            return True
        self._expect(False)
        return False

    def _expect(self, on: bool) -> None:
        self.expected = self.resp_sync.raw_tokens = on
        self.req_sync.min_size = 0 if on else REQUEST_MIN_SIZE
        self.resp_sync.min_size = 0 if on else RESPONSE_MIN_SIZE
