"""KIP-932 share group on Apache Kafka 4.4 with the Java reference client (samples/java/ShareMember.java): two
KafkaShareConsumers in explicit acknowledgement mode on one partition, the broker's acquisition lock shortened to
8 s and its delivery count limit to 3 (broker configs: share groups are on by the share.version feature the storage
is formatted with, samples/kafka.py).

Phase 1: offsets 0-9 go to kt-s44-1, alone in the group yet, which holds offset 0 unacknowledged past its lock;
kt-s44-2 joins meanwhile, gets it as delivery 2 and accepts it; the holder's late ACCEPT then finds the record
acknowledged by the other member, and the broker answers it without an error (the commit's result and the
acknowledgement commit callback say so).
Phase 2: offsets 10-19; 12 is released once then accepted, 14 rejected, 16 released on every delivery until the
limit archives it. Phase 3: offsets 20-29, all accepted, acquired above offset 16, which never comes back.
The truth is the members' own account: each record's deliveryCount(), the acknowledgement sent, what commitSync
returned, what the callback was told, and the group's configs as the first member's Admin described them.
"""

from __future__ import annotations

import time

from kafkatap.samples.javaclients import LIBRARY, JavaClient, JavaClients, producing, record
from kafkatap.samples.make import Env, Spec

LOCK_MS, DELIVERY_LIMIT, HOLD_MS = 8000, 3, 12000
"""The lock gives the other member time to start and join while the holder sleeps; the hold outlasts the lock, the
other member's delivery 2 and its acknowledgement."""
HOLDER_MIN_BYTES = 1 << 20
"""The holder's client goes on fetching while its application sleeps: a fetch of its own, parked at the broker when the
lock runs out, took the record back as delivery 2 in a third of the runs on a loaded machine (then that lock ran out
too: delivery 3 went to the other member). Its fetches wait for a MiB or their 500 ms instead, so the other
member's, which the broker completes at once, take it."""
SPEC = Spec(
    name="kafka44_share_group",
    description="Apache Kafka 4.4, Java clients: share consumers kt-s44-1/2 (group kt-share44, explicit "
                f"acknowledgement; broker acquisition lock {LOCK_MS} ms, delivery count limit {DELIVERY_LIMIT}) on "
                "topic `tasks` (1 partition). Offset 0 is held past its lock and goes to the other member, which "
                "joined meanwhile, as delivery 2 (the holder's late accept is answered without an error); 12 is "
                "released once, 14 rejected, 16 released until the limit archives it; 20-29 are acquired above it.",
    kafka_port=19442,
    kafka_config=(("group.share.record.lock.duration.ms", LOCK_MS), ("group.share.min.record.lock.duration.ms", 1000),
                  ("group.share.delivery.count.limit", DELIVERY_LIMIT)),
)
TOPIC, GROUP = "tasks", "kt-share44"
HELD, RELEASED, REJECTED, POISON = 0, 12, 14, 16
FATES = f"{RELEASED}:release,{REJECTED}:reject,{POISON}:poison"  # the holder's adds {HELD}:hold
WAIT = 30.0  # bound on any one step (a JVM starting, records arriving)


