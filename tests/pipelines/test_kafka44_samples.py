"""The Apache Kafka 4.4 samples made with the Java reference clients (samples/workloads/kafka44_*.py)
against what those clients recorded: fencings, rebalances and member lives of a KIP-848 group, the fencing of a
transactional producer under transactions v2, and a share group's records (deliveries, lock expiry, release, reject,
archiving at the delivery limit), on the real broker.

The Java client keeps its member id for its whole life (it generates it, KIP-1082), also when it rejoins after being
fenced, and a static member restarted under the same group.instance.id comes back with a new member id at the group
epoch it left: the two ways the real broker and client differ from the librdkafka mock the other samples use. Where
the pipelines do not model that yet, the test says what is right and is marked xfail with what they report instead.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

import kafkatap
from kafkatap.api import Outputs
from kafkatap.dissect.tables.schema import BATCHES
from kafkatap.pipelines import schema
from kafkatap.pipelines.storage import read_table
from kafkatap.samples.kafka import HEARTBEAT_MS, SESSION_TIMEOUT_MS
from tests.support.dissected_rows import rows
from tests.support.paths import REAL_BROKER_SAMPLES, SAMPLES
from tests.support.truth_checks import (check_duplicates, check_fenced, check_frozen_member, check_produced, frozen,
                                        produced)

pytestmark = [pytest.mark.spark, pytest.mark.slow]
CALLBACKS = ("partitions_assigned", "partitions_revoked", "partitions_lost")


_REPORTS: dict[str, tuple[dict, Outputs]] = {}


def _report(spark, sample: str, tmp_path_factory) -> tuple[dict, Outputs]:
    """The sample's truth and `kafkatap report` on its capture, as a user runs it (the API the CLI runs), once per
    sample for the module: every test reads the tables the report wrote. Called from module fixtures only, which
    pytest sets up before a test's own `once_per_run` block, so the report opens its own run as the CLI does."""
    if sample not in _REPORTS:
        truth = json.loads((SAMPLES / f"{sample}.truth.json").read_text())
        done = kafkatap.report([SAMPLES / truth["capture"]], tmp_path_factory.mktemp(sample),
                               ports=truth["broker_ports"], spark=spark)
        _REPORTS[sample] = truth, done
    return _REPORTS[sample]


def _tables(spark, done: Outputs, **names: str) -> dict[str, list[dict]]:
    """{key: rows} of the report's tables `names` ({key: table name}), read back through Spark."""
    return {key: rows(read_table(spark, str(done.report), name, schema.TABLES[name])) for key, name in names.items()}


def _load(spark, sample: str, tmp_path_factory) -> tuple[dict, dict[str, list[dict]]]:
    truth, done = _report(spark, sample, tmp_path_factory)
    tables = _tables(spark, done, rebalances="rebalances", fenced="fenced_epochs", members="sessions/members")
    return truth, {**tables, "rebalances": sorted(tables["rebalances"], key=lambda r: r["start_ts"])}


@pytest.fixture(scope="module")
def group(spark, tmp_path_factory) -> tuple[dict, dict[str, list[dict]]]:
    return _load(spark, "kafka44_consumer_group", tmp_path_factory)


@pytest.fixture(scope="module")
def truth(group) -> dict:
    return group[0]


@pytest.fixture(scope="module")
def tables(group) -> dict[str, list[dict]]:
    return group[1]


def _wall(ts) -> float:
    return (ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts))).timestamp()


def _events(truth: dict, what: str, **match) -> list[dict]:
    """The truth's events `what` (matching `match`), each with its Unix time as `wall`."""
    t0 = datetime.fromisoformat(truth["started_at"]).timestamp()
    return [{**e, "wall": t0 + e["t"]} for e in truth["events"]
            if e["what"] == what and all(e.get(k) == v for k, v in match.items())]


def test_the_frozen_member_is_fenced_once_for_its_session_timeout(truth, tables):
    (stall,) = _events(truth, "stall")
    (row,) = [f for f in tables["fenced"] if f["member_id"] == stall["member_id"]]
    (want,) = truth["fenced_epochs"]
    assert (row["error_name"], row["client_id"], row["cause"]) == (want["error_name"], "kt-j-3", "session_timeout")
    assert row["stale_epoch"] == stall["member_epoch"]
    assert abs(_wall(row["ts"]) - (datetime.fromisoformat(truth["started_at"]).timestamp() + want["t"])) < 0.5
    # its heartbeat and, once fenced, its commit without a member epoch: one fencing
    assert row["requests"] == sum(n for api in truth["response_errors"]["kt-j-3"].values() for n in api.values())


