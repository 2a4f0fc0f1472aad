"""A steady background producer for the latency samples: a few records a second, round-robin over a topic's
partitions, each record's send time logged beside the offset the broker acknowledged (the truth's `record_times`)."""

from __future__ import annotations

import random
import threading
import time

from kafkatap.samples.make import Env
from kafkatap.samples.workloads.common import CONFLUENT, KAFKA_PYTHON, payload, record_times


class Trickle:
    """`rate` records a second into `topic` until the block ends. library: `kafka-python` (against Tansu, with
    `api_version`) or `confluent-kafka` (against the mock cluster). The send time is taken just before the record
    is handed to the client library, so the clients' own latency includes the library's time on both ends."""

    def __init__(self, env: Env, client_id: str, topic: str, partitions: int, *, rate: int = 20,
                 library: str = "kafka-python", api_version: tuple[int, int] | None = None) -> None:
        self.env, self.client_id, self.topic, self.partitions, self.rate = env, client_id, topic, partitions, rate
        self.library = library
        if library == "kafka-python":
            from kafka import KafkaProducer

            env.truth.client(client_id, KAFKA_PYTHON, "producer", linger_ms=0,
                             **({"api_version": list(api_version)} if api_version else {}))
            self.producer = KafkaProducer(bootstrap_servers=env.tansu.bootstrap, client_id=client_id,
                                          api_version=api_version, linger_ms=0)
        else:
            from confluent_kafka import Producer

            env.truth.client(client_id, CONFLUENT, "producer", **{"linger.ms": 0})
            self.producer = Producer({"bootstrap.servers": env.mock.bootstrap, "linger.ms": 0,
                                      **env.log.librdkafka(client_id)})
        self.sent: list[list] = []
        self.errors: list[str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng, n, pending = random.Random(6), 0, []
        while not self.done.wait(1 / self.rate):
            wall = round(time.time(), 6)
            key, value, partition = f"order-{n}".encode(), payload(rng, 100), n % self.partitions
            if self.library == "kafka-python":
                pending.append((wall, self.producer.send(self.topic, key=key, value=value, partition=partition)))
            else:
                self.producer.produce(self.topic, key=key, value=value, partition=partition,
                                      on_delivery=self._delivered(wall))
                self.producer.poll(0)
            n += 1
        self.producer.flush(10)
        for wall, future in pending:
            md = future.get(10)
            self._acked(md.topic, md.partition, md.offset, wall)

    def _delivered(self, wall: float):
        def on_delivery(err, msg) -> None:
            if err is not None:
                self.errors.append(err.name())
            else:
                self._acked(msg.topic(), msg.partition(), msg.offset(), wall)
        return on_delivery

    def _acked(self, topic: str, partition: int, offset: int, wall: float) -> None:
        self.env.truth.produced(self.client_id, topic, partition, offset)
        self.sent.append([topic, partition, offset, wall])

    def __enter__(self) -> Trickle:
        self.thread.start()
        self.env.truth.event(self.client_id, "trickle_started", records_per_second=self.rate)
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join(30)
        if self.library == "kafka-python":
            self.producer.close(5)
        self.env.truth.event(self.client_id, "trickle_stopped", records=len(self.sent))
        record_times(self.env.truth, sent=self.sent)
        if self.errors and exc[0] is None:
            raise RuntimeError(f"{self.client_id}: produce errors {self.errors}")