def run(env: Env) -> None:
    truth, kafka = env.truth, env.kafka
    truth.topic(TOPIC, 1)
    truth.note(f"Apache Kafka 4.4 (one KRaft node, share.version 2): group.share.record.lock.duration.ms={LOCK_MS}, "
               f"group.share.delivery.count.limit={DELIVERY_LIMIT}: broker settings; the group's share configs as the "
               "broker described them to kt-s44-1-admin are the event `group_configs` (DescribeConfigs, in the "
               "capture). The group's share.auto.offset.reset is set to earliest first (IncrementalAlterConfigs).")
    clients = JavaClients(env.workdir / "clients")
    start, programs = clients.start, clients.programs
    truth.client("kt-producer", LIBRARY, "producer", **{"linger.ms": 5})
    truth.client("kt-producer-admin", LIBRARY, "admin")  # creates the topic
    producer = start("SampleProducer", "kt-producer", [kafka.bootstrap, "kt-producer", TOPIC, "1", "1"])
    produce = producing(producer, "kt-producer", truth, WAIT)

    def member(client_id: str, fates: str, *extra: str) -> JavaClient:
        truth.client(client_id, LIBRARY, "share consumer", **{"group.id": GROUP,
                                                             "share.acknowledgement.mode": "explicit"})
        return start("ShareMember", client_id, [f"bootstrap={kafka.bootstrap}", f"client.id={client_id}",
                                                f"group.id={GROUP}", f"topic={TOPIC}", f"fates={fates}",
                                                f"hold.ms={HOLD_MS}", "max.seconds=120", *extra])

    try:
        producer.wait_for("topic_created", WAIT)
        truth.client("kt-s44-1-admin", LIBRARY, "admin")  # sets and describes the group's configs
        members = [member("kt-s44-1", f"{HELD}:hold,{FATES}", "configure.group=true",
                          f"fetch.min.bytes={HOLDER_MIN_BYTES}")]
        members[0].wait_for("group_configs", WAIT)
        members[0].wait_for("started", WAIT)
        time.sleep(3)  # joined: the partition is assigned to it

        produce(10)  # offsets 0-9, all the holder's
        members[0].wait_for("holding", WAIT)
        members.append(member("kt-s44-2", FATES))
        _until(members, lambda d: any(e["offset"] == HELD and e["delivery_count"] == 2 for e in d)
               and any(e["what"] == "late_commit" for m in members for e in m.events))
        produce(10)  # offsets 10-19
        _until(members, lambda d: sum(e["offset"] == POISON for e in d) == DELIVERY_LIMIT
               and {e["offset"] for e in d if e["ack"] in ("accept", "reject")} >= set(range(10, 20)) - {POISON})
        produce(10)  # offsets 20-29: acquired above the archived poison record
        _until(members, lambda d: {e["offset"] for e in d} >= set(range(20, 30)))
        time.sleep(1)  # the last acknowledgements reach the broker with the members' next fetch
        for m in members:
            m.stop()
        producer.stop()
    finally:
        for program in programs:
            program.kill()
    _record(env, programs)


def _delivered(members: list[JavaClient]) -> list[dict]:
    return [e for m in members for e in list(m.events) if e["what"] == "delivered"]


def _until(members: list[JavaClient], done, timeout: float = WAIT) -> None:
    """Until `done(deliveries so far)` holds (the members poll on their own)."""
    deadline = time.monotonic() + timeout
    while not done(_delivered(members)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"share members stuck; deliveries: {_delivered(members)[-10:]}")
        time.sleep(0.1)


def _record(env: Env, programs: list[JavaClient]) -> None:
    """The programs' JSON lines and logs into the truth, and every delivery, in the order the members were handed
    them, with the acknowledgement sent for it (a held record's: its late one)."""
    truth = env.truth
    record(truth, env.log, programs, {})
    events = sorted((e for p in programs for e in p.events), key=lambda e: e["wall"])
    late = {(e["client_id"], e["topic"], e["partition"], e["offset"]): e["ack"]
            for e in events if e["what"] == "late_ack"}
    counts: dict[int, int] = {}
    for e in (e for e in events if e["what"] == "delivered"):
        ack = e["ack"] or late.get((e["client_id"], e["topic"], e["partition"], e["offset"]))
        truth.share_delivery(e["client_id"], GROUP, e["topic"], e["partition"], e["offset"], e["delivery_count"], ack)
        counts[e["offset"]] = max(counts.get(e["offset"], 0), e["delivery_count"])
    if counts.get(POISON) != DELIVERY_LIMIT:
        raise RuntimeError(f"offset {POISON} reached delivery {counts.get(POISON)}, not the limit {DELIVERY_LIMIT}")
    truth.doc["share_archived"] = [{"topic": TOPIC, "partition": 0, "offset": POISON, "delivery_count": DELIVERY_LIMIT}]
    truth.note(f"Offset {POISON} released on every delivery: at its delivery {DELIVERY_LIMIT} the broker archived it "
               "(`share_archived`) and it was never delivered again, though offsets 20-29 were acquired after it.")