def test_every_rebalance_callback_falls_in_an_episode_of_its_epoch(truth, tables):
    """The callbacks that moved partitions ran within an episode: from the heartbeat response that opened it to one
    second after the one that closed it (the application thread runs them on its next poll). Not the ones a closing
    consumer runs, nor a restarted static member's first, handed what it gave up on closing at the same epoch: the
    partitions stayed with its instance, the group did not rebalance."""
    episodes = tables["rebalances"]
    assert [r["generation_or_epoch"] for r in episodes] == sorted(
        {s["member_epoch"] for steps in truth["groups"][0]["member_epochs_by_member"].values() for s in steps
         if s["member_epoch"] > 0})
    closing = [(e["client_id"], e["wall"]) for e in _events(truth, "closing")]

    def closes(e: dict) -> bool:
        return any(c == e["client_id"] and 0 <= e["wall"] - w < 1 for c, w in closing)

    given_up = [e for e in _events(truth, "partitions_revoked") if closes(e)]

    def restated(e: dict) -> bool:
        return e["what"] == "partitions_assigned" and any(
            (g["client_id"], g["member_epoch"], g["partitions"]) == (e["client_id"], e["member_epoch"], e["partitions"])
            and g["member_id"] != e["member_id"] and g["wall"] < e["wall"] for g in given_up)

    for e in (e for what in CALLBACKS for e in _events(truth, what)):
        if e["partitions"] and not closes(e) and not restated(e):
            assert any(_wall(r["start_ts"]) - 0.2 <= e["wall"] <= _wall(r["end_ts"]) + 1.0 for r in episodes), e


def test_the_expiry_is_its_own_episode_triggered_by_the_frozen_member(truth, tables):
    (stall,) = _events(truth, "stall")
    resumed = _events(truth, "resumed_by_sigcont")[0]["wall"]
    (expiry,) = [r for r in tables["rebalances"] if r["trigger"] == "member_expired"]
    assert expiry["members_left"] == [stall["member_id"]] and expiry["trigger_member_id"] == stall["member_id"]
    session_s = 6.0
    assert stall["wall"] + session_s - 1 <= _wall(expiry["start_ts"]) <= resumed


def test_a_static_member_restarted_within_its_session_is_no_rebalance(truth, tables):
    (left,) = _events(truth, "left", client_id="kt-j-static", temporarily=True)
    steps = truth["groups"][0]["member_epochs_by_member"]["kt-j-static"]
    replacement = steps[-1]["member_id"]
    assert replacement != left["member_id"] and steps[-1]["member_epoch"] == steps[-3]["member_epoch"]
    for r in tables["rebalances"]:
        assert replacement not in r["members_joined"], r
        assert not (left["member_id"] in r["members_left"] and _wall(r["start_ts"]) > left["wall"]), r
        assert r["members_after"] <= 3, r


def test_the_frozen_member_life_ended_expired(truth, tables):
    """The Java client keeps its member id when it rejoins after being fenced: the expired life is the member id's
    first incarnation, ended at its refusal, and the rejoined one its second."""
    (stall,) = _events(truth, "stall")
    lives = sorted((m for m in tables["members"] if m["member_id"] == stall["member_id"]),
                   key=lambda m: m["incarnation"])
    assert [(m["incarnation"], m["ended"], m["end_error"]) for m in lives][:1] == [
        (1, "expired", truth["fenced_epochs"][0]["error_name"])]
    assert [m["incarnation"] for m in lives] == [1, 2] and lives[1]["ended"] == "left"
    (want,) = truth["fenced_epochs"]
    started = datetime.fromisoformat(truth["started_at"]).timestamp()
    assert abs(_wall(lives[0]["end_ts"]) - (started + want["t"])) < 0.5
    assert _wall(lives[0]["end_ts"]) <= _wall(lives[1]["first_seen"])


@pytest.fixture(scope="module")
def transactions(spark, tmp_path_factory) -> tuple[dict, dict[str, list[dict]]]:
    return _load(spark, "kafka44_transactions", tmp_path_factory)


