"""KIP-932 record locks on librdkafka's mock: a held record's lock runs out, a poison record is archived.

Phase 1: kt-lock-1 takes offsets 0-9 (delivery 1), accepts 1-9 and holds 0 without acknowledging it and without
polling; offset 0 pins the share-partition start offset while 1-9 are acknowledged. The mock's lock
(rd_kafka_mock_sharegroup_set_record_lock_duration, LOCK_MS) runs out and kt-lock-2 gets offset 0 again
(delivery 2) and accepts it; kt-lock-1 then closes, never having acknowledged it.
Phase 2: offsets 10-19; kt-lock-2 releases 13 on every delivery until the delivery limit (3) archives it.
Phase 3: offsets 20-29, all accepted: the partition is acquired above offset 13, which never comes back.
"""

from __future__ import annotations

import random
import time

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import CONFLUENT, delivery_recorder, payload
from kafkatap.samples.workloads.share_group import ACK_NAMES, record_share_fences

SPEC = Spec(
    name="share_locks",
    description="librdkafka mock: share consumers kt-lock-1/2 (group kt-locks, explicit acknowledgement, record "
                "lock 2 s, delivery limit 3) on topic `jobs` (1 partition). kt-lock-1 accepts offsets 1-9 and holds "
                "offset 0 unacknowledged past its lock (pinning the SPSO); the lock expires and kt-lock-2 gets it as "
                "delivery 2 and accepts it. Then offset 13 is released on every delivery until the limit archives "
                "it, and offsets 20-29 are consumed after it.",
    mock_brokers=1,
)
TOPIC, GROUP = "jobs", "kt-locks"
LOCK_MS, MAX_DELIVERY_ATTEMPTS = 2000, 3
HELD, POISON = 0, 13


def _produce(producer: Producer, rng: random.Random, first: int, last: int) -> None:
    for i in range(first, last + 1):
        producer.produce(TOPIC, key=str(i).encode(), value=payload(rng, 100), partition=0)
    producer.flush(10)


