"""A mixed day on two clusters at once: everything the other samples do, concurrently, in one capture.

Tansu carries compressed producers, an idempotent producer, transactions with a zombie, and a classic group whose
members come and go; the librdkafka mock (3 brokers) carries a KIP-848 group (one heartbeat is answered
FENCED_MEMBER_EPOCH on purpose, through the mock's error injection) and a share group with releases.
"""

from __future__ import annotations

import random
import threading
import time

import kafka.errors as Errors
from confluent_kafka import AcknowledgeType, Consumer, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import (CONFLUENT, KAFKA_PYTHON, TANSU_SESSION_TIMEOUT_MS, delivery_recorder,
                                               payload)
from kafkatap.samples.workloads.member import member_epochs
from kafkatap.samples.workloads.share_group import record_share_fences

SPEC = Spec(
    name="day_in_the_life",
    description="Tansu and a 3-broker librdkafka mock at once for ~25 s: lz4/zstd producers, an idempotent and two "
                "transactional producers (one fenced as a zombie), a classic group whose second member joins and "
                "leaves, a KIP-848 group with one injected FENCED_MEMBER_EPOCH, and a share group releasing records.",
    tansu_port=19070,
    mock_brokers=3,
)
DURATION = 25.0
FENCED_MEMBER_EPOCH, CONSUMER_GROUP_HEARTBEAT = 110, 68
TANSU_TOPICS = {"day-orders": 3, "day-ledger": 2}
MOCK_TOPICS = {"day-metrics": 4, "day-tasks": 1}


class Day:
    """Shared clock and stop flag for the workload threads, and the errors any of them met."""

    def __init__(self, env: Env) -> None:
        self.env, self.truth, self.log = env, env.truth, env.log
        self.stop = threading.Event()
        self.start = time.monotonic()
        self.failures: list[str] = []

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def guard(self, name: str, fn, *args) -> threading.Thread:
        def body() -> None:
            try:
                fn(*args)
            except Exception as exc:  # a thread's failure must fail the sample, not vanish
                self.failures.append(f"{name}: {type(exc).__name__}: {exc}")
                self.stop.set()
        thread = threading.Thread(target=body, name=name, daemon=True)
        thread.start()
        return thread


def _confluent_producer(day: Day, cid: str, bootstrap: str, topics: dict[str, int], codec: str, rate: float,
                        seed: int) -> None:
    day.truth.client(cid, CONFLUENT, "producer", **{"compression.type": codec, "linger.ms": 200})
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 200,
                         **day.log.librdkafka(cid)})
    rng, errors = random.Random(seed), []
    on_delivery = delivery_recorder(day.truth, cid, errors, compression=codec)
    i = 0
    while not day.stop.is_set():
        for topic, parts in topics.items():
            producer.produce(topic, key=f"{cid}-{i}".encode(), value=payload(rng, rng.randrange(60, 300)),
                             partition=i % parts, on_delivery=on_delivery)
        i += 1
        producer.poll(1 / rate)
    producer.flush(15)
    producer.poll(0.1)
    if errors:
        raise RuntimeError(f"delivery errors {errors[:3]}")


def _idempotent_producer(day: Day, bootstrap: str) -> None:
    cid = day.truth.client("kt-day-idem", KAFKA_PYTHON, "producer", enable_idempotence=True, linger_ms=10)
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=cid, enable_idempotence=True, linger_ms=10)
    rng, futures = random.Random(71), []
    while not day.stop.is_set():
        futures += [producer.send("day-ledger", key=f"acct-{k}".encode(), value=payload(rng, 120), partition=k % 2)
                    for k in range(4)]
        time.sleep(1.0)
    producer.flush(10)
    pe = producer._transaction_manager.producer_id_and_epoch
    day.truth.producer(cid, pe.producer_id, pe.epoch)
    for f in futures:
        md = f.get(10)
        day.truth.produced(cid, md.topic, md.partition, md.offset, producer_id=pe.producer_id,
                           producer_epoch=pe.epoch)
    producer.close(5)


