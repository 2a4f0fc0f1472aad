"""Transactional producers on Tansu: commits, an abort, and a zombie fenced by a newer producer with its id."""

from __future__ import annotations

import random

import kafka.errors as Errors
from confluent_kafka import KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import CONFLUENT, KAFKA_PYTHON, eos_stats, payload, until

SPEC = Spec(
    name="transactions",
    description="Tansu: kafka-python producer kt-txn-producer-1 (transactional.id kt-txn-1) commits, aborts and "
                "commits; kt-txn-producer-2 re-initialises kt-txn-1, bumping the epoch, and the first producer's next "
                "transaction is fenced; a confluent-kafka transactional producer commits and aborts on its own id; "
                "read_committed and read_uncommitted consumers read everything back.",
    tansu_port=19030,
)
TOPIC, PARTITIONS = "transfers", 2


class _Txn:
    """Writes one transaction's records into the truth once its outcome is known."""

    def __init__(self, env: Env, client_id: str, txn_id: str, pid: int, epoch: int) -> None:
        self.env, self.client_id, self.txn_id, self.pid, self.epoch = env, client_id, txn_id, pid, epoch
        self.done: list[tuple[str, int, int]] = []

    def record(self, outcome: str, acks: list[tuple[str, int, int]]) -> None:
        for topic, part, off in acks:
            self.env.truth.produced(self.client_id, topic, part, off, producer_id=self.pid, producer_epoch=self.epoch,
                                    transactional_id=self.txn_id, outcome=outcome)
        self.env.truth.doc.setdefault("transactions", []).append({
            "client_id": self.client_id, "transactional_id": self.txn_id, "producer_id": self.pid,
            "producer_epoch": self.epoch, "outcome": outcome, "records": len(acks)})
        self.env.truth.event(self.client_id, f"transaction_{outcome}", records=len(acks))


def _kp_transaction(env: Env, producer: KafkaProducer, txn: _Txn, n: int, rng: random.Random, commit: bool) -> None:
    producer.begin_transaction()
    futures = [producer.send(TOPIC, key=f"k{i}".encode(), value=payload(rng, 100), partition=i % PARTITIONS)
               for i in range(n)]
    producer.flush(10)
    acks = [(md.topic, md.partition, md.offset) for md in (f.get(10) for f in futures)]
    if commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()
    txn.record("committed" if commit else "aborted", acks)