def run(env: Env) -> None:
    truth, log, mock = env.truth, env.log, env.mock
    mock.create_topic(TOPIC, 1)
    mock.set_share_group(max_delivery_attempts=MAX_DELIVERY_ATTEMPTS, record_lock_duration_ms=LOCK_MS,
                         heartbeat_interval_ms=1000, session_timeout_ms=30000)
    truth.topic(TOPIC, 1)
    rng = random.Random(32)

    consumers: list[tuple[str, ShareConsumer]] = []
    for n in (1, 2):
        cid = truth.client(f"kt-lock-{n}", CONFLUENT, "share consumer", **{"group.id": GROUP,
                                                                         "share.acknowledgement.mode": "explicit"})
        c = ShareConsumer({"bootstrap.servers": mock.bootstrap, "group.id": GROUP,
                           "share.acknowledgement.mode": "explicit", **log.librdkafka(cid, group_debug=True)})
        c.subscribe([TOPIC])
        consumers.append((cid, c))
    (cid1, c1), (cid2, c2) = consumers
    members: list[str] = []
    for _ in range(50):
        for _cid, c in consumers:
            c.poll(0.1)
        members = mock.share_group_members(GROUP)
        if len(members) == len(consumers):
            break
    if len(members) != len(consumers):
        raise RuntimeError(f"share group has members {members}")
    mock.share_assign(GROUP, members, TOPIC, [0])
    truth.event("", "share_assignment", members=len(members), partitions=[f"{TOPIC}/0"])
    env.after_run.append(lambda: record_share_fences(env, [cid for cid, _ in consumers], members))
    for _ in range(10):
        for _cid, c in consumers:
            c.poll(0.1)
    # Let the long-polling ShareFetch requests of the joining rounds come back empty: a fetch still waiting at the
    # broker when the records arrive would hand them to a consumer that is not polling.
    time.sleep(2.0)

    pid = truth.client("kt-producer-1", CONFLUENT, "producer", **{"linger.ms": 5})
    errors: list = []
    producer = Producer({"bootstrap.servers": mock.bootstrap, "linger.ms": 5, **log.librdkafka(pid),
                         "on_delivery": delivery_recorder(truth, pid, errors)})

    def deliver(cid: str, c: ShareConsumer, ack_of) -> list[tuple[int, int]]:
        """One poll: acknowledge each record as `ack_of(offset, count)` says (None: hold it) and record it."""
        seen = []
        for msg in c.poll(0.2):
            if msg.error():
                truth.event(cid, "share_error", error_name=msg.error().name())
                continue
            off, count = msg.offset(), msg.delivery_count()
            ack = ack_of(off, count)
            if ack is not None:
                c.acknowledge(msg, ack)
            truth.share_delivery(cid, GROUP, msg.topic(), msg.partition(), off, count, ACK_NAMES.get(ack))
            seen.append((off, count))
        return seen

    # Phase 1: kt-lock-1 holds offset 0 past its lock.
    _produce(producer, rng, 0, 9)
    truth.event(pid, "produced", records=10, first_offset=0, last_offset=9)
    got: list[tuple[int, int]] = []
    for _ in range(50):
        got = deliver(cid1, c1, lambda off, _n: None if off == HELD else AcknowledgeType.ACCEPT)
        if got:
            break
    if (HELD, 1) not in got:
        raise RuntimeError(f"{cid1} did not get offset {HELD} first: {got}")
    c1.commit_sync(10)
    held_at = time.monotonic()
    truth.event(cid1, "holding", topic=TOPIC, partition=0, offset=HELD, lock_ms=LOCK_MS,
                acknowledged=[o for o, _ in got if o != HELD])
    redelivered = None
    deadline = time.monotonic() + 15
    while redelivered is None and time.monotonic() < deadline:
        for off, count in deliver(cid2, c2, lambda _o, _n: AcknowledgeType.ACCEPT):
            if off == HELD:
                redelivered = count
        c2.commit_sync(10)
    if redelivered != 2:
        raise RuntimeError(f"offset {HELD} came back to {cid2} as delivery {redelivered}")
    truth.event(cid2, "lock_expired_redelivery", offset=HELD, delivery_count=redelivered,
                after_s=round(time.monotonic() - held_at, 3))
    c1.close()  # still holding offset 0, which it never acknowledged
    truth.event(cid1, "closed", unacknowledged=[HELD])

    # Phase 2: offset 13 is released on every delivery until the delivery limit archives it.
    _produce(producer, rng, 10, 19)
    truth.event(pid, "produced", records=10, first_offset=10, last_offset=19)

    def phase2(off: int, _count: int) -> AcknowledgeType:
        return AcknowledgeType.RELEASE if off == POISON else AcknowledgeType.ACCEPT

    done: set[int] = set()
    poison_counts: list[int] = []
    deadline = time.monotonic() + 20
    while (len(done) < 10 or len(poison_counts) < MAX_DELIVERY_ATTEMPTS) and time.monotonic() < deadline:
        for off, count in deliver(cid2, c2, phase2):
            if off == POISON:
                poison_counts.append(count)
            done.add(off)
        c2.commit_sync(10)
    if poison_counts != list(range(1, MAX_DELIVERY_ATTEMPTS + 1)):
        raise RuntimeError(f"offset {POISON} deliveries {poison_counts}")

    # Phase 3: more records; offset 13 must not come back.
    _produce(producer, rng, 20, 29)
    truth.event(pid, "produced", records=10, first_offset=20, last_offset=29)
    done = set()
    deadline = time.monotonic() + 15
    while len(done) < 10 and time.monotonic() < deadline:
        for off, count in deliver(cid2, c2, lambda _o, _n: AcknowledgeType.ACCEPT):
            if off == POISON:
                raise RuntimeError(f"offset {POISON} delivered again (delivery {count}) past the limit")
            done.add(off)
        c2.commit_sync(10)
    if done != set(range(20, 30)):
        raise RuntimeError(f"phase 3 got {sorted(done)}")
    producer.poll(0.2)
    del producer
    if errors:
        raise RuntimeError(f"produce errors: {errors}")
    c2.close()
    truth.event(cid2, "closed")
    truth.doc["share_archived"] = [{"topic": TOPIC, "partition": 0, "offset": POISON,
                                    "delivery_count": MAX_DELIVERY_ATTEMPTS}]
    truth.note(f"Record lock {LOCK_MS} ms (rd_kafka_mock_sharegroup_set_record_lock_duration): the mock states it as "
               "acquisition_lock_timeout_ms and, once it runs out, hands the unacknowledged record to the next "
               "ShareFetch with its delivery count raised. A held delivery has `ack` null in `share_deliveries`.")
    truth.note(f"Share group delivery limit {MAX_DELIVERY_ATTEMPTS} "
               "(rd_kafka_mock_sharegroup_set_max_delivery_attempts): a record released on its last allowed delivery "
               "is archived and never delivered again (`share_archived`); no request in the capture states the limit.")
