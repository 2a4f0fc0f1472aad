"""Folding member processes' results (workloads/member.py) into the truth: what each received, its callbacks and
generations or member epochs, when each record reached it, and the requests and errors its client logged."""

from __future__ import annotations

from kafkatap.samples.make import Env
from kafkatap.samples.workloads.common import record_times


def fold_members(env: Env, group_id: str, kind: str, results: dict[str, dict]) -> None:
    """`kind`: classic_group (generations) or consumer_group (member epochs); results: client_id -> member result."""
    truth = env.truth
    reached: dict[str, list] = {}
    for client_id, res in sorted(results.items()):
        for topic, partition, offset in res["consumed"]:
            truth.consumed(client_id, group_id, kind, topic, partition, offset)
        truth.doc["events"].extend(res["events"])
        record_times(truth, received=[[client_id, group_id, *r] for r in res["received"]])
        env.log.merge(res["requests"], res["error_events"])
        reached[client_id] = res["generations"]
    key = "generations_by_member" if kind == "classic_group" else "member_epochs_by_member"
    truth.doc.setdefault("groups", []).append({"group_id": group_id, "kind": kind, key: reached})
    truth.doc["events"].sort(key=lambda e: e["t"])
