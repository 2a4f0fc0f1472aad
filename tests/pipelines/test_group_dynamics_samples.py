"""rebalances and fencers on the bundled samples, against what the clients themselves recorded: the generations or
member epochs each member reached, when it started, stalled or left, and which producer re-initialised a
transactional id."""

from __future__ import annotations

import json

import pytest

from kafkatap.pipelines.report import read_inputs
from tests.support.dissected_rows import rows
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.rebalances import rebalances
from tests.support.paths import SAMPLES

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def dissect(tmp_path_factory):
    from kafkatap.dissect.run import dissect_captures

    def run(sample: str) -> tuple[dict, str]:
        truth = json.loads((SAMPLES / f"{sample}.truth.json").read_text())
        out = tmp_path_factory.mktemp(sample)
        dissect_captures([str(SAMPLES / truth["capture"])], str(out), ports=truth["broker_ports"])
        return truth, str(out)
    return run


def _joins_and_leaves(truth: dict) -> tuple[dict, dict]:
    """From the clients' own records: {(member_id, generation or epoch): 'member_joined'} for the first one each
    member reached after (re)joining, and {member_id: 'member_left' | 'member_expired'} for members that left or
    stalled."""
    (group,) = truth["groups"]
    reached = group.get("generations_by_member") or group.get("member_epochs_by_member")
    joins = {}
    for entries in reached.values():
        previous = None
        for e in entries:
            epoch = e.get("generation_id", e.get("member_epoch"))
            if epoch > 0 and (previous is None or previous[0] != e["member_id"] or previous[1] == 0):
                joins[(e["member_id"], epoch)] = "member_joined"
            previous = (e["member_id"], epoch)
    last_member = {client: entries[-1]["member_id"] for client, entries in reached.items()}
    gone = {}
    for e in truth["events"]:
        if e["what"] == "stall":
            gone[e["member_id"]] = "member_expired"
        elif e["what"] == "left" and e["client_id"] in last_member:
            gone.setdefault(last_member[e["client_id"]], "member_left")
    return joins, gone


@pytest.mark.parametrize("sample", ["classic_group", "consumer_group_848"])
def test_rebalance_triggers_match_the_clients(spark, dissect, sample):
    truth, out = dissect(sample)
    inp = read_inputs(spark, out)
    episodes = sorted(rows(rebalances(inp.frames, inp.batches)), key=lambda r: r["start_ts"])
    joins, gone = _joins_and_leaves(truth)
    # the group's first member forms it; Tansu hands it generation 0, which the clients do not report
    (founder,) = episodes[0]["members_joined"]
    assert (episodes[0]["members_before"], episodes[0]["trigger"]) == (0, "member_joined")
    by_member = truth["groups"][0].get("generations_by_member") or truth["groups"][0]["member_epochs_by_member"]
    assert founder == next(iter(by_member.values()))[0]["member_id"]
    joins = {k: v for k, v in joins.items() if k[0] != founder}
    episodes = episodes[1:]
    for r in episodes:
        for m in r["members_joined"]:
            assert joins.get((m, r["generation_or_epoch"])) == "member_joined", r
        for m in r["members_left"]:
            assert m in gone, r
        if r["members_left"] and not r["members_joined"]:
            assert r["trigger"] == gone[r["trigger_member_id"]], r
        elif r["members_joined"]:
            assert r["trigger"] == "member_joined", r
    # every join the clients saw, after the group's first member, opened an episode
    seen = {(m, r["generation_or_epoch"]) for r in episodes for m in r["members_joined"]}
    assert set(joins) == seen
    # the members that stalled or left (and were not the last to go) were seen to go
    left = {m for r in episodes for m in r["members_left"]}
    assert {m for m, why in gone.items() if why == "member_expired"} <= left
    assert all(r["end_ts"] >= r["start_ts"] for r in episodes)


def test_fencer_is_the_second_transactional_instance(spark, dissect):
    truth, out = dissect("transactions")
    inp = read_inputs(spark, out)
    got = rows(fenced_epochs(inp.frames, inp.batches).where("kind = 'producer'"))
    assert got
    for f in got:
        fencer = max((p for p in truth["producers"] if p["transactional_id"] == f["transactional_id"]),
                     key=lambda p: p["producer_epoch"])
        assert (f["fenced_by_client_id"], f["stale_epoch"] < fencer["producer_epoch"]) == (fencer["client_id"], True)
