"""Rebalance episodes, a zombie and end-to-end latency in a classic group on Tansu (kafka-python, Kafka 2.5 versions).

A producer writes a steady trickle of records and logs when it sent each one; three members of one group log when
each record reached them and when their rebalance callbacks ran (partitions revoked just before a JoinGroup, assigned
once the SyncGroup response is in). kt-rb-2 joins a running group; kt-rb-zombie joins, then its heartbeats stop for
good while it goes on fetching: Tansu expires it and hands its partitions to the others, and it keeps fetching them
(an ownership conflict); kt-rb-2 then leaves cleanly. The truth's `record_times` and the callback events are the
clients' own account of the episodes and of each record's trip.
"""

from __future__ import annotations

import time

from kafka.admin import KafkaAdminClient, NewTopic

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.workloads.common import KAFKA_PYTHON, TANSU_SESSION_TIMEOUT_MS
from kafkatap.samples.workloads.group_results import Members, fold_members
from kafkatap.samples.workloads.member import MemberProcess
from kafkatap.samples.workloads.trickle import Trickle

SPEC = Spec(
    name="rebalances_classic",
    description="Tansu, kafka-python with api_version=(2,5): a producer trickles records into `orders` (4 partitions) "
                "while members of group kt-rebalance come and go: kt-rb-2 joins, kt-rb-zombie joins and its "
                "heartbeats stop while it keeps fetching (expired, a zombie), kt-rb-2 leaves; every client logs its "
                "rebalance callbacks and each record's send or receive time.",
    tansu_port=19050,
    tshark_comparable=True,
)
TOPIC, PARTITIONS, GROUP = "orders", 4, "kt-rebalance"
API_VERSION = (2, 5)


def _member(env: Env, members: Members, client_id: str, **extra) -> MemberProcess:
    env.truth.client(client_id, KAFKA_PYTHON, "consumer", group_id=GROUP, api_version=list(API_VERSION),
                     session_timeout_ms=TANSU_SESSION_TIMEOUT_MS, heartbeat_interval_ms=1000,
                     enable_auto_commit=False, max_poll_records=50, **extra)
    return members.start({
        "library": "kafka-python", "bootstrap": env.tansu.bootstrap, "client_id": client_id, "group_id": GROUP,
        "topics": [TOPIC], "api_version": list(API_VERSION), "session_timeout_ms": TANSU_SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": 1000, "max_poll_records": 50, "max_seconds": 120, **extra})


def run(env: Env) -> None:
    truth = env.truth
    admin_id = truth.client("kt-admin", KAFKA_PYTHON, "admin", api_version=list(API_VERSION))
    admin = KafkaAdminClient(bootstrap_servers=env.tansu.bootstrap, client_id=admin_id, api_version=API_VERSION)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    truth.topic(TOPIC, PARTITIONS)
    with Members(env) as members, Trickle(env, "kt-rb-producer", TOPIC, PARTITIONS, api_version=API_VERSION):
        m1 = _member(env, members, "kt-rb-1")
        time.sleep(7)  # Tansu answers the first JoinGroup after about half the session timeout
        m2 = _member(env, members, "kt-rb-2")
        time.sleep(9)
        zombie = _member(env, members, "kt-rb-zombie", zombie_after_records=5)
        # joins (about 5 s), goes quiet once it holds records, is expired after the session timeout, and the group
        # settles without it while it keeps fetching
        time.sleep(9 + TANSU_SESSION_TIMEOUT_MS / 1000 + 9)
        members.stop(m2)
        time.sleep(8)
        members.stop(m1)
        members.stop(zombie)
    fold_members(env, GROUP, "classic_group", members.results)
    stopped = [e for e in truth.doc["events"] if e["what"] == "heartbeat_stopped"]
    if not stopped or not stopped[0]["partitions"]:
        raise RuntimeError(f"the zombie never held partitions: {stopped}")
    _zombie_refused(truth, members.results[zombie.client_id], stopped[0])


def _zombie_refused(truth, result: dict, stopped: dict) -> None:
    """The zombie hears that it was expired only when it finally talks to the coordinator again (its LeaveGroup as it
    closes): the error its client decoded is its fencing."""
    refused = [(api, error) for _client, api, error in result["error_events"]
               if api in ("Heartbeat", "OffsetCommit", "SyncGroup", "LeaveGroup")]
    if not refused:
        raise RuntimeError(f"the zombie was never refused: {result['error_events']}")
    api, error = refused[0]
    left = next(e for e in result["events"] if e["what"] == "left")
    truth.fenced("classic_group", error, stopped["client_id"], group_id=GROUP, member_id=stopped["member_id"],
                 detail=f"heartbeats stopped in generation {stopped['generation_id']} holding {stopped['partitions']}; "
                        f"expired past session.timeout.ms={TANSU_SESSION_TIMEOUT_MS}, it kept fetching until its {api} "
                        f"was refused", t=left["t"])
