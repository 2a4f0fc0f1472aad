"""KIP-1071 streams group on Apache Kafka 4.4 with Kafka Streams 4.4 (samples/java/StreamsApp.java,
group.protocol=streams): a one-subtopology application (source `clicks`, 3 partitions -> processValues -> sink
`clicks-upper`) runs as kt-st-1; a second instance kt-st-2 joins and takes tasks from it, then freezes (SIGSTOP of
its whole JVM, heartbeat thread included) past the broker's streams session timeout while idle: the broker removes
it and its tasks return to kt-st-1; resumed, its next StreamsGroupHeartbeat is refused, it rejoins and takes tasks
again, then closes (leaving the group) and its tasks come back, while a producer writes.

Every instance is a Java program in its own JVM; the truth is theirs: state transitions (setStateListener), the tasks
their stream thread held (metadataForLocalThreads) and each task's processor started and closed, with wall-clock
times; their StreamsGroupHeartbeats' member ids and epochs, the other requests and the errors they were answered come
from their NetworkClient's debug log.
"""

from __future__ import annotations

import time

from kafkatap.samples.javaclients import (
    LIBRARY, JavaClient, JavaClients, fenced_after_freeze, producing, reached_epochs, read_log, record
)
from kafkatap.samples.kafka import HEARTBEAT_MS, SESSION_TIMEOUT_MS
from kafkatap.samples.make import Env, Spec

SPEC = Spec(
    name="kafka44_streams_group",
    description="Apache Kafka 4.4, Kafka Streams 4.4: streams group kt-streams44 (KIP-1071, group.protocol=streams), "
                "topology clicks (3 partitions) -> processValues -> clicks-upper; instance kt-st-1 runs all three "
                "tasks, kt-st-2 joins and takes some; kt-st-2 freezes past the 6 s streams session timeout, its tasks "
                "return to kt-st-1; resumed, it is fenced and rejoins, takes tasks again, then closes (leaving the "
                "group) and they return to kt-st-1, while a Java producer writes.",
    kafka_port=19443,
)
SOURCE, SINK, PARTITIONS, GROUP = "clicks", "clicks-upper", 3, "kt-streams44"
WAIT = 40.0  # bound on any one step (a JVM starting, a task assignment arriving)


def run(env: Env) -> None:
    truth, kafka = env.truth, env.kafka
    truth.topic(SOURCE, PARTITIONS)
    truth.topic(SINK, PARTITIONS)
    truth.note(f"Apache Kafka 4.4 (one KRaft node, streams.version 1): group.streams.session.timeout.ms="
               f"{SESSION_TIMEOUT_MS}, group.streams.heartbeat.interval.ms={HEARTBEAT_MS}: broker settings, not on "
               "the wire. Each Streams instance runs one stream thread, whose consumer (client id "
               "<instance>-StreamThread-1-consumer) is the group member and sends the StreamsGroupHeartbeats.")
    clients = JavaClients(env.workdir / "clients")
    start, programs = clients.start, clients.programs

    def instance(client_id: str, *extra: str) -> JavaClient:
        truth.client(client_id, LIBRARY, "streams", **{"application.id": GROUP, "group.protocol": "streams",
                                                       "num.stream.threads": 1, "commit.interval.ms": 500})
        # the instance's own clients, under the client ids Streams derives from its client.id: they are the ones on
        # the wire (and undeclared, the broker's request log would count them as the broker's own)
        for suffix, role in (("StreamThread-1-consumer", "consumer"), ("StreamThread-1-producer", "producer"),
                             ("admin", "admin")):
            truth.client(f"{client_id}-{suffix}", LIBRARY, role, **{"streams.instance": client_id})
        return start("StreamsApp", client_id, [f"bootstrap={kafka.bootstrap}", f"client.id={client_id}",
                                               f"application.id={GROUP}", f"source={SOURCE}", f"sink={SINK}",
                                               f"state.dir={env.workdir / 'state' / client_id}", "max.seconds=120",
                                               *extra])

    truth.client("kt-producer", LIBRARY, "producer", **{"linger.ms": 5})
    truth.client("kt-producer-admin", LIBRARY, "admin")  # creates the source topic
    truth.client("kt-st-1-sink-admin", LIBRARY, "admin")  # creates the sink topic
    producer = start("SampleProducer", "kt-producer", [kafka.bootstrap, "kt-producer", SOURCE, str(PARTITIONS), "1"])
    produce = producing(producer, "kt-producer", truth, WAIT)
    try:
        producer.wait_for("topic_created", WAIT)
        produce(30)
        st1 = instance("kt-st-1", f"sink.partitions={PARTITIONS}")
        _tasks(st1, lambda active: len(active) == PARTITIONS)
        _processed(st1, 30)
        st2 = instance("kt-st-2")
        produce(15)
        _tasks(st2, lambda active: len(active) > 0)
        _tasks(st1, lambda active: 0 < len(active) < PARTITIONS)
        produce(15)
        _processed_all([st1, st2], 60)
        time.sleep(1.5)  # their commits: frozen idle, kt-st-2 leaves nothing for kt-st-1 to process again
        stalled = _freeze(env, st2, "kt-st-2")
        _tasks(st1, lambda active: len(active) == PARTITIONS, after=stalled)
        time.sleep(max(0.0, stalled + SESSION_TIMEOUT_MS / 1000 + 2 - time.time()))
        st2.resume()
        resumed = time.time()
        truth.event(_consumer("kt-st-2"), "resumed_by_sigcont", instance="kt-st-2")
        # refused, it rejoins and takes tasks again (from kt-st-1: its own may come back unchanged, no new event)
        _tasks(st1, lambda active: 0 < len(active) < PARTITIONS, after=resumed)
        produce(15)
        _processed_all([st1, st2], 75)
        time.sleep(1)  # their commits
        # from the close's start, not kt-st-2's last event: its leave can hand kt-st-1 the tasks before it has closed
        closing = time.time()
        st2.stop()
        truth.event("kt-st-2", "left")
        _tasks(st1, lambda active: len(active) == PARTITIONS, after=closing)
        time.sleep(1)  # the last commit
        st1.stop()
        truth.event("kt-st-1", "left")
        producer.stop()
    finally:
        for program in programs:
            program.kill()
    _record(env, programs)


