"""rebalances, ownership_conflicts and e2e latency on the two rebalance samples, against the clients' own account:
their rebalance callbacks (kafka-python calls revoked just before it sends JoinGroup and assigned once its SyncGroup
response is in; librdkafka calls them as it reconciles), the member epochs librdkafka logged with their times, the
zombie's own note of when its heartbeats stopped, and each record's send and receive times."""

from __future__ import annotations

import statistics

import pytest
from pyspark.sql import functions as F

from kafkatap.pipelines.report import read_inputs
from kafkatap.pipelines.transforms.conflicts import ownership_conflicts
from kafkatap.pipelines.transforms.e2e import e2e_latency, offset_latency
from kafkatap.pipelines.transforms.links import fetch_links
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.transforms.rebalances import rebalances
from kafkatap.samples import capture_path, load_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CALLBACKS = ("partitions_revoked", "partitions_assigned")
# kafka-python runs its callbacks from its poll loop (200 ms polls here); librdkafka right as it reconciles
CLASSIC_SLACK_S, KIP848_SLACK_S = 0.3, 0.05


@pytest.fixture(scope="module")
def sample(spark, tmp_path_factory):
    from kafkatap.dissect.run import dissect_captures

    cache: dict = {}

    def load(name: str):
        if name not in cache:
            truth = load_truth(name)
            out = tmp_path_factory.mktemp(name)
            dissect_captures([str(capture_path(name))], str(out), ports=truth["broker_ports"], records=True)
            cache[name] = truth, read_inputs(spark, str(out))
        return cache[name]
    return load


def _seconds(df, *columns):
    return df.select("*", *[(F.unix_micros(c) / 1e6).alias(f"{c}_s") for c in columns])


def _episodes(inp) -> list[dict]:
    got = _seconds(rebalances(inp.frames, inp.batches), "start_ts", "end_ts")
    return sorted((r.asDict() for r in got.collect()), key=lambda r: r["end_ts_s"])


def _client(member_id: str) -> str:
    return member_id.rsplit("-", 5)[0]


def _callbacks(truth: dict) -> list[dict]:
    return sorted((e for e in truth["events"] if e["what"] in CALLBACKS), key=lambda e: e["wall"])


def _owners_after(callbacks: list[dict], until: float) -> dict[str, str]:
    """partition -> the client handed it last (by `until`): a zombie still holding one is not its owner."""
    owners: dict[str, str] = {}
    for e in callbacks:
        if e["wall"] <= until and e["what"] == "partitions_assigned":
            for p in e["partitions"]:
                owners[p] = e["client_id"]
    return owners


def test_classic_episodes_match_the_members_callbacks(sample):
    truth, inp = sample("rebalances_classic")
    callbacks = _callbacks(truth)
    ends = {}  # generation -> the last member's assigned callback of it
    for e in callbacks:
        if e["what"] == "partitions_assigned":
            ends[e["generation_id"]] = max(ends.get(e["generation_id"], 0), e["wall"])
    episodes = _episodes(inp)
    assert [r["generation_or_epoch"] for r in episodes] == sorted(ends)
    previous_end, previous_owners, previous_members = 0.0, {}, set()
    for r in episodes:
        gen = r["generation_or_epoch"]
        window = [e for e in callbacks if previous_end < e["wall"] <= ends[gen]]
        start = min(e["wall"] for e in window if e["what"] == "partitions_revoked")
        # the episode opens with the JoinGroup or LeaveGroup right after a revoked callback, or with the
        # REBALANCE_IN_PROGRESS that made a member call it; it closes with the SyncGroup response before the last
        # assigned callback
        assert abs(r["start_ts_s"] - start) <= CLASSIC_SLACK_S, (gen, r["start_ts_s"] - start)
        assert -0.01 <= ends[gen] - r["end_ts_s"] <= CLASSIC_SLACK_S, (gen, ends[gen] - r["end_ts_s"])
        now = {e["member_id"] for e in window if e["what"] == "partitions_assigned" and e["generation_id"] == gen}
        assert (r["members_joined"], r["members_left"]) == (sorted(now - previous_members),
                                                            sorted(previous_members - now)), gen
        owners = _owners_after(callbacks, ends[gen])
        moved = sorted(p for p in owners if owners[p] != previous_owners.get(p))
        assert r["moved_partitions"] == moved, gen
        stalled = max(_unowned(callbacks, p, previous_owners.get(p), owners[p], start, ends[gen]) for p in moved)
        assert abs(r["stalled_s"] - stalled) <= CLASSIC_SLACK_S, (gen, r["stalled_s"], stalled)
        left = {e["client_id"] for e in truth["events"]
                if e["what"] == "left" and previous_end < e["wall"] <= ends[gen]}
        gone = {_client(m) for m in r["members_left"]}
        assert r["trigger"] == ("member_left" if gone & left else "member_expired" if gone else "member_joined"), gen
        assert _client(r["trigger_member_id"]) in (gone or {_client(m) for m in r["members_joined"]})
        previous_end, previous_owners, previous_members = ends[gen], owners, now


