"""Plain produce and consume on Tansu: three topics, every compression type, a group consumer and an assign() one."""

from __future__ import annotations

import random

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import (CONFLUENT, KAFKA_PYTHON, TANSU_SESSION_TIMEOUT_MS, delivery_recorder,
                                               payload, until)

SPEC = Spec(
    name="produce_consume",
    description="Tansu: 5 confluent-kafka producers (compression none, gzip, snappy, lz4, zstd) write 3 topics; "
                "a confluent-kafka classic-group consumer reads two of them, a kafka-python assign() consumer the "
                "third.",
    tansu_port=19010,
)
TOPICS = {"orders": 3, "payments": 2, "events": 1}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_TOPIC = 12
GROUP = "kt-pc-group"


def run(env: Env) -> None:
    truth, log, bootstrap = env.truth, env.log, env.tansu.bootstrap
    rng = random.Random(1)
    admin_id = truth.client("kt-admin", CONFLUENT, "admin")
    admin = AdminClient({"bootstrap.servers": bootstrap, **log.librdkafka(admin_id)})
    for fut in admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()]).values():
        fut.result(15)
    admin.poll(0.5)  # confluent-kafka hands log lines (our request counts) over in poll()
    for t, n in TOPICS.items():
        truth.topic(t, n)
    truth.event(admin_id, "topics_created", topics=list(TOPICS))

    errors: list = []
    for codec in CODECS:
        cid = truth.client(f"kt-producer-{codec}", CONFLUENT, "producer", **{"compression.type": codec,
                                                                              "linger.ms": 20})
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20,
                             **log.librdkafka(cid)})
        on_delivery = delivery_recorder(truth, cid, errors, compression=codec)
        for topic, parts in TOPICS.items():
            for i in range(RECORDS_PER_TOPIC):
                producer.produce(topic, key=f"{codec}-{i}".encode(), value=payload(rng, rng.randrange(80, 400)),
                                 partition=i % parts, headers=[("codec", codec.encode())], on_delivery=on_delivery)
        if producer.flush(20):
            raise RuntimeError(f"{cid}: records left unflushed")
        truth.event(cid, "produced", records=RECORDS_PER_TOPIC * len(TOPICS))
    if errors:
        raise RuntimeError(f"produce errors: {errors}")

    expected = RECORDS_PER_TOPIC * len(CODECS)
    group_topics = ["orders", "payments"]
    cid = truth.client("kt-consumer-1", CONFLUENT, "consumer", **{"group.id": GROUP,
                                                                 "session.timeout.ms": TANSU_SESSION_TIMEOUT_MS})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": TANSU_SESSION_TIMEOUT_MS,
                         "heartbeat.interval.ms": 1000, **log.librdkafka(cid)})
    consumer.subscribe(group_topics)
    got = 0
    for _ in range(400):
        if got >= expected * len(group_topics):
            break
        for msg in consumer.consume(50, 0.25):
            if msg.error():
                truth.event(cid, "consume_error", error_name=msg.error().name())
                continue
            truth.consumed(cid, GROUP, "classic_group", msg.topic(), msg.partition(), msg.offset())
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    truth.event(cid, "consumed", records=got)
    if got != expected * len(group_topics):
        raise RuntimeError(f"{cid} consumed {got} of {expected * len(group_topics)}")

    cid = truth.client("kt-consumer-2", KAFKA_PYTHON, "consumer", assign=["events/0"])
    kp = KafkaConsumer(bootstrap_servers=bootstrap, client_id=cid, group_id=None, enable_auto_commit=False)
    tp = TopicPartition("events", 0)
    kp.assign([tp])
    kp.seek_to_beginning(tp)
    seen: list[int] = []

    def read() -> bool:
        for msgs in kp.poll(timeout_ms=200).values():
            for m in msgs:
                truth.consumed(cid, None, "none", m.topic, m.partition, m.offset)
                seen.append(m.offset)
        return len(seen) >= expected

    if not until(read, 20):
        raise RuntimeError(f"{cid} consumed {len(seen)} of {expected}")
    kp.close()
    truth.event(cid, "consumed", records=len(seen))
