"""Small helpers shared by the workloads: deterministic payloads, delivery bookkeeping, library labels."""

from __future__ import annotations

import json
import random
import time
from importlib import metadata

import confluent_kafka
import kafka

from kafkatap.samples.truth import Truth

CONFLUENT = f"confluent-kafka {metadata.version('confluent-kafka')} (librdkafka {confluent_kafka.libversion()[0]})"
KAFKA_PYTHON = f"kafka-python {kafka.__version__}"
TANSU_SESSION_TIMEOUT_MS = 6000  # Tansu answers JoinGroup after about half of it: keep it short


def payload(rng: random.Random, size: int) -> bytes:
    """Compressible but not trivial text, so every codec has something to do."""
    words = [b"order", b"payment", b"click", b"kafka", b"tap", b"event", b"user", b"item"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b"-" + str(rng.randrange(10_000)).encode() + b" "
    return bytes(out[:size])


def delivery_recorder(truth: Truth, client_id: str, errors: list, **produced_kw):
    """confluent-kafka on_delivery callback that writes each acknowledged record into the truth."""
    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(err)
            truth.event(client_id, "delivery_failed", error_name=err.name(), topic=msg.topic(),
                        partition=msg.partition())
            return
        truth.produced(client_id, msg.topic(), msg.partition(), msg.offset(), **produced_kw)
    return on_delivery


def until(predicate, timeout: float, step: float = 0.05) -> bool:
    """Poll a condition with a deadline (bounded loops only)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def eos_stats() -> tuple[dict, dict]:
    """(live dict, config entries): librdkafka's statistics `eos` block, where it reports its producer id/epoch."""
    eos: dict = {}

    def on_stats(raw: str) -> None:
        eos.update(json.loads(raw).get("eos", {}))

    return eos, {"statistics.interval.ms": 100, "stats_cb": on_stats}


def record_times(truth: Truth, *, sent: list[list] = (), received: list[list] = ()) -> None:
    """Per-record wall-clock times into the truth's `record_times`: sent [topic, partition, offset, wall] when the
    producer handed the record to its client library, received [client_id, group_id, topic, partition, offset, wall]
    when a consumer's poll returned it."""
    times = truth.doc.setdefault("record_times", {"sent": [], "received": []})
    times["sent"].extend(sent)
    times["received"].extend(received)
