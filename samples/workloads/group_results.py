"""A workload's group members as processes (workloads/member.py), and their results folded into the truth: what each
received, its callbacks and generations or member epochs, when each record reached it, and the requests and errors
its client logged."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kafkatap.samples.make import Env
from kafkatap.samples.workloads.common import record_times
from kafkatap.samples.workloads.member import MemberProcess


class Members:
    """The member processes of one run, in a temporary folder: `start(client_id, spec)` runs one, `stop(member)`
    keeps its result; at the end of the block every member still running is killed, whatever happened."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.results: dict[str, dict] = {}
        self.running: list[MemberProcess] = []

    def __enter__(self) -> Members:
        self.folder = tempfile.TemporaryDirectory(prefix="kafkatap-members-")
        return self

    def start(self, spec: dict) -> MemberProcess:
        member = MemberProcess(Path(self.folder.name), {"t0_wall": self.env.truth.t0_wall, **spec})
        self.running.append(member)
        self.env.truth.event(member.client_id, "started")
        return member

    def stop(self, member: MemberProcess) -> None:
        self.results[member.client_id] = member.stop()
        self.env.truth.event(member.client_id, "stopped")

    def __exit__(self, *exc) -> None:
        try:
            for member in self.running:
                member.kill()
        finally:
            self.folder.cleanup()


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