def _transactions(day: Day, bootstrap: str) -> None:
    """kt-day-txn-1 commits, aborts every third transaction; half-way kt-day-txn-2 takes its transactional id."""
    txn_id, rng = "kt-day-txn", random.Random(72)

    def open_producer(cid: str) -> tuple[KafkaProducer, object]:
        day.truth.client(cid, KAFKA_PYTHON, "transactional producer", transactional_id=txn_id)
        producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=cid, transactional_id=txn_id)
        producer.init_transactions()
        pe = producer._transaction_manager.producer_id_and_epoch
        day.truth.producer(cid, pe.producer_id, pe.epoch, txn_id)
        return producer, pe

    def transaction(cid: str, producer: KafkaProducer, pe, n: int) -> None:
        commit = n % 3 != 2
        producer.begin_transaction()
        futures = [producer.send("day-ledger", key=b"txn", value=payload(rng, 90), partition=k % 2)
                   for k in range(5)]
        producer.flush(10)
        acks = [f.get(10) for f in futures]
        (producer.commit_transaction if commit else producer.abort_transaction)()
        outcome = "committed" if commit else "aborted"
        for md in acks:
            day.truth.produced(cid, md.topic, md.partition, md.offset, producer_id=pe.producer_id,
                               producer_epoch=pe.epoch, transactional_id=txn_id, outcome=outcome)
        day.truth.doc.setdefault("transactions", []).append({
            "client_id": cid, "transactional_id": txn_id, "producer_id": pe.producer_id,
            "producer_epoch": pe.epoch, "outcome": outcome, "records": len(acks)})

    first, pe1 = open_producer("kt-day-txn-1")
    n = 0
    while day.elapsed() < DURATION / 2 and not day.stop.is_set():
        transaction("kt-day-txn-1", first, pe1, n)
        n += 1
        time.sleep(1.5)
    second, pe2 = open_producer("kt-day-txn-2")
    day.truth.event("kt-day-txn-2", "init_transactions", producer_id=pe2.producer_id, producer_epoch=pe2.epoch)
    try:
        transaction("kt-day-txn-1", first, pe1, 0)
        raise RuntimeError("the zombie transactional producer was not fenced")
    except Errors.KafkaError as exc:
        day.truth.fenced("producer", getattr(exc, "message", type(exc).__name__), "kt-day-txn-1",
                         transactional_id=txn_id, producer_id=pe1.producer_id,
                         detail=f"epoch {pe1.epoch} superseded by kt-day-txn-2 at epoch {pe2.epoch}")
    while not day.stop.is_set():
        transaction("kt-day-txn-2", second, pe2, n)
        n += 1
        time.sleep(1.5)
    for producer in (first, second):
        try:
            producer.close(3)
        except Errors.KafkaError:
            pass


def _classic_member(day: Day, bootstrap: str, cid: str, start_at: float, leave_at: float) -> None:
    group = "kt-day-classic"
    day.truth.client(cid, KAFKA_PYTHON, "consumer", group_id=group, session_timeout_ms=TANSU_SESSION_TIMEOUT_MS,
                     enable_auto_commit=False)
    while day.elapsed() < start_at and not day.stop.is_set():
        time.sleep(0.1)
    consumer = KafkaConsumer("day-orders", bootstrap_servers=bootstrap, client_id=cid, group_id=group,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             session_timeout_ms=TANSU_SESSION_TIMEOUT_MS, heartbeat_interval_ms=1000)
    day.truth.event(cid, "subscribed", group_id=group)
    while day.elapsed() < leave_at and not day.stop.is_set():
        batches = consumer.poll(timeout_ms=200, max_records=25)
        for msgs in batches.values():
            for m in msgs:
                day.truth.consumed(cid, group, "classic_group", m.topic, m.partition, m.offset)
        if batches:
            try:
                consumer.commit()
            except Errors.KafkaError as exc:
                day.truth.event(cid, "commit_failed", error=type(exc).__name__)
    consumer.close()
    day.truth.event(cid, "left", group_id=group)


def _kip848_member(day: Day, bootstrap: str, cid: str) -> None:
    group = "kt-day-848"
    day.truth.client(cid, CONFLUENT, "consumer", **{"group.id": group, "group.protocol": "consumer"})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         **day.log.librdkafka(cid, group_debug=True)})
    consumer.subscribe(["day-metrics"])
    while not day.stop.is_set():
        msgs = [m for m in consumer.consume(25, 0.2) if not m.error()]
        for m in msgs:
            day.truth.consumed(cid, group, "consumer_group", m.topic(), m.partition(), m.offset())
        if msgs:
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as exc:
                day.truth.event(cid, "commit_failed", error_name=exc.args[0].name())
    consumer.close()


def _share_members(day: Day, bootstrap: str, consumers: list[tuple[str, ShareConsumer]]) -> None:
    group = "kt-day-share"
    while not day.stop.is_set():
        for cid, c in consumers:
            for msg in c.poll(0.5):
                if msg.error():
                    continue
                count = msg.delivery_count()
                ack = AcknowledgeType.RELEASE if int(msg.key().rsplit(b"-", 1)[1]) % 10 == 0 and count == 1 \
                    else AcknowledgeType.ACCEPT
                c.acknowledge(msg, ack)
                day.truth.share_delivery(cid, group, msg.topic(), msg.partition(), msg.offset(), count,
                                         "release" if ack == AcknowledgeType.RELEASE else "accept")
    for _ in range(20):  # let released records come back before closing
        for cid, c in consumers:
            for msg in c.poll(0.1):
                if not msg.error():
                    c.acknowledge(msg, AcknowledgeType.ACCEPT)
                    day.truth.share_delivery(cid, group, msg.topic(), msg.partition(), msg.offset(),
                                             msg.delivery_count(), "accept")
    for _cid, c in consumers:
        c.close()