def _unowned(callbacks: list[dict], partition: str, old: str | None, new: str, start: float, end: float) -> float:
    """How long the partition had no owner: from the old owner's revoked callback in the episode (or the episode's
    start when it had none) to the new owner's assigned one; 0 when the old one never let go (a zombie)."""
    taken = max(e["wall"] for e in callbacks if e["client_id"] == new and e["what"] == "partitions_assigned"
                and partition in e["partitions"] and e["wall"] <= end)
    if old is None:
        return taken - start
    released = [e["wall"] for e in callbacks if e["client_id"] == old and e["what"] == "partitions_revoked"
                and partition in e["partitions"] and start - CLASSIC_SLACK_S <= e["wall"] <= end]
    return max(0.0, taken - released[0]) if released else 0.0


def test_kip848_episodes_match_the_members_epochs_and_callbacks(sample):
    truth, inp = sample("rebalances_848")
    (group,) = truth["groups"]
    reached: dict[int, dict[str, float]] = {}  # epoch -> client -> when it was first answered that epoch
    for client, entries in group["member_epochs_by_member"].items():
        for e in entries:
            if e["member_epoch"] > 0:
                reached.setdefault(e["member_epoch"], {}).setdefault(client, e["wall"])
    callbacks = _callbacks(truth)
    leaves = {e["client_id"]: e["wall"] for e in truth["events"] if e["what"] == "left"}
    episodes = _episodes(inp)
    assert [r["generation_or_epoch"] for r in episodes] == sorted(reached)
    previous_end, previous_members = 0.0, set()
    for r in episodes:
        epoch = r["generation_or_epoch"]
        end = max(reached[epoch].values())
        signs = [e["wall"] for e in callbacks if previous_end + KIP848_SLACK_S < e["wall"] <= end + KIP848_SLACK_S]
        start = min(signs + [min(reached[epoch].values())])
        assert abs(r["start_ts_s"] - start) <= KIP848_SLACK_S, (epoch, r["start_ts_s"] - start)
        assert abs(r["end_ts_s"] - end) <= KIP848_SLACK_S, (epoch, r["end_ts_s"] - end)
        now = set(reached[epoch])
        assert (r["members_before"], r["members_after"]) == (len(previous_members), len(now))
        joined, gone = now - previous_members, previous_members - now
        assert r["trigger"] == ("member_joined" if joined else "member_left"), epoch
        assert all(c in leaves for c in gone)
        owners = _owners_after(callbacks, end + KIP848_SLACK_S)
        if previous_end:
            before = _owners_after(callbacks, previous_end + KIP848_SLACK_S)
            moved = sorted(p for p in owners if owners[p] != before.get(p))
            assert r["moved_partitions"] == moved, epoch
        previous_end, previous_members = end, now