def test_transactions_v2_epoch_bumps_are_no_zombies_and_the_broker_verification_is_no_client(transactions):
    """Transactions v2 bump the producer epoch at every EndTxn: the epochs a producer left behind that way are not
    zombies. The first instance's refusals after the second took its transactional id are the fencings, the client's
    own requests' (not the partition leader's AddPartitionsToTxn verification, which the capture holds too)."""
    truth, tables = transactions
    assert sorted((f["error_name"], f["client_id"], f["api_name"], f["inferred"]) for f in tables["fenced"]) == sorted(
        (f["error_name"], f["client_id"], f["detail"].split("; ")[1].split()[0], False) for f in truth["fenced_epochs"])
    last = max(t["producer_epoch"] for t in truth["transactions"] if t["client_id"] == "kt-txn-1")
    assert {f["stale_epoch"] for f in tables["fenced"]} == {last + 1}  # what its last EndTxn handed it


def test_transactions_v2_every_fencing_names_the_second_instance(transactions):
    """The EndTxn refusal's current epoch came from kt-txn-2's own EndTxn (v2 bumps the epoch at every one): the
    fencer is still kt-txn-2, whose InitProducerId started the instance holding it."""
    truth, tables = transactions
    for f in tables["fenced"]:
        assert (f["fenced_by_client_id"], f["cause"]) == ("kt-txn-2", "new_instance"), f
        assert f["explanation"].startswith("Producer kt-txn (kt-txn-1) used epoch "), f


@pytest.fixture(scope="module")
def share(spark, tmp_path_factory) -> tuple[dict, dict[int, dict], dict]:
    """kafka44_share_group: its truth, share_records per offset, and the summary's share counts."""
    truth, done = _report(spark, "kafka44_share_group", tmp_path_factory)
    records = _tables(spark, done, records="share_records")["records"]
    return truth, {o: r for r in records for o in range(r["first_offset"], r["last_offset"] + 1)}, done.report_summary


def _deliveries(truth: dict, offset: int) -> list[tuple]:
    return [(d["client_id"], d["delivery_count"], d["ack"]) for d in truth["share_deliveries"] if d["offset"] == offset]


def _share_event(truth: dict, what: str) -> dict:
    (event,) = [e for e in truth["events"] if e["what"] == what]
    return event


def test_share_group_held_record_lock_expires_and_goes_to_the_other_member(share):
    """The holder kept offset 0 past the broker's 8 s lock; the other member got it as delivery 2 and accepted it.
    The holder's late accept came after that: commitSync returned no error for it (nor did the callback), and the
    wire agrees (no ack_error), but it ended nothing: its delivery ended by the lock running out."""
    truth, mine, _ = share
    holding = _share_event(truth, "holding")
    (late,) = [e for e in truth["events"] if e["what"] == "late_commit"]
    assert late["client_id"] == holding["client_id"] and set(late["results"].values()) == {None}
    r = mine[holding["offset"]]
    first, second = r["deliveries"]
    assert [(d["client_id"], d["delivery_count"], d["ack_type"]) for d in r["deliveries"]] == _deliveries(
        truth, holding["offset"])
    assert (first["client_id"], first["lock_ms"], first["ack_error"], first["end"]) == (
        holding["client_id"], holding["lock_ms"], None, "lock_timeout")
    assert (second["client_id"] != first["client_id"], second["end"]) == (True, "accepted")
    assert (r["lock_expiries"], r["final_state"]) == (1, "acknowledged")
    assert {o for o, x in mine.items() if x["lock_expiries"]} == {holding["offset"]}


def test_share_group_released_and_rejected_records(share):
    """Offset 12 released on its first delivery and accepted on its second; 14 rejected: archived at once."""
    truth, mine, _ = share
    released, rejected = mine[12], mine[14]
    assert [(d["client_id"], d["delivery_count"], d["ack_type"]) for d in released["deliveries"]] == _deliveries(
        truth, 12)
    assert [d["end"] for d in released["deliveries"]] == ["released", "accepted"]
    assert (released["final_state"], released["max_delivery_count"]) == ("acknowledged", 2)
    assert _deliveries(truth, 14)[-1][2] == "reject"
    assert (rejected["final_state"], rejected["archive_reason"], rejected["delivered"]) == ("archived", "rejected", 1)


