"""The workload of the TLS samples: kafka-python clients reach Tansu through TLS (SASL/PLAIN inside it when the
sample has users), create a topic, produce, consume it in a classic group and commit, writing their key log."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from kafkatap.samples.make import Env
from kafkatap.samples.workloads.common import KAFKA_PYTHON, TANSU_SESSION_TIMEOUT_MS

TOPIC, PARTITIONS, RECORDS = "tls-orders", 2, 30
API_VERSION = (2, 5)


def run_through_tls(env: Env, group: str) -> None:
    truth, config = env.truth, env.tls.config()
    settings = {"api_version": list(API_VERSION), "security_protocol": config["security_protocol"],
                "tls_maximum_version": env.tls.spec.maximum_version or "TLSv1_3"}
    admin_id = truth.client("kt-tls-admin", KAFKA_PYTHON, "admin", **settings)
    admin = KafkaAdminClient(client_id=admin_id, api_version=API_VERSION, **config)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    truth.topic(TOPIC, PARTITIONS)

    producer_id = truth.client("kt-tls-producer", KAFKA_PYTHON, "producer", linger_ms=5, **settings)
    producer = KafkaProducer(client_id=producer_id, api_version=API_VERSION, linger_ms=5, **config)
    futures = [producer.send(TOPIC, key=f"k{i}".encode(), value=b"v" * (40 + i), partition=i % PARTITIONS)
               for i in range(RECORDS)]
    producer.flush(10)
    for future in futures:
        sent = future.get(10)
        truth.produced(producer_id, sent.topic, sent.partition, sent.offset)
    producer.close(5)
    truth.event(producer_id, "produced", records=RECORDS)

    consumer_id = truth.client("kt-tls-consumer", KAFKA_PYTHON, "consumer", group_id=group, **settings)
    consumer = KafkaConsumer(TOPIC, client_id=consumer_id, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=TANSU_SESSION_TIMEOUT_MS,
                             heartbeat_interval_ms=1000, api_version=API_VERSION, **config)
    consumed, deadline = 0, time.monotonic() + 60
    while consumed < RECORDS and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=300).values():
            for record in records:
                truth.consumed(consumer_id, group, "classic_group", record.topic, record.partition, record.offset)
                consumed += 1
    consumer.commit()
    consumer.close()
    truth.event(consumer_id, "consumed_and_committed", records=consumed)
    if env.tls.spec.sasl_users:
        accepted = sum(ok for _, ok in env.tls.logins)
        truth.note(f"SASL/PLAIN inside TLS: the terminator accepted {accepted} of {len(env.tls.logins)} logins "
                   f"(users {sorted({user for user, _ in env.tls.logins})}; the password is in no output)")
