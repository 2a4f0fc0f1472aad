"""KIP-848 consumer group on Apache Kafka 4.4 with the Java reference client (samples/java/GroupMember.java): members
join and leave, one freezes (SIGSTOP, the whole JVM with its heartbeat thread) past the broker's session timeout and
is removed, a static member (group.instance.id) restarts within its session and keeps its partitions.

Every client is a Java program in its own JVM; what they saw (rebalance callbacks with member ids and epochs, offsets
each poll returned, commits and exceptions, acknowledged offsets) comes from their JSON lines, their requests and the
errors they were answered from their NetworkClient's debug log.
"""

from __future__ import annotations

import time

from kafkatap.samples.javaclients import (
    LIBRARY, JavaClient, JavaClients, fenced_after_freeze, producing, reached_epochs, record
)
from kafkatap.samples.kafka import HEARTBEAT_MS, SESSION_TIMEOUT_MS
from kafkatap.samples.make import Env, Spec

SPEC = Spec(
    name="kafka44_consumer_group",
    description="Apache Kafka 4.4, Java clients: KIP-848 consumers kt-j-1, kt-j-static (group.instance.id "
                "kt-static-1) and kt-j-3 (group kt-kafka44) share topic `metrics` (4 partitions); kt-j-3 freezes "
                "past the 6 s session timeout holding uncommitted records, which the others receive again; resumed, "
                "it is fenced and rejoins; kt-j-static restarts within its session; all leave.",
    kafka_port=19440,
)
TOPIC, PARTITIONS, GROUP = "metrics", 4, "kt-kafka44"
WAIT = 30.0  # bound on any one step (a JVM starting, an assignment arriving)


def run(env: Env) -> None:
    truth, kafka = env.truth, env.kafka
    truth.topic(TOPIC, PARTITIONS)
    truth.note(f"Apache Kafka 4.4 (one KRaft node): group.consumer.session.timeout.ms={SESSION_TIMEOUT_MS}, "
               f"group.consumer.heartbeat.interval.ms={HEARTBEAT_MS}, group.consumer.assignment.interval.ms 1000 "
               "(the default): broker settings, not on the wire.")
    clients = JavaClients(env.workdir / "clients")
    start, programs = clients.start, clients.programs

    def member(client_id: str, *extra: str) -> JavaClient:
        config = dict(arg.split("=", 1) for arg in extra)
        truth.client(client_id, LIBRARY, "consumer", **{"group.id": GROUP, "group.protocol": "consumer",
                                                        "enable.auto.commit": False, "max.poll.records": 10},
                     **config)
        program = start("GroupMember", client_id, [f"bootstrap={kafka.bootstrap}", f"client.id={client_id}",
                                                   f"group.id={GROUP}", f"topic={TOPIC}", "max.seconds=120", *extra])
        return program  # it says "started" itself

    truth.client("kt-producer", LIBRARY, "producer", **{"linger.ms": 5, "acks": "all", "enable.idempotence": True})
    truth.client("kt-producer-admin", LIBRARY, "admin")  # creates the topic
    producer = start("SampleProducer", "kt-producer", [kafka.bootstrap, "kt-producer", TOPIC, str(PARTITIONS), "1"])
    produce = producing(producer, "kt-producer", truth, WAIT)

    try:
        producer.wait_for("topic_created", WAIT)
        produce(40)
        m1 = member("kt-j-1")
        assigned(m1)
        static = member("kt-j-static", "group.instance.id=kt-static-1")
        assigned(static)
        m3 = member("kt-j-3", "stall.after.records=1")
        assigned(m3)
        produce(8)
        stall = m3.wait_for("stall", WAIT)  # the program stopped itself (SIGSTOP) before committing
        truth.event("kt-j-3", "stalled_by_sigstop", member_id=stall["member_id"])
        kafka.wait_for_line(f"Member {stall['member_id']} fenced from the group because the member session expired",
                            SESSION_TIMEOUT_MS / 1000 + WAIT)
        produce(8)
        m3.resume()
        truth.event("kt-j-3", "resumed_by_sigcont")
        m3.wait_for("resumed", WAIT)
        time.sleep(3)
        static.stop()
        truth.event("kt-j-static", "left", member_id=member_id(static), temporarily=True)
        static2 = member("kt-j-static", "group.instance.id=kt-static-1")
        assigned(static2)
        produce(20)
        time.sleep(2)
        for program, cid in ((m3, "kt-j-3"), (static2, "kt-j-static"), (m1, "kt-j-1")):
            program.stop()
            truth.event(cid, "left", member_id=member_id(program))
        producer.stop()
    finally:
        for program in programs:
            program.kill()
    _record(env, programs)


def assigned(program: JavaClient) -> None:
    """Until the member owns a partition (its callback first runs with nothing while others still revoke)."""
    program.wait_for("partitions_assigned", WAIT, where=lambda e: e["partitions"])


def member_id(program: JavaClient) -> str:
    """The member id the program's last rebalance callback ran under."""
    return [e for e in program.events if e["what"].startswith("partitions_")][-1]["member_id"]


def _record(env: Env, programs: list[JavaClient]) -> None:
    """The programs' JSON lines and logs into the truth; the member epochs each member reached are the ones its
    heartbeat responses handed it (the rebalance callbacks run only when its partitions change)."""
    truth = env.truth
    members = {p.events[0]["client_id"]: GROUP for p in programs if p.main == "GroupMember"}
    epochs: dict[str, list[dict]] = {}
    for program, log in zip(programs, record(truth, env.log, programs, members)):
        reached_epochs(epochs, log)
        stall = next((e for e in program.events if e["what"] == "stall"), None)
        if stall:
            fenced_after_freeze(truth, log, "consumer_group", GROUP, stall,
                                f"the {SESSION_TIMEOUT_MS} ms session timeout")
    truth.doc["groups"] = [{"group_id": GROUP, "kind": "consumer_group", "member_epochs_by_member": epochs}]
