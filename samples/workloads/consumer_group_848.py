"""KIP-848 consumer group (group.protocol=consumer) on librdkafka's mock: member epochs advance as members join and
leave; one member freezes (SIGSTOP) past the group's session timeout, is removed, re-delivers nothing it had not
committed (another member gets those records again), and rejoins at epoch 0 once resumed.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import CONFLUENT, delivery_recorder, payload
from kafkatap.samples.workloads.member import MemberProcess

SPEC = Spec(
    name="consumer_group_848",
    description="librdkafka mock: KIP-848 consumers kt-848-1..3 (group kt-848) share topic `metrics` (4 partitions); "
                "kt-848-2 freezes past the 6 s session timeout holding uncommitted records, which kt-848-1 then "
                "receives again; resumed, kt-848-2 is refused and rejoins at epoch 0; kt-848-3 leaves.",
    mock_brokers=1,
)
TOPIC, PARTITIONS, GROUP = "metrics", 4, "kt-848"
SESSION_TIMEOUT_MS, HEARTBEAT_MS = 6000, 1000


def run(env: Env) -> None:
    truth, log, mock = env.truth, env.log, env.mock
    mock.create_topic(TOPIC, PARTITIONS)
    mock.set_consumer_group_timeouts(SESSION_TIMEOUT_MS, HEARTBEAT_MS)
    truth.topic(TOPIC, PARTITIONS)
    truth.note(f"librdkafka mock: group.consumer.session.timeout.ms={SESSION_TIMEOUT_MS}, heartbeat interval "
               f"{HEARTBEAT_MS} ms (set through rd_kafka_mock_set_group_consumer_*); a member whose session expires "
               "is deleted, so its next requests are answered UNKNOWN_MEMBER_ID rather than FENCED_MEMBER_EPOCH.")
    rng = random.Random(5)
    t0_wall = truth.t0_wall

    pid = truth.client("kt-producer-1", CONFLUENT, "producer", **{"linger.ms": 5})
    producer = Producer({"bootstrap.servers": mock.bootstrap, "linger.ms": 5, **log.librdkafka(pid)})
    errors: list = []
    on_delivery = delivery_recorder(truth, pid, errors)
    sent = [0]

    def produce(n: int) -> None:
        for i in range(n):
            producer.produce(TOPIC, key=f"host-{rng.randrange(20)}".encode(), value=payload(rng, 120),
                             partition=(sent[0] + i) % PARTITIONS, on_delivery=on_delivery)
        producer.flush(10)
        sent[0] += n
        truth.event(pid, "produced", records=n)

    def member(workdir: Path, client_id: str, stall_after: int | None = None) -> MemberProcess:
        truth.client(client_id, CONFLUENT, "consumer", **{"group.id": GROUP, "group.protocol": "consumer",
                                                          "enable.auto.commit": False},
                     **({"stalls_after_records": stall_after} if stall_after else {}))
        proc = MemberProcess(workdir, {"library": "confluent-kafka", "bootstrap": mock.bootstrap,
                                       "client_id": client_id, "group_id": GROUP, "topics": [TOPIC],
                                       "max_poll_records": 10, "stall_after_records": stall_after,
                                       "max_seconds": 120, "t0_wall": t0_wall})
        truth.event(client_id, "started")
        return proc

    produce(80)
    members: list[MemberProcess] = []
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="kafkatap-848-") as tmp:
        workdir = Path(tmp)
        try:
            m1 = member(workdir, "kt-848-1")
            members.append(m1)
            time.sleep(4)
            m2 = member(workdir, "kt-848-2", stall_after=1)
            members.append(m2)
            m2.wait_stalled(60, lambda: produce(8))
            truth.event(m2.client_id, "stalled_by_sigstop")
            time.sleep(SESSION_TIMEOUT_MS / 1000 + 3)
            m3 = member(workdir, "kt-848-3")
            members.append(m3)
            time.sleep(3)
            m2.resume()
            truth.event(m2.client_id, "resumed_by_sigcont")
            time.sleep(4)
            produce(40)
            time.sleep(3)
            results[m3.client_id] = m3.stop()
            truth.event(m3.client_id, "stopped")
            time.sleep(2)
            produce(20)
            time.sleep(3)
            for m in (m1, m2):
                results[m.client_id] = m.stop()
                truth.event(m.client_id, "stopped")
        finally:
            for m in members:
                m.kill()
    producer.poll(0.2)
    del producer
    if errors:
        raise RuntimeError(f"produce errors: {errors}")

    epochs: dict = {}
    for cid, res in sorted(results.items()):
        for topic, part, off in res["consumed"]:
            truth.consumed(cid, GROUP, "consumer_group", topic, part, off)
        truth.doc["events"].extend(res["events"])
        log.merge(res["requests"], [])
        epochs[cid] = res["generations"]
        if "stall_wall" in res:
            # librdkafka logs no heartbeat error codes; the pending commit's refusal names the broker's error
            refusals = [(e["wall"], "OffsetCommit", e["error_name"]) for e in res["events"]
                        if e["what"] == "commit_failed" and not e["error_name"].startswith("_")]
            after = sorted(r for r in refusals if r[0] >= res["resume_wall"])
            if not after:
                raise RuntimeError(f"{cid} was not refused after its stall: {res['events']}")
            wall, api, error_name = after[0]
            epochs_after = [g["member_epoch"] for g in res["generations"]]
            truth.fenced("consumer_group", error_name, cid, group_id=GROUP, member_id=res["stalled_member_id"],
                         detail=f"froze past the {SESSION_TIMEOUT_MS} ms session timeout; first refused request "
                                f"after the resume: {api}; member epochs it was answered: {epochs_after}",
                         t=round(wall - t0_wall, 3))
    truth.doc["groups"] = [{"group_id": GROUP, "kind": "consumer_group", "member_epochs_by_member": epochs}]
