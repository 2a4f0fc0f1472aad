"""Rebalance episodes and end-to-end latency in a KIP-848 group on librdkafka's mock cluster (confluent-kafka,
group.protocol=consumer).

A producer trickles records and logs when it sent each one; the group's members log when each record reached them
and when librdkafka ran their assignment callbacks (partitions assigned or revoked, incrementally). kt-848rb-2 and
kt-848rb-3 join a running group one after the other, then kt-848rb-2 leaves: each change is a new target assignment
the members reconcile to. The callbacks and `record_times` are the clients' own account.
"""

from __future__ import annotations

import time

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import CONFLUENT
from kafkatap.samples.workloads.group_results import Members, fold_members
from kafkatap.samples.workloads.member import MemberProcess
from kafkatap.samples.workloads.trickle import Trickle

SPEC = Spec(
    name="rebalances_848",
    description="librdkafka mock: a confluent-kafka producer trickles records into `payments` (4 partitions) while "
                "KIP-848 members of group kt-848rb come and go: kt-848rb-2 and kt-848rb-3 join, kt-848rb-2 leaves; "
                "every client logs its assignment callbacks and each record's send or receive time.",
    mock_brokers=1,
)
TOPIC, PARTITIONS, GROUP = "payments", 4, "kt-848rb"
SESSION_TIMEOUT_MS, HEARTBEAT_MS = 6000, 500


def _member(env: Env, members: Members, client_id: str) -> MemberProcess:
    env.truth.client(client_id, CONFLUENT, "consumer", **{"group.id": GROUP, "group.protocol": "consumer",
                                                          "enable.auto.commit": False})
    return members.start({"library": "confluent-kafka", "bootstrap": env.mock.bootstrap, "client_id": client_id,
                          "group_id": GROUP, "topics": [TOPIC], "max_poll_records": 50, "max_seconds": 120})


def run(env: Env) -> None:
    truth, mock = env.truth, env.mock
    mock.create_topic(TOPIC, PARTITIONS)
    mock.set_consumer_group_timeouts(SESSION_TIMEOUT_MS, HEARTBEAT_MS)
    truth.topic(TOPIC, PARTITIONS)
    truth.note(f"librdkafka mock: group.consumer.session.timeout.ms={SESSION_TIMEOUT_MS}, heartbeat interval "
               f"{HEARTBEAT_MS} ms (rd_kafka_mock_set_group_consumer_*).")
    with Members(env) as members, Trickle(env, "kt-848rb-producer", TOPIC, PARTITIONS, library="confluent-kafka"):
        m1 = _member(env, members, "kt-848rb-1")
        time.sleep(5)
        m2 = _member(env, members, "kt-848rb-2")
        time.sleep(6)
        m3 = _member(env, members, "kt-848rb-3")
        time.sleep(6)
        members.stop(m2)
        time.sleep(6)
        members.stop(m3)
        members.stop(m1)
    fold_members(env, GROUP, "consumer_group", members.results)
