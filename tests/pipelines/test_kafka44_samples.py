"""The Apache Kafka 4.4 samples made with the Java reference clients (samples/workloads/kafka44_*.py)
against what those clients recorded: fencings, rebalances and member lives of a KIP-848 group, and the fencing of a
transactional producer under transactions v2, on the real broker.

The Java client keeps its member id for its whole life (it generates it, KIP-1082), also when it rejoins after being
fenced, and a static member restarted under the same group.instance.id comes back with a new member id at the group
epoch it left: the two ways the real broker and client differ from the librdkafka mock the other samples use. Where
the pipelines do not model that yet, the test says what is right and is marked xfail with what they report instead.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from kafkatap.pipelines.report import read_inputs
from kafkatap.pipelines.testing import rows
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.members import members
from kafkatap.pipelines.transforms.rebalances import rebalances
from tests.support.paths import SAMPLES

pytestmark = [pytest.mark.spark, pytest.mark.slow]
CALLBACKS = ("partitions_assigned", "partitions_revoked", "partitions_lost")


def _load(spark, sample: str, tmp_path_factory) -> tuple[dict, dict[str, list[dict]]]:
    from kafkatap.dissect.run import dissect_captures

    truth = json.loads((SAMPLES / f"{sample}.truth.json").read_text())
    out = tmp_path_factory.mktemp(sample)
    dissect_captures([str(SAMPLES / truth["capture"])], str(out), ports=truth["broker_ports"], records=True)
    inp = read_inputs(spark, str(out))
    return truth, {"rebalances": sorted(rows(rebalances(inp.frames, inp.batches)), key=lambda r: r["start_ts"]),
                   "fenced": rows(fenced_epochs(inp.frames, inp.batches)),
                   "members": rows(members(inp.frames, inp.batches))}


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
