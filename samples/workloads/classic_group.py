"""Classic consumer group on Tansu (kafka-python pinned to Kafka 2.5 versions, so tshark 4.0 decodes it all).

Members join and leave, generations advance; one member stalls (SIGSTOP) past its session timeout with records
fetched but not committed: the group rebalances without it, another member receives those records again, and the
stalled member's next requests are refused (the error is whatever Tansu answered, read from the client).
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import KAFKA_PYTHON, TANSU_SESSION_TIMEOUT_MS, payload
from kafkatap.samples.workloads.member import MemberProcess

SPEC = Spec(
    name="classic_group",
    description="Tansu, kafka-python with api_version=(2,5) only: members kt-member-1..3 of group kt-classic join "
                "and leave topic `clicks` (4 partitions); kt-member-2 freezes (SIGSTOP) past its 6 s session timeout "
                "holding uncommitted records, which kt-member-1 then receives again; kt-member-2's next requests are "
                "refused and it rejoins.",
    tansu_port=19040,
    tshark_comparable=True,
)
TOPIC, PARTITIONS, GROUP = "clicks", 4, "kt-classic"
API_VERSION = (2, 5)


def _member(env: Env, workdir: Path, client_id: str, t0_wall: float, *, stall_after: int | None = None,
            max_poll_records: int = 20) -> MemberProcess:
    env.truth.client(client_id, KAFKA_PYTHON, "consumer", group_id=GROUP, api_version=list(API_VERSION),
                     session_timeout_ms=TANSU_SESSION_TIMEOUT_MS, heartbeat_interval_ms=1000,
                     enable_auto_commit=False, max_poll_records=max_poll_records,
                     **({"stalls_after_records": stall_after} if stall_after else {}))
    return MemberProcess(workdir, {
        "library": "kafka-python", "bootstrap": env.tansu.bootstrap, "client_id": client_id, "group_id": GROUP,
        "topics": [TOPIC], "api_version": list(API_VERSION), "session_timeout_ms": TANSU_SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": 1000, "max_poll_records": max_poll_records, "stall_after_records": stall_after,
        "max_seconds": 120, "t0_wall": t0_wall})


def run(env: Env) -> None:
    truth, log, bootstrap = env.truth, env.log, env.tansu.bootstrap
    rng = random.Random(4)
    t0_wall = truth.t0_wall
    admin_id = truth.client("kt-admin", KAFKA_PYTHON, "admin", api_version=list(API_VERSION))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=admin_id, api_version=API_VERSION)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    truth.topic(TOPIC, PARTITIONS)

    pid_ = truth.client("kt-producer-1", KAFKA_PYTHON, "producer", api_version=list(API_VERSION), linger_ms=5)
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=pid_, api_version=API_VERSION, linger_ms=5)
    sent = [0]

    def produce(n: int) -> None:
        futures = [producer.send(TOPIC, key=f"user-{rng.randrange(50)}".encode(), value=payload(rng, 150),
                                 partition=(sent[0] + i) % PARTITIONS) for i in range(n)]
        producer.flush(10)
        for f in futures:
            md = f.get(10)
            truth.produced(pid_, md.topic, md.partition, md.offset)
        sent[0] += n
        truth.event(pid_, "produced", records=n)

    produce(80)
    members: list[MemberProcess] = []
    with tempfile.TemporaryDirectory(prefix="kafkatap-classic-") as tmp:
        workdir = Path(tmp)
        try:
            m1 = _member(env, workdir, "kt-member-1", t0_wall)
            members.append(m1)
            truth.event(m1.client_id, "started")
            time.sleep(5)  # Tansu answers the first JoinGroup after ~session.timeout.ms / 2
            m2 = _member(env, workdir, "kt-member-2", t0_wall, stall_after=1, max_poll_records=10)
            members.append(m2)
            truth.event(m2.client_id, "started")
            # kt-member-2 freezes itself once it holds records it has not committed
            m2.wait_stalled(60, lambda: produce(8))
            truth.event(m2.client_id, "stalled_by_sigstop")
            time.sleep(TANSU_SESSION_TIMEOUT_MS / 1000 + 6)  # session expires, the group rebalances without it
            produce(20)
            m3 = _member(env, workdir, "kt-member-3", t0_wall)
            members.append(m3)
            truth.event(m3.client_id, "started")
            time.sleep(5)
            m2.resume()
            truth.event(m2.client_id, "resumed_by_sigcont")
            time.sleep(6)
            produce(40)
            time.sleep(3)
            results = {m3.client_id: m3.stop()}
            truth.event(m3.client_id, "stopped")
            time.sleep(5)
            produce(20)
            time.sleep(3)
            for m in (m1, m2):
                results[m.client_id] = m.stop()
                truth.event(m.client_id, "stopped")
        finally:
            for m in members:
                m.kill()
    producer.close(5)

    groups: dict = {}
    for cid, res in sorted(results.items()):
        for topic, part, off in res["consumed"]:
            truth.consumed(cid, GROUP, "classic_group", topic, part, off)
        truth.doc["events"].extend(res["events"])
        log.merge(res["requests"], res["error_events"])
        groups[cid] = res["generations"]
        if "stalled_member_id" in res:
            after = res.get("errors_after_stall") or []
            if not after:
                raise RuntimeError(f"{cid} was not refused anything after its stall: {res['events']}")
            _, api, error_name = after[0]
            truth.fenced("classic_group", error_name, cid, group_id=GROUP, member_id=res["stalled_member_id"],
                         detail=f"stalled in generation {res['stalled_generation_id']} past session.timeout.ms="
                                f"{TANSU_SESSION_TIMEOUT_MS}; first refused request: {api}; later: "
                                f"{sorted({f'{a}:{e}' for _, a, e in after[1:]})}", t=res.get("refused_at"))
    truth.doc["groups"] = [{"group_id": GROUP, "kind": "classic_group", "generations_by_member": groups}]
    if not truth.doc["fenced_epochs"]:
        raise RuntimeError("no member was fenced")
