"""share_records and share_spso on the bundled share-group captures, against what the consumers logged: every
delivery (`msg.delivery_count()`) and the ack each consumer sent, per offset, in order."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from kafkatap.pipelines.report import read_inputs
from tests.support.dissected_rows import rows
from kafkatap.pipelines.transforms.share_records import share_records
from kafkatap.pipelines.transforms.share_spso import spso_pinned
from tests.support.paths import SAMPLES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SHARE_SAMPLES = [p.name.removesuffix(".truth.json") for p in sorted(SAMPLES.glob("*.truth.json"))
                 if json.loads(p.read_text())["share_deliveries"]]
STATE = {"accept": ("acknowledged", None), "reject": ("archived", "rejected")}


@pytest.fixture(scope="module")
def analysed(spark, tmp_path_factory) -> dict[str, tuple[dict, list[dict], list[dict]]]:
    from kafkatap.dissect.run import dissect_captures

    out = {}
    for sample in SHARE_SAMPLES:
        truth = json.loads((SAMPLES / f"{sample}.truth.json").read_text())
        root = tmp_path_factory.mktemp(sample)
        dissect_captures([str(SAMPLES / truth["capture"])], str(root), ports=truth["broker_ports"])
        inp = read_inputs(spark, str(root))
        records = share_records(inp.frames, inp.share).cache()
        out[sample] = (truth, rows(records), rows(spso_pinned(records, inp.frames)))
    return out


def per_offset(records: list[dict]) -> dict[tuple, dict]:
    return {(r["group_id"], r["topic"], r["partition"], off): r for r in records
            for off in range(r["first_offset"], r["last_offset"] + 1)}


def truth_histories(truth: dict) -> dict[tuple, list[tuple]]:
    out: dict[tuple, list[tuple]] = defaultdict(list)
    for d in truth["share_deliveries"]:
        out[(d["group_id"], d["topic"], d["partition"], d["offset"])].append(
            (d["client_id"], d["delivery_count"], d["ack"]))
    return out


@pytest.mark.parametrize("sample", SHARE_SAMPLES)
def test_every_delivery_and_ack_matches_the_consumers_logs(analysed, sample):
    truth, records, _ = analysed[sample]
    mine = per_offset(records)
    want = truth_histories(truth)
    assert set(mine) == set(want)
    for key, history in want.items():
        got = [(d["client_id"], d["delivery_count"], d["ack_type"]) for d in mine[key]["deliveries"]]
        assert got == history, key


@pytest.mark.parametrize("sample", SHARE_SAMPLES)
def test_final_states_match_the_consumers_logs(analysed, sample):
    """Accepted and rejected records are terminal. A record released on its last delivery (`share_archived`: the
    mock's delivery limit, which no request in the capture states) is `unknown` unless the partition was acquired
    again above it afterwards: the capture cannot tell it from a record waiting to come back."""
    truth, records, _ = analysed[sample]
    mine = per_offset(records)
    archived = {(a["topic"], a["partition"], a["offset"]) for a in truth.get("share_archived", [])}
    for key, history in truth_histories(truth).items():
        r = mine[key]
        last_ack = history[-1][2]
        if last_ack in STATE:
            assert (r["final_state"], r["archive_reason"]) == STATE[last_ack], key
        elif key[1:] in archived:
            assert (r["final_state"], r["archive_reason"]) in {("unknown", None), ("archived", "delivery_limit")}
        else:
            assert r["final_state"] in {"available", "unknown"}, key
        assert r["max_delivery_count"] == max(c for _, c, _ in history)


@pytest.mark.parametrize("sample", SHARE_SAMPLES)
def test_spso_is_pinned_where_the_consumers_left_a_record_unfinished(analysed, sample):
    """By the consumers' logs, the lowest offset whose last ack was not accept/reject is where the SPSO stops,
    unless the broker archived it at the delivery limit (`share_archived`) and the capture shows that (records
    acquired above it afterwards: `archived`, see test_final_states_match_the_consumers_logs)."""
    truth, records, pinned = analysed[sample]
    histories = truth_histories(truth)
    mine = per_offset(records)
    archived = {(a["topic"], a["partition"], a["offset"]) for a in truth.get("share_archived", [])}

    def terminal(key: tuple, history: list[tuple]) -> bool:
        return history[-1][2] in STATE or (key[1:] in archived and mine[key]["final_state"] == "archived")

    open_ = sorted(k[3] for k, h in histories.items() if not terminal(k, h))
    still = [p for p in pinned if p["end_ts"] is None]
    if open_:
        assert [p["pinned_offset"] for p in still] == [open_[0]]
        assert still[0]["records_behind"] == sum(1 for k, h in histories.items()
                                                 if k[3] > open_[0] and terminal(k, h))
    else:
        assert still == []


def _share_locks(analysed) -> tuple[dict, dict[tuple, dict], list[dict]]:
    if "share_locks" not in analysed:
        pytest.skip("samples/share_locks.truth.json missing")
    truth, records, pinned = analysed["share_locks"]
    return truth, per_offset(records), pinned


def _event(truth: dict, what: str) -> dict:
    (event,) = [e for e in truth["events"] if e["what"] == what]
    return event


def test_share_locks_held_record_times_out_and_goes_to_the_other_member(analysed):
    """share_locks: kt-lock-1 held offset 0 past the mock's record lock without acknowledging it; kt-lock-2 got it
    next with the delivery count it logged and accepted it."""
    truth, mine, _ = _share_locks(analysed)
    lock_ms = _event(truth, "holding")["lock_ms"]
    held = [d for d in truth["share_deliveries"] if d["ack"] is None]
    assert held
    for d in held:
        key = (d["group_id"], d["topic"], d["partition"], d["offset"])
        after = [(x["client_id"], x["delivery_count"], x["ack"]) for x in truth["share_deliveries"]
                 if (x["group_id"], x["topic"], x["partition"], x["offset"]) == key
                 and x["delivery_count"] > d["delivery_count"]]
        r = mine[key]
        first, *rest = r["deliveries"]
        assert (first["client_id"], first["delivery_count"], first["ack_type"], first["lock_ms"], first["end"]) == (
            d["client_id"], d["delivery_count"], None, lock_ms, "lock_timeout")
        assert [(x["client_id"], x["delivery_count"], x["ack_type"]) for x in rest] == after
        assert rest[0]["client_id"] != d["client_id"] and rest[0]["member_id"] != first["member_id"]
        assert (rest[0]["acquired_ts"] - first["acquired_ts"]).total_seconds() * 1000 >= lock_ms
        assert (r["lock_expiries"], r["final_state"], r["max_delivery_count"]) == (1, "acknowledged",
                                                                                 after[-1][1])
    expired = {k for k, r in mine.items() if r["lock_expiries"]}
    assert expired == {(d["group_id"], d["topic"], d["partition"], d["offset"]) for d in held}


def test_share_locks_held_record_pins_the_spso_until_accepted(analysed):
    truth, mine, pinned = _share_locks(analysed)
    holding = _event(truth, "holding")
    (pin,) = [p for p in pinned if p["pinned_offset"] == holding["offset"]]
    accepted = [d for d in truth["share_deliveries"] if d["offset"] == holding["offset"] and d["ack"] == "accept"]
    assert pin["pinned_last_offset"] == holding["offset"]
    assert pin["end_ts"] is not None and pin["duration_ms"] >= holding["lock_ms"]
    assert (pin["holder_client_id"], pin["lock_expiries"], pin["pinned_state"]) == (
        accepted[-1]["client_id"], 1, "acknowledged")
    assert pin["records_behind"] == len(holding["acknowledged"])


def test_share_locks_poison_record_is_archived_at_the_limit(analysed):
    """Offset 13 was released on each of its deliveries up to the limit; later records were acquired above it."""
    truth, mine, _ = _share_locks(analysed)
    for a in truth["share_archived"]:
        (r,) = {id(r): r for (g, t, p, o), r in mine.items() if (t, p, o) == (a["topic"], a["partition"],
                                                                              a["offset"])}.values()
        assert [d["delivery_count"] for d in r["deliveries"]] == list(range(1, a["delivery_count"] + 1))
        assert (r["final_state"], r["archive_reason"], r["delivery_limit"], r["delivery_limit_source"]) == (
            "archived", "delivery_limit", a["delivery_count"], "inferred")
        assert r["lock_expiries"] == 0
