"""KIP-932 share group on librdkafka's mock: three share consumers on one partition, explicit ACCEPT/RELEASE/REJECT.

Released records are acquired again with a higher delivery count (2, then 3 for some), rejected ones are archived;
one consumer acknowledges through ShareAcknowledge (commit_sync), the others piggyback acks on their next ShareFetch.
"""

from __future__ import annotations

import random

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import CONFLUENT, delivery_recorder, payload
from kafkatap.samples.workloads.member import share_fences

SPEC = Spec(
    name="share_group",
    description="librdkafka mock: share consumers kt-share-1..3 (group kt-share, explicit acknowledgement) read "
                "topic `tasks` (1 partition) together; every 5th record is released once (every 10th twice), "
                "every 7th rejected, every 30th (from 3) released on every delivery until the delivery limit (4) "
                "archives it, the rest accepted; kt-share-3 commits its acks with ShareAcknowledge.",
    mock_brokers=1,
)
TOPIC, GROUP, RECORDS = "tasks", "kt-share", 120
MAX_DELIVERY_ATTEMPTS = 4  # group.share.delivery.count.limit of the mock group
ACK_NAMES = {AcknowledgeType.ACCEPT: "accept", AcknowledgeType.RELEASE: "release", AcknowledgeType.REJECT: "reject"}


def is_poison(index: int) -> bool:
    return index % 30 == 3


def ack_for(index: int, delivery_count: int) -> AcknowledgeType:
    """The scripted fate of record `index` on its n-th delivery (poison records are released every time)."""
    if is_poison(index):
        return AcknowledgeType.RELEASE
    if index % 7 == 0:
        return AcknowledgeType.REJECT
    if index % 10 == 0 and delivery_count <= 2:
        return AcknowledgeType.RELEASE
    if index % 5 == 0 and delivery_count == 1:
        return AcknowledgeType.RELEASE
    return AcknowledgeType.ACCEPT


def record_share_fences(env: Env, client_ids: list[str], members: list[str]) -> None:
    """The manual assignment bumps every member's epoch on the mock; a member whose next heartbeat still carries
    its old epoch is fenced. Its id was among the group's members then, so the answer is FENCED_MEMBER_EPOCH
    (UNKNOWN_MEMBER_ID is for members the broker no longer knows)."""
    t0_wall = env.truth.t0_wall
    for cid in client_ids:
        for fence in share_fences(env.log.log_lines.get(cid, [])):
            known = fence["member_id"] in members
            env.truth.fenced("share_group", "FENCED_MEMBER_EPOCH" if known else "UNKNOWN_MEMBER_ID", cid,
                             group_id=fence["group_id"], member_id=fence["member_id"],
                             detail=f"ShareGroupHeartbeat at stale epoch {fence['member_epoch']} after the mock's "
                                    "manual target assignment bumped member epochs; the client logged 'member "
                                    "fenced - rejoining' and rejoined at epoch 0",
                             t=round(fence["wall"] - t0_wall, 3))


def run(env: Env) -> None:
    truth, log, mock = env.truth, env.log, env.mock
    mock.create_topic(TOPIC, 1)
    mock.set_share_group(max_delivery_attempts=MAX_DELIVERY_ATTEMPTS, heartbeat_interval_ms=1000,
                         session_timeout_ms=10000)
    truth.topic(TOPIC, 1)
    rng = random.Random(6)

    consumers: list[tuple[str, ShareConsumer]] = []
    for n in (1, 2, 3):
        cid = truth.client(f"kt-share-{n}", CONFLUENT, "share consumer", **{"group.id": GROUP,
                                                                          "share.acknowledgement.mode": "explicit"})
        c = ShareConsumer({"bootstrap.servers": mock.bootstrap, "group.id": GROUP,
                           "share.acknowledgement.mode": "explicit", **log.librdkafka(cid, group_debug=True)})
        c.subscribe([TOPIC])
        consumers.append((cid, c))
    # Records must be produced after the share consumers subscribed (the mock starts share partitions at the end).
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

    pid = truth.client("kt-producer-1", CONFLUENT, "producer", **{"linger.ms": 5})
    producer = Producer({"bootstrap.servers": mock.bootstrap, "linger.ms": 5, **log.librdkafka(pid)})
    errors: list = []
    on_delivery = delivery_recorder(truth, pid, errors)
    for i in range(RECORDS):
        producer.produce(TOPIC, key=str(i).encode(), value=payload(rng, 100), partition=0, on_delivery=on_delivery)
    producer.flush(10)
    producer.poll(0.2)
    del producer
    if errors:
        raise RuntimeError(f"produce errors: {errors}")
    truth.event(pid, "produced", records=RECORDS)

    finished: set[int] = set()
    archived: list[dict] = []
    for _round in range(300):
        if len(finished) >= RECORDS:
            break
        for cid, c in consumers:
            for msg in c.poll(0.1):
                if msg.error():
                    truth.event(cid, "share_error", error_name=msg.error().name())
                    continue
                index, count = int(msg.key()), msg.delivery_count()
                ack = ack_for(index, count)
                c.acknowledge(msg, ack)
                truth.share_delivery(cid, GROUP, msg.topic(), msg.partition(), msg.offset(), count, ACK_NAMES[ack])
                if ack != AcknowledgeType.RELEASE:
                    finished.add(index)
                elif count >= MAX_DELIVERY_ATTEMPTS:  # the broker archives it: it is never delivered again
                    finished.add(index)
                    archived.append({"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
                                     "delivery_count": count})
            if cid == "kt-share-3":
                c.commit_sync(10)
    for cid, c in consumers:
        c.close()
        truth.event(cid, "closed")
    if len(finished) < RECORDS:
        raise RuntimeError(f"only {len(finished)} of {RECORDS} records were accepted, rejected or archived")
    redelivered = [d for d in truth.doc["share_deliveries"]
                   if any(a["offset"] == d["offset"] for a in archived) and d["delivery_count"] > MAX_DELIVERY_ATTEMPTS]
    if redelivered:
        raise RuntimeError(f"records delivered beyond the delivery limit: {redelivered}")
    truth.doc["share_archived"] = archived
    truth.note(f"Share group delivery limit {MAX_DELIVERY_ATTEMPTS} "
               "(rd_kafka_mock_sharegroup_set_max_delivery_attempts):"
               " records released on their last allowed delivery are archived by the broker and never delivered again"
               " (`share_archived`).")