def run(env: Env) -> None:
    truth, log, bootstrap = env.truth, env.log, env.tansu.bootstrap
    rng = random.Random(3)
    admin_id = truth.client("kt-admin", KAFKA_PYTHON, "admin")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=admin_id)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    truth.topic(TOPIC, PARTITIONS)

    txn_id = "kt-txn-1"
    a_id = truth.client("kt-txn-producer-1", KAFKA_PYTHON, "transactional producer", transactional_id=txn_id)
    a = KafkaProducer(bootstrap_servers=bootstrap, client_id=a_id, transactional_id=txn_id)
    a.init_transactions()
    pe = a._transaction_manager.producer_id_and_epoch
    truth.producer(a_id, pe.producer_id, pe.epoch, txn_id)
    a_txn = _Txn(env, a_id, txn_id, pe.producer_id, pe.epoch)
    _kp_transaction(env, a, a_txn, 20, rng, commit=True)
    _kp_transaction(env, a, a_txn, 10, rng, commit=False)
    _kp_transaction(env, a, a_txn, 10, rng, commit=True)

    b_id = truth.client("kt-txn-producer-2", KAFKA_PYTHON, "transactional producer", transactional_id=txn_id)
    b = KafkaProducer(bootstrap_servers=bootstrap, client_id=b_id, transactional_id=txn_id)
    b.init_transactions()
    pe_b = b._transaction_manager.producer_id_and_epoch
    truth.producer(b_id, pe_b.producer_id, pe_b.epoch, txn_id)
    truth.event(b_id, "init_transactions", producer_id=pe_b.producer_id, producer_epoch=pe_b.epoch)

    try:  # the zombie: its epoch is stale now
        a.begin_transaction()
        zombie = a.send(TOPIC, key=b"zombie", value=payload(rng, 100), partition=0)
        a.flush(10)
        zombie.get(10)
        a.commit_transaction()
        raise RuntimeError("the zombie producer was not fenced")
    except Errors.KafkaError as exc:
        error_name = getattr(exc, "message", type(exc).__name__)
        truth.fenced("producer", error_name, a_id, transactional_id=txn_id, producer_id=pe.producer_id,
                     detail=f"stale epoch {pe.epoch} after {b_id} re-initialised {txn_id} at epoch {pe_b.epoch}")
    _kp_transaction(env, b, _Txn(env, b_id, txn_id, pe_b.producer_id, pe_b.epoch), 8, rng, commit=True)
    for p in (a, b):
        try:
            p.close(3)
        except Errors.KafkaError:
            pass

    c_txn_id = "kt-txn-2"
    c_id = truth.client("kt-txn-producer-3", CONFLUENT, "transactional producer", **{"transactional.id": c_txn_id})
    eos, stats_conf = eos_stats()
    c = Producer({"bootstrap.servers": bootstrap, "transactional.id": c_txn_id, "linger.ms": 5,
                  **stats_conf, **log.librdkafka(c_id)})
    c.init_transactions(15)
    until(lambda: c.poll(0.05) is not None and eos.get("producer_id", -1) >= 0, 3)
    c_pid, c_epoch = eos.get("producer_id", -1), eos.get("producer_epoch", -1)
    truth.producer(c_id, c_pid, c_epoch, c_txn_id)
    for commit, n in ((True, 12), (False, 6)):
        c.begin_transaction()
        acks: list = []
        for i in range(n):
            c.produce(TOPIC, key=f"c{i}".encode(), value=payload(rng, 90), partition=i % PARTITIONS,
                      on_delivery=lambda err, msg: acks.append((err, msg.topic(), msg.partition(), msg.offset())))
        c.flush(10)
        try:
            (c.commit_transaction if commit else c.abort_transaction)(15)
        except KafkaException as exc:
            raise RuntimeError(f"{c_id}: {exc}") from exc
        if any(err for err, *_ in acks):
            raise RuntimeError(f"{c_id}: delivery errors {acks}")
        _Txn(env, c_id, c_txn_id, c_pid, c_epoch).record("committed" if commit else "aborted", [a[1:] for a in acks])
    c.poll(0.3)
    del c

    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    isolation: dict = {}
    for level, cid in (("read_committed", "kt-consumer-rc"), ("read_uncommitted", "kt-consumer-ru")):
        truth.client(cid, KAFKA_PYTHON, "consumer", isolation_level=level, assign=[f"{TOPIC}/{p}" for p in range(2)])
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=cid, group_id=None, isolation_level=level,
                                 enable_auto_commit=False)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        values = 0

        def read() -> bool:
            nonlocal values
            for msgs in consumer.poll(timeout_ms=200).values():
                for m in msgs:
                    truth.consumed(cid, None, "none", m.topic, m.partition, m.offset)
                    values += 1
            return all(consumer.position(tp) >= end[tp] for tp in tps)

        if not until(read, 20):
            raise RuntimeError(f"{cid} did not reach the end offsets {end}")
        consumer.close()
        isolation[level] = values
    truth.doc["isolation"] = {"records_received": isolation}
    aborted = sum(t["records"] for t in truth.doc["transactions"] if t["outcome"] == "aborted")
    if isolation["read_committed"] > isolation["read_uncommitted"] - aborted:
        truth.note("Tansu's Fetch responses list no aborted transactions, so read_committed consumers receive "
                   "aborted records too (Apache Kafka would filter them): `consumed` records what the clients got.")
