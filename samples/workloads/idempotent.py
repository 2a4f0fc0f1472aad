"""Idempotent producers on Tansu: producer ids, epochs and per-partition sequences, read back by a consumer."""

from __future__ import annotations

import random

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import CONFLUENT, KAFKA_PYTHON, eos_stats, payload, until

SPEC = Spec(
    name="idempotent",
    description="Tansu: a confluent-kafka and a kafka-python idempotent producer write topic `ledger` (2 partitions) "
                "in several batches each; a kafka-python assign() consumer reads everything back.",
    tansu_port=19020,
)
TOPIC, PARTITIONS = "ledger", 2


def run(env: Env) -> None:
    truth, log, bootstrap = env.truth, env.log, env.tansu.bootstrap
    rng = random.Random(2)
    admin_id = truth.client("kt-admin", CONFLUENT, "admin")
    admin = AdminClient({"bootstrap.servers": bootstrap, **log.librdkafka(admin_id)})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(15)
    admin.poll(0.5)
    truth.topic(TOPIC, PARTITIONS)

    cid = truth.client("kt-idem-producer-1", CONFLUENT, "producer", **{"enable.idempotence": True, "linger.ms": 10})
    eos, stats_conf = eos_stats()
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 10,
                         **stats_conf, **log.librdkafka(cid)})
    errors: list = []
    acked: list = []
    for round_ in range(4):
        for i in range(25):
            producer.produce(TOPIC, key=f"acct-{i % 7}".encode(), value=payload(rng, 120), partition=i % PARTITIONS,
                             on_delivery=lambda err, msg: acked.append((err, msg.topic(), msg.partition(),
                                                                        msg.offset())))
        producer.flush(15)
    until(lambda: eos.get("producer_id", -1) >= 0, 3)
    producer.poll(0.3)
    pid, epoch = eos.get("producer_id", -1), eos.get("producer_epoch", -1)
    for err, topic, part, off in acked:
        if err is not None:
            errors.append(err)
        else:
            truth.produced(cid, topic, part, off, producer_id=pid, producer_epoch=epoch)
    truth.producer(cid, pid, epoch)
    truth.event(cid, "produced", records=len(acked), producer_id=pid, producer_epoch=epoch)
    del producer

    cid2 = truth.client("kt-idem-producer-2", KAFKA_PYTHON, "producer", enable_idempotence=True, linger_ms=10)
    kp = KafkaProducer(bootstrap_servers=bootstrap, client_id=cid2, enable_idempotence=True, linger_ms=10, acks="all")
    futures = []
    for round_ in range(3):
        for i in range(20):
            futures.append(kp.send(TOPIC, key=f"acct-{i % 5}".encode(), value=payload(rng, 150),
                                   partition=(i + 1) % PARTITIONS))
        kp.flush(15)
    pe = kp._transaction_manager.producer_id_and_epoch
    for fut in futures:
        md = fut.get(10)
        truth.produced(cid2, md.topic, md.partition, md.offset, producer_id=pe.producer_id,
                       producer_epoch=pe.epoch)
    truth.producer(cid2, pe.producer_id, pe.epoch)
    truth.event(cid2, "produced", records=len(futures), producer_id=pe.producer_id, producer_epoch=pe.epoch)
    kp.close(5)
    if errors:
        raise RuntimeError(f"produce errors: {errors}")

    cid3 = truth.client("kt-consumer-1", KAFKA_PYTHON, "consumer", assign=[f"{TOPIC}/{p}" for p in range(PARTITIONS)])
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=cid3, group_id=None, enable_auto_commit=False)
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    total = len(acked) + len(futures)
    seen = [0]

    def read() -> bool:
        for msgs in consumer.poll(timeout_ms=200).values():
            for m in msgs:
                truth.consumed(cid3, None, "none", m.topic, m.partition, m.offset)
                seen[0] += 1
        return seen[0] >= total

    if not until(read, 20):
        raise RuntimeError(f"{cid3} consumed {seen[0]} of {total}")
    consumer.close()
    # Each producer numbers its records per partition from 0 and nothing was retried or re-initialised, so the
    # sequences of its acknowledged records are 0..n-1 in offset order.
    per_tp: dict = {}
    for cid_, pid_, epoch_, part, _ in [(cid, pid, epoch, p, o) for e, _t, p, o in acked if e is None] + [
            (cid2, pe.producer_id, pe.epoch, f.value.partition, f.value.offset) for f in futures]:
        per_tp[(cid_, pid_, epoch_, part)] = per_tp.get((cid_, pid_, epoch_, part), 0) + 1
    truth.doc["sequences"] = [
        {"client_id": c, "producer_id": p, "producer_epoch": e, "topic": TOPIC, "partition": part,
         "first_sequence": 0, "last_sequence": n - 1}
        for (c, p, e, part), n in sorted(per_tp.items())]