def test_share_group_poison_record_is_archived_at_the_described_limit(share):
    """Offset 16 released on every delivery: the broker archived it at its limit (3, broker config) and never
    delivered it again. The limit is the one the broker described to the member's Admin client (DescribeConfigs of
    the group, in the capture)."""
    truth, mine, _ = share
    (archived,) = truth["share_archived"]
    limit = int(_share_event(truth, "group_configs")["configs"]["share.delivery.count.limit"])
    r = mine[archived["offset"]]
    assert [d["delivery_count"] for d in r["deliveries"]] == list(range(1, limit + 1)) == [
        c for _, c, _ in _deliveries(truth, archived["offset"])]
    assert {d["ack_type"] for d in r["deliveries"]} == {"release"}
    assert (r["final_state"], r["archive_reason"], r["delivery_limit"], r["delivery_limit_source"]) == (
        "archived", "delivery_limit", limit, "describe_configs")


def test_share_group_summary_counts_match_the_consumers(share):
    """Every record delivered ends acknowledged or archived; the summary's counts are the consumers' own."""
    truth, mine, counts = share
    last = {d["offset"]: d["ack"] for d in truth["share_deliveries"]}
    assert set(mine) == set(last)
    accepted = {o for o, a in last.items() if a == "accept"}
    assert {o for o, r in mine.items() if r["final_state"] == "acknowledged"} == accepted
    assert {o for o, r in mine.items() if r["final_state"] == "archived"} == set(last) - accepted
    assert counts["share_poison_records"] == len(truth["share_archived"])
    assert counts["share_lock_expiries"] == sum(e["what"] == "holding" for e in truth["events"])


@pytest.fixture(scope="module")
def streams(spark, tmp_path_factory) -> tuple[dict, dict[str, list[dict]], Outputs]:
    """kafka44_streams_group: its truth, the session tables with groups and epoch_events too, and the report."""
    truth, done = _report(spark, "kafka44_streams_group", tmp_path_factory)
    return truth, _tables(spark, done, groups="sessions/groups", members="sessions/members",
                          epoch_events="sessions/epoch_events", fenced="fenced_epochs", rebalances="rebalances"), done


@pytest.fixture(scope="module", params=REAL_BROKER_SAMPLES)
def reported(request, spark, tmp_path_factory) -> tuple[dict, Outputs]:
    return _report(spark, request.param, tmp_path_factory)


def _streams_members(truth: dict) -> dict[str, dict]:
    """Per Streams instance (kt-st-1, kt-st-2): its stream thread's member id, the member epochs its heartbeat
    responses handed it, the partitions of the active tasks it reported, in order, and the same per life of its
    member (`lives`: split where the member was fenced, when it was; its member id stays, KIP-1082)."""
    (group,) = truth["groups"]
    out = {}
    for instance, tasks in group["tasks_by_instance"].items():
        steps = group["member_epochs_by_member"][f"{instance}-StreamThread-1-consumer"]
        fenced = [f["t"] for f in truth["fenced_epochs"] if f["client_id"] == f"{instance}-StreamThread-1-consumer"]
        bounds = [float("-inf"), *fenced, float("inf")]
        out[instance] = {"member_id": steps[0]["member_id"],
                         "epochs": [s["member_epoch"] for s in steps if s["member_epoch"] > 0],
                         "held": [_partitions(t) for t in tasks],
                         "lives": [[_partitions(t) for t in tasks if start <= t["t"] < end]
                                   for start, end in zip(bounds, bounds[1:])]}
    return out


def _partitions(tasks: dict) -> list[str]:
    return sorted(p for ps in tasks["active"].values() for p in ps)


def test_a_streams_group_is_its_own_kind_with_both_instances(streams):
    truth, tables, _ = streams
    (row,) = [g for g in tables["groups"] if g["group_id"] == "kt-streams44"]
    assert (row["kind"], row["joined"], row["members"]) == ("streams_group", True, 2)
    assert row["client_ids"] == sorted(f"{i}-StreamThread-1-consumer" for i in truth["groups"][0]["tasks_by_instance"])