def _consumer(instance: str) -> str:
    """The client id of an instance's stream thread's consumer: the group member."""
    return f"{instance}-StreamThread-1-consumer"


def _freeze(env: Env, program: JavaClient, instance: str) -> float:
    """Stop the instance's JVM (SIGSTOP) and record it with the member id and epoch its log shows its stream thread
    was last handed (the JVM is stopped: its log is complete up to here). Returns the wall-clock time of the
    freeze."""
    program.pause()
    wall = time.time()
    _, _, member_id, epoch = [e for e in read_log(program.log).member_epochs if e[1] == _consumer(instance)][-1]
    env.truth.event(_consumer(instance), "stalled_by_sigstop", instance=instance, member_id=member_id,
                    member_epoch=epoch, wall=wall)
    return wall


def _tasks(program: JavaClient, holds, after: float = 0.0) -> dict:
    """Until the instance reports active tasks for which `holds` is true (after wall-clock time `after`)."""
    return program.wait_for("tasks", WAIT, where=lambda e: e["wall"] > after and holds(e["active"]))


def _processed(program: JavaClient, n: int) -> None:
    program.wait_for("processed", WAIT, count=n)


def _processed_all(programs: list[JavaClient], n: int) -> None:
    """Until the instances together processed `n` distinct (partition, offset)s."""
    deadline = time.monotonic() + WAIT
    while len({(e["partition"], e["offset"]) for p in programs for e in list(p.events)
               if e["what"] == "processed"}) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"streams instances processed fewer than {n} records within {WAIT} s")
        time.sleep(0.1)


def _record(env: Env, programs: list[JavaClient]) -> None:
    """The programs' JSON lines and logs into the truth, and the streams group: each member's epochs as its
    heartbeat responses handed them, each instance's task assignments in order, and the fencing of the frozen
    instance's member with the error its own log shows its first refused request after the freeze was answered."""
    truth = env.truth
    stalls = [e for e in truth.doc["events"] if e["what"] == "stalled_by_sigstop"]
    epochs: dict[str, list[dict]] = {}
    for log in record(truth, env.log, programs, {}):
        reached_epochs(epochs, log)
        for stall in (s for s in stalls if any(cid == s["client_id"] for _, cid, _, _ in log.member_epochs)):
            fenced_after_freeze(truth, log, "streams_group", GROUP, stall,
                                f"the {SESSION_TIMEOUT_MS} ms streams session timeout")
    tasks: dict[str, list[dict]] = {}
    for e in sorted((e for p in programs for e in p.events if e["what"] == "tasks"), key=lambda e: e["wall"]):
        tasks.setdefault(e["client_id"], []).append({"t": round(e["wall"] - truth.t0_wall, 3), "wall": e["wall"],
                                                     "active": e["active"], "standby": e["standby"]})
    truth.doc["groups"] = [{"group_id": GROUP, "kind": "streams_group", "member_epochs_by_member": epochs,
                            "tasks_by_instance": tasks}]