def run(env: Env) -> None:
    truth, log, tansu, mock = env.truth, env.log, env.tansu, env.mock
    admin_id = truth.client("kt-day-admin", CONFLUENT, "admin")
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap, **log.librdkafka(admin_id)})
    for fut in admin.create_topics([NewTopic(t, n, 1) for t, n in TANSU_TOPICS.items()]).values():
        fut.result(15)
    admin.poll(0.2)
    for topic, parts in {**TANSU_TOPICS, **MOCK_TOPICS}.items():
        truth.topic(topic, parts)
    for topic, parts in MOCK_TOPICS.items():
        mock.create_topic(topic, parts)
    mock.set_consumer_group_timeouts(10000, 1000)
    mock.set_share_group(max_delivery_attempts=5, heartbeat_interval_ms=1000)
    truth.note("Tansu's Fetch responses list no aborted transactions (read_committed consumers would see aborted "
               "records); the KIP-848 fencing is injected with rd_kafka_mock_push_request_errors.")

    shares: list[tuple[str, ShareConsumer]] = []
    for n in (1, 2):
        cid = truth.client(f"kt-day-share-{n}", CONFLUENT, "share consumer", **{
            "group.id": "kt-day-share", "share.acknowledgement.mode": "explicit"})
        c = ShareConsumer({"bootstrap.servers": mock.bootstrap, "group.id": "kt-day-share",
                           "share.acknowledgement.mode": "explicit", **log.librdkafka(cid, group_debug=True)})
        c.subscribe(["day-tasks"])
        shares.append((cid, c))
    members: list[str] = []
    for _ in range(50):
        for _cid, c in shares:
            c.poll(0.1)
        members = mock.share_group_members("kt-day-share")
        if len(members) == len(shares):
            break
    mock.share_assign("kt-day-share", members, "day-tasks", [0])
    env.after_run.append(lambda: record_share_fences(env, [cid for cid, _ in shares], members))
    for _ in range(5):
        for _cid, c in shares:
            c.poll(0.1)

    day = Day(env)
    threads = [
        day.guard("share", _share_members, day, mock.bootstrap, shares),
        day.guard("p-lz4", _confluent_producer, day, "kt-day-producer-lz4", tansu.bootstrap,
                  {"day-orders": 3}, "lz4", 8, 1),
        day.guard("p-zstd", _confluent_producer, day, "kt-day-producer-zstd", tansu.bootstrap,
                  {"day-orders": 3}, "zstd", 6, 2),
        day.guard("p-mock", _confluent_producer, day, "kt-day-mock-producer", mock.bootstrap,
                  MOCK_TOPICS, "snappy", 5, 3),
        day.guard("idem", _idempotent_producer, day, tansu.bootstrap),
        day.guard("txn", _transactions, day, tansu.bootstrap),
        day.guard("classic-1", _classic_member, day, tansu.bootstrap, "kt-day-classic-1", 0.0, DURATION + 60),
        day.guard("classic-2", _classic_member, day, tansu.bootstrap, "kt-day-classic-2", 6.0, 18.0),
        day.guard("848-1", _kip848_member, day, mock.bootstrap, "kt-day-848-1"),
        day.guard("848-2", _kip848_member, day, mock.bootstrap, "kt-day-848-2"),
    ]
    while day.elapsed() < DURATION / 2 and not day.stop.is_set():
        time.sleep(0.1)
    injected_wall = time.time()
    mock.push_request_errors(CONSUMER_GROUP_HEARTBEAT, [FENCED_MEMBER_EPOCH])
    truth.event("", "injected_error", api="ConsumerGroupHeartbeat", error_name="FENCED_MEMBER_EPOCH")
    while day.elapsed() < DURATION and not day.stop.is_set():
        time.sleep(0.1)
    day.stop.set()
    for thread in threads:
        thread.join(60)
    if day.failures:
        raise RuntimeError("; ".join(day.failures))

    # which member's heartbeat took the injected error: the one that found itself fenced right after the injection
    # (read once the log is complete, at the end of the sample: see make.py)
    env.after_run.append(lambda: _record_injected_fence(env, injected_wall))


def _record_injected_fence(env: Env, injected_wall: float) -> None:
    t0_wall = env.truth.t0_wall
    epochs = {}
    for cid in ("kt-day-848-1", "kt-day-848-2"):
        epochs[cid], fenced = member_epochs(env.log.log_lines.get(cid, []))
        hit = [ts for ts in fenced if ts >= injected_wall - 0.5]
        if hit:
            env.truth.fenced("consumer_group", "FENCED_MEMBER_EPOCH", cid, group_id="kt-day-848",
                             member_id=epochs[cid][-1]["member_id"] if epochs[cid] else None,
                             detail="heartbeat answered FENCED_MEMBER_EPOCH by error injection; the member rejoined "
                                    "at epoch 0", t=round(hit[0] - t0_wall, 3))
            break
    env.truth.doc["groups"] = [{"group_id": "kt-day-848", "kind": "consumer_group", "member_epochs_by_member": epochs}]