def test_streams_members_have_the_instances_epochs_tasks_and_leaves(streams):
    """Each life of an instance's stream thread's member is a row: joined once, the member epochs it was handed, the
    partitions of the tasks it held (gained, lost, last) as the instance itself reported them, and how it ended: the
    frozen instance's first life expired (refused with the error its client saw), every last life left on close."""
    truth, tables, _ = streams
    errors = {f["member_id"]: f["error_name"] for f in truth["fenced_epochs"]}
    for instance, want in _streams_members(truth).items():
        lives = sorted((m for m in tables["members"] if m["member_id"] == want["member_id"]),
                       key=lambda m: m["incarnation"])
        assert len(lives) == len(want["lives"]) == 1 + (want["member_id"] in errors)
        assert [e for row in lives for e in row["member_epochs"]] == want["epochs"]
        for row, reported in zip(lives, want["lives"]):
            held = [h for h in reported if h]  # an instance running with no task yet holds nothing
            gained = sorted({p for before, now in zip([[]] + held, held) for p in set(now) - set(before)})
            lost = sorted({p for before, now in zip(held, held[1:]) for p in set(before) - set(now)})
            last = row is lives[-1]
            assert (row["kind"], row["client_id"], row["joins"], row["ended"], row["end_error"]) == (
                "streams_group", f"{instance}-StreamThread-1-consumer", 1, "left" if last else "expired",
                None if last else errors[want["member_id"]])
            assert (row["partitions_gained"], row["partitions_lost"], row["final_assignment"]) == (
                gained, lost, held[-1])


def test_streams_epoch_events_are_the_epochs_each_member_was_handed(streams):
    truth, tables, _ = streams
    for want in _streams_members(truth).values():
        got = sorted((e for e in tables["epoch_events"] if e["member_id"] == want["member_id"]),
                     key=lambda e: _wall(e["ts"]))
        assert {e["kind"] for e in got} == {"streams_group"}
        assert [e["epoch"] for e in got] == want["epochs"]


def test_the_frozen_streams_instance_is_fenced_once_for_its_session_timeout(streams):
    """kt-st-2's JVM frozen (SIGSTOP) past the broker's streams session timeout: the broker removed its member, gave
    its task to kt-st-1 and refused its next StreamsGroupHeartbeat. One fencing, the one its client logged, explained
    by its silence: longer than the heartbeat intervals its heartbeats were answered (the session timeout is a broker
    setting, not on the wire), the group gone on to a newer epoch, the task's new owner as its fencer."""
    truth, tables, _ = streams
    (stall,) = _events(truth, "stalled_by_sigstop")
    (resumed,) = _events(truth, "resumed_by_sigcont")
    (want,) = truth["fenced_epochs"]
    (row,) = [f for f in tables["fenced"] if f["group_id"] == "kt-streams44"]
    assert (row["kind"], row["member_id"], row["client_id"], row["error_name"], row["api_name"], row["inferred"]) == (
        "streams_group", stall["member_id"], want["client_id"], want["error_name"], "StreamsGroupHeartbeat", False)
    assert (row["stale_epoch"], row["requests"]) == (stall["member_epoch"], 1)
    assert abs(_wall(row["ts"]) - (datetime.fromisoformat(truth["started_at"]).timestamp() + want["t"])) < 0.5
    assert row["cause"] == "session_timeout"
    frozen = resumed["wall"] - stall["wall"]
    beat = HEARTBEAT_MS / 1000
    assert frozen <= row["silent_s"] <= frozen + beat + 0.5, (frozen, row["silent_s"])
    assert (row["session_timeout_ms"], row["heartbeat_interval_ms"]) == (None, HEARTBEAT_MS)
    # the broker bumped the group's epoch removing it, before the epoch the member rejoined at
    steps = [s["member_epoch"] for s in truth["groups"][0]["member_epochs_by_member"][want["client_id"]]]
    rejoined = steps[steps.index(0, 1) + 1]
    assert stall["member_epoch"] < row["group_epoch"] < rejoined
    # the instance that reported the frozen one's task as its own between the freeze and the fencing
    (lost,) = {p for t in truth["groups"][0]["tasks_by_instance"][stall["instance"]] if t["t"] < stall["t"]
               for p in _partitions(t)}
    takers = {i for i, tasks in truth["groups"][0]["tasks_by_instance"].items() for t in tasks
              if i != stall["instance"] and stall["t"] < t["t"] < want["t"] and lost in _partitions(t)}
    assert [row["fenced_by_client_id"]] == [f"{i}-StreamThread-1-consumer" for i in takers]
    assert row["explanation"].startswith(
        f"{want['client_id']} (member {stall['member_id']}) sent nothing the coordinator accepted for "
        f"{row['silent_s']:.1f} s after "), row["explanation"]
    assert f"of its heartbeat intervals ({beat:.1f} s" in row["explanation"]
    assert "the coordinator removed it" in row["explanation"]
    assert row["explanation"].endswith(f"its StreamsGroupHeartbeat at {row['ts']} was refused "
                                       f"{want['error_name']}."), row["explanation"]