def test_the_zombie_is_an_ownership_conflict_with_each_member_handed_its_partition(sample):
    truth, inp = sample("rebalances_classic")
    spans = member_spans(members(inp.frames, inp.batches))
    got = [r.asDict() for r in _seconds(ownership_conflicts(inp.frames, inp.batches, spans),
                                        "overlap_start", "overlap_end").collect()]
    stopped = next(e for e in truth["events"] if e["what"] == "heartbeat_stopped")
    callbacks = _callbacks(truth)
    handed = [e for e in callbacks if e["wall"] > stopped["wall"] and e["what"] == "partitions_assigned"
              and e["client_id"] != stopped["client_id"] and set(e["partitions"]) & set(stopped["partitions"])]
    assert handed
    received = [r for r in truth["record_times"]["received"] if r[0] == stopped["client_id"]]
    held = set(stopped["partitions"])
    assert sorted((r["first_client_id"], r["source"], f'{r["topic"]}:{r["partition"]}') for r in got) == sorted(
        (stopped["client_id"], "assignment", p) for e in handed for p in set(e["partitions"]) & held)
    for r in sorted(got, key=lambda r: r["overlap_start_s"]):
        given = next(e for e in handed if e["client_id"] == r["second_client_id"])
        assert abs(r["overlap_start_s"] - given["wall"]) <= CLASSIC_SLACK_S
        # the zombie really received the partition's records while the other member owned it, and the wire saw it
        during = [x for x in received if f"{x[2]}:{x[3]}" == f'{r["topic"]}:{r["partition"]}'
                  and r["overlap_start_s"] <= x[5] <= r["overlap_end_s"] + CLASSIC_SLACK_S]
        assert during and r["fetches"] >= 1
    assert not ownership_conflicts(*_inputs(sample("rebalances_848")[1])).count()


def _inputs(inp):
    return inp.frames, inp.batches, member_spans(members(inp.frames, inp.batches))


@pytest.mark.parametrize("name", ["rebalances_classic", "rebalances_848"])
def test_end_to_end_latency_matches_the_clients_send_and_receive_times(sample, name):
    truth, inp = sample(name)
    sent = {(t, p, o): wall for t, p, o, wall in truth["record_times"]["sent"]}
    first: dict[tuple, float] = {}
    for _client_id, group, t, p, o, wall in truth["record_times"]["received"]:
        first[(group, t, p, o)] = min(first.get((group, t, p, o), wall), wall)
    links = fetch_links(inp.frames, member_spans(members(inp.frames, inp.batches)))
    wire = {(r.group_id, r.topic, r.partition, r.offset): r.ms
            for r in offset_latency(inp.batches, inp.records, links).collect()}
    # the wire may also show records fetched for a member that closed before its application polled them
    tail = set(wire) - set(first)
    assert set(first) <= set(wire)
    assert all(k[3] > max(o for (_g, _t, p, o) in first if p == k[2]) for k in tail)
    # the wire's interval (Produce request to Fetch response) lies inside the clients' (send call to poll return)
    diffs = [(first[k] - sent[k[1:]]) * 1000 - wire[k] for k in first]
    assert min(diffs) >= -1.0
    assert statistics.median(diffs) <= 5.0
    assert sum(d <= 10.0 for d in diffs) >= 0.9 * len(diffs)
    for r in e2e_latency(inp.batches, inp.records, links, "1 day").collect():
        mine = sorted((first[k] - sent[k[1:]]) * 1000 for k in first if k[2] == r.partition)
        assert (r.records, r.produce_missing) == (len(mine) + sum(k[2] == r.partition for k in tail), 0)
        assert abs(r.p50_ms - statistics.median(mine)) <= 15.0, (r.partition, r.p50_ms, statistics.median(mine))
        assert r.max_ms <= mine[-1] + 1.0


def test_a_frozen_members_partitions_go_unfetched_until_their_new_owner_fetches_them(sample):
    """classic_group: kt-member-2 stops (its "stall" event, right after a poll) holding clicks:2 and clicks:3; the
    episode that expires it moves them to kt-member-1, which polls them once its generation-2 callback ran. The
    episode's fetch gap is that span as the clients saw it, though no partition was without an owner (`stalled_s`
    0: the frozen member owned them until the coordinator removed it)."""
    truth, inp = sample("classic_group")
    events = truth["events"]
    stall = next(e for e in events if e["what"] == "stall")
    taken = next(e for e in events if e["what"] == "generation" and e["client_id"] == "kt-member-1"
                 and e["t"] > stall["t"])
    (episode,) = [e for e in _episodes(inp) if e["trigger"] == "member_expired"]
    felt = taken["t"] - stall["t"]
    assert episode["moved_partitions"] == ["clicks:2", "clicks:3"] and episode["stalled_s"] == 0.0
    assert felt - CLASSIC_SLACK_S <= episode["fetch_gap_s"] <= felt + 1.0, (felt, episode["fetch_gap_s"])
    assert episode["fetch_gap_partition_s"] == pytest.approx(2 * episode["fetch_gap_s"], rel=0.05)
