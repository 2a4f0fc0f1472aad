"""Client-side request accounting: which requests each client really sent, and which errors it was answered.

librdkafka reports every request it writes in its `protocol` debug log ("Sent FetchRequest (v11, ...)", read
from the process's stderr), and
kafka-python encodes every request through `KafkaProtocol.send_request`; both are counted here per client id, which
makes the truth files' request counts exact rather than sampled from periodic statistics (librdkafka's `stats_cb`
drops the bootstrap connection's requests and misses those sent after the last interval).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections import Counter, defaultdict
from contextlib import contextmanager
from typing import Iterable, Iterator

from kafkatap.samples.truth import API_KEYS, api_name

_SENT = re.compile(r"Sent (\w+?)Request \(v(\d+), \d+ bytes @ \d+, CorrId (\d+)\)")
_LIBRDKAFKA_ALIASES = {"ApiVersion": "ApiVersions", "Offset": "ListOffsets"}


class RequestLog:
    """Requests sent per client id and api, plus the non-zero error codes their responses carried (kafka-python)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent: Counter = Counter()           # (client_id, api_name) -> requests
        self.errors: Counter = Counter()         # (client_id, api_name, error_name) -> responses
        self.error_events: list[tuple[str, str, str]] = []   # (client_id, api_name, error_name) in arrival order
        # client_id -> (unix time, text) of librdkafka's non-request log lines (consumer-group debug, info)
        self.log_lines: dict[str, list[tuple[float, str]]] = defaultdict(list)

    def count(self, client_id: str, api: str) -> None:
        with self._lock:
            self.sent[(client_id, api)] += 1

    @staticmethod
    def librdkafka(client_id: str, *, group_debug: bool = False) -> dict:
        """confluent-kafka config entries naming the client and turning on the debug log its requests are counted
        from (with `group_debug`, also the consumer-group log, kept in `log_lines`)."""
        return {"client.id": client_id, "debug": "protocol,cgrp" if group_debug else "protocol"}

    @contextmanager
    def librdkafka_stderr(self) -> Iterator["RequestLog"]:
        """Collect librdkafka's log (written to fd 2 by its own threads) while the block runs, then count it.

        Reading fd 2 rather than passing a Python `logger` matters: confluent-kafka hands logger lines over only
        in poll(), so lines written after a client's last poll (its final requests) would be lost.
        Lines that are not debug output are written back to the real stderr afterwards.
        """
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield self
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                sink.seek(0)
                self._read_librdkafka_log(sink)

    def _read_librdkafka_log(self, lines: Iterable[bytes]) -> None:
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            parts = line.split("|", 4)
            if len(parts) < 5 or not parts[0].startswith("%"):
                sys.stderr.write(line + "\n")
                continue
            level, client = parts[0], parts[3].split("#", 1)[0]
            m = _SENT.search(parts[4])
            if m:
                name = _LIBRDKAFKA_ALIASES.get(m.group(1), m.group(1))
                self.count(client, name if name in API_KEYS else f"librdkafka:{m.group(1)}")
            elif level in ("%5", "%6", "%7"):  # notice, info, debug: kept for the workload, not shown
                if parts[2] not in ("RECV", "SEND"):
                    self.log_lines[client].append((float(parts[1]), parts[4]))
            else:
                sys.stderr.write(line + "\n")

    @contextmanager
    def kafka_python(self) -> Iterator["RequestLog"]:
        """Count every request kafka-python encodes, and the errors of every response it decodes, per client id."""
        from kafka.protocol.parser import KafkaProtocol

        send, receive = KafkaProtocol.send_request, KafkaProtocol.receive_bytes
        log = self

        def counting_send(parser, request, correlation_id=None):
            log.count(parser._client_id, api_name(request.API_KEY))
            return send(parser, request, correlation_id)

        def error_noting_receive(parser, data):
            responses = receive(parser, data)
            for _, response in responses:
                code = first_error_code(response)
                if code:
                    event = (parser._client_id, api_name(response.API_KEY), kafka_python_error_name(code))
                    with log._lock:
                        log.errors[event] += 1
                        log.error_events.append(event)
            return responses

        KafkaProtocol.send_request, KafkaProtocol.receive_bytes = counting_send, error_noting_receive
        try:
            yield self
        finally:
            KafkaProtocol.send_request, KafkaProtocol.receive_bytes = send, receive

    def merge(self, by_client: dict[str, dict[str, int]], error_events: list) -> None:
        """Add what was counted elsewhere: a member process (workloads/member.py) or the synthesizer."""
        with self._lock:
            for client, per_api in by_client.items():
                for api, n in per_api.items():
                    self.sent[(client, api)] += n
            for event in error_events:
                self.errors[tuple(event)] += 1
                self.error_events.append(tuple(event))

    def by_client(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(dict)
        for (client, api), n in sorted(self.sent.items()):
            out[client][api] = n
        return dict(out)

    def errors_by_client(self) -> dict[str, dict[str, dict[str, int]]]:
        out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
        for (client, api, err), n in sorted(self.errors.items()):
            out[client][api][err] = n
        return {c: dict(v) for c, v in out.items()}


def first_error_code(obj: object, depth: int = 0) -> int:
    """Top-level error code of a kafka-python response, else the first non-zero nested one (the dissector's rule).

    Fields are matched by name suffix: some messages call it `partition_error_code` (AddPartitionsToTxn v0-3).
    """
    try:
        names = [f.name for f in type(obj)._struct._fields]  # generated message classes
    except AttributeError:
        names = [n for n in getattr(type(obj), "__slots__", ()) if not n.startswith("_")]
    for name in names:
        value = getattr(obj, name, None)
        if name.endswith("error_code") and isinstance(value, int) and value:
            return value
    if depth < 4:
        for name in names:
            value = getattr(obj, name, None)
            if isinstance(value, list):
                for item in value:
                    code = first_error_code(item, depth + 1)
                    if code:
                        return code
    return 0


# Kafka's names (Errors.java) of the codes kafka-python still calls by an older one: NOT_LEADER_FOR_PARTITION became
# NOT_LEADER_OR_FOLLOWER with KIP-392 (followers serving fetches); the truth speaks the protocol's names.
_RENAMED = {6: "NOT_LEADER_OR_FOLLOWER", 10: "MESSAGE_TOO_LARGE", 17: "INVALID_TOPIC_EXCEPTION",
            39: "INVALID_REPLICA_ASSIGNMENT"}


def kafka_python_error_name(code: int) -> str:
    """Kafka's error name for a code, as kafka-python knows it under Kafka's current name (`UNKNOWN_ERROR_<n>` for
    a code it does not know)."""
    import kafka.errors as Errors

    if code in _RENAMED:
        return _RENAMED[code]
    cls = Errors.for_code(code)
    message = getattr(cls, "message", None)
    return message if isinstance(message, str) and cls is not Errors.UnknownError else f"UNKNOWN_ERROR_{code}"