def test_kafkatap_report_explains_the_streams_fencing(streams):
    """The whole `kafkatap report` on the capture: the summary counts the one fencing under its cause, the table's
    row is the frozen member's with the error its client saw and an explanation that names its silence, and the
    dashboard draws it."""
    truth, _, done = streams
    (want,) = truth["fenced_epochs"]
    assert done.report_summary["fenced_epochs_by_cause"] == {"session_timeout": 1}
    (row,) = kafkatap.read(done.report, "fenced_epochs").to_dict("records")
    assert (row["kind"], row["group_id"], row["member_id"], row["client_id"], row["error_name"], row["cause"]) == (
        "streams_group", want["group_id"], want["member_id"], want["client_id"], want["error_name"],
        "session_timeout")
    silence = f"sent nothing the coordinator accepted for {row['silent_s']:.1f} s"
    assert silence in row["explanation"] and "the coordinator removed it" in row["explanation"]
    assert silence in done.page.read_text()


def test_streams_task_moves_are_rebalance_episodes(streams):
    """One episode per member epoch of the group: kt-st-1's first tasks (all partitions, handed at its second epoch,
    once the broker's initial rebalance delay passed: its join was the episode before, which moved nothing, so no
    trigger is seen in this one); kt-st-2 joining takes a task from kt-st-1 (triggered by its join, the task's
    partition moved); frozen past its session, it is removed and the task returns (triggered by its expiry); resumed,
    it rejoins under the same member id and takes a task again; closing, it leaves and the task returns (triggered by
    its leave)."""
    truth, tables, _ = streams
    members = _streams_members(truth)
    joiner = members["kt-st-2"]["member_id"]
    episodes = sorted((r for r in tables["rebalances"] if r["group_id"] == "kt-streams44"),
                      key=lambda r: _wall(r["start_ts"]))
    assert {r["kind"] for r in episodes} == {"streams_group"}
    assert [r["generation_or_epoch"] for r in episodes] == members["kt-st-1"]["epochs"]
    first = members["kt-st-1"]["held"][0]
    taken, again = ([h for h in life if h][-1] for life in members["kt-st-2"]["lives"])
    moves = [(r["trigger"], r["trigger_member_id"], r["moved_partitions"]) for r in episodes if r["partitions_moved"]]
    assert moves == [("unknown", None, first), ("member_joined", joiner, taken), ("member_expired", joiner, taken),
                     ("member_joined", joiner, again), ("member_left", joiner, again)]
    (expiry,) = [r for r in episodes if r["trigger"] == "member_expired"]
    (stall,) = _events(truth, "stalled_by_sigstop")
    (resumed,) = _events(truth, "resumed_by_sigcont")
    assert expiry["members_left"] == [joiner]
    assert stall["wall"] + SESSION_TIMEOUT_MS / 1000 - 1 <= _wall(expiry["start_ts"]) <= resumed["wall"]


def test_kafkatap_report_holds_the_clients_truth(spark, reported):
    """`kafkatap report` on each real-broker capture: the records the producers had acknowledged (per partition),
    the fencings and the duplicate deliveries the clients saw, and a frozen member's fencing, are the report's, in
    its summary and in its tables (the checks tests/pipelines/test_samples.py makes of the other samples)."""
    truth, done = reported
    summary = done.report_summary
    assert summary["produced_records"] == sum(truth["produced_by_partition"].values())
    assert summary["duplicate_records"] == {k: v for k, v in truth["duplicate_records"].items() if v}
    tables = _tables(spark, done, fenced="fenced_epochs", duplicates="duplicate_deliveries")
    check_fenced(truth, tables["fenced"])
    check_duplicates(truth, tables["duplicates"])
    check_produced(truth, rows(produced(read_table(spark, str(done.dissected), "batches", BATCHES))))
    if frozen(truth):
        check_frozen_member(truth, tables["fenced"])
    # each member's and producer's fencing explained (a partition leader's is checked against the client's log)
    assert all(r["cause"] for r in tables["fenced"] if not r["inferred"] and r["kind"] != "partition_leader")
    assert done.page.exists()
