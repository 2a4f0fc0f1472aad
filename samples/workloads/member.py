"""One group member in its own process, so the workload can stall it for real (SIGSTOP).

`python -m kafkatap.samples.workloads.member SPEC.json`: joins the group (kafka-python classic group, or confluent-kafka
with `group.protocol=consumer`, KIP-848), polls and commits after every poll until the stop file appears, and writes
what it received, its generations or member epochs, its requests and the errors it was answered to `spec["out"]`.
With `stall_after_records`, it stops itself (SIGSTOP) right after receiving that many records and before committing
them, like a process frozen by a long GC pause or a swap storm; the workload resumes it (SIGCONT). With
`zombie_after_records` (kafka-python), its heartbeats stop for good after that many records while it goes on polling
and never commits again: the broker expires it and hands its partitions to others, and it keeps fetching them, the
way a consumer whose heartbeat thread died does. Every member logs its rebalance callbacks (partitions revoked and
assigned, with wall-clock times) as events, and the wall-clock time each record reached the application.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import kafka.errors as Errors
from kafka import ConsumerRebalanceListener, KafkaConsumer

from kafkatap.samples.clients import RequestLog


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    log = RequestLog()
    out: dict = {"consumed": [], "events": [], "generations": [], "received": []}
    t0 = spec["t0_wall"]

    def event(what: str, **detail) -> None:
        now = time.time()
        out["events"].append({"t": round(now - t0, 3), "client_id": spec["client_id"], "what": what,
                              "wall": round(now, 6), **detail})

    if spec["library"] == "kafka-python":
        with log.kafka_python():
            _run_kafka_python(spec, log, out, event)
    else:
        with log.librdkafka_stderr():
            _run_confluent(spec, log, out, event)
        out["generations"], out["fenced_walls"] = member_epochs(log.log_lines.get(spec["client_id"], []))
    out["requests"] = log.by_client()
    out["error_events"] = [list(e) for e in log.error_events]
    Path(spec["out"]).write_text(json.dumps(out))
    return 0


def _stall(out: dict, event, member_id: str, generation: int, uncommitted: int, log: RequestLog) -> int:
    out["stalled_member_id"], out["stalled_generation_id"] = member_id, generation
    event("stall", member_id=member_id, generation_id=generation, uncommitted=uncommitted)
    errors_before = len(log.error_events)
    os.kill(os.getpid(), signal.SIGSTOP)
    event("resumed")
    return errors_before


def _run_kafka_python(spec: dict, log: RequestLog, out: dict, event) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=spec["bootstrap"], client_id=spec["client_id"],
        group_id=spec["group_id"], api_version=tuple(spec["api_version"]) if spec.get("api_version") else None,
        enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=spec["session_timeout_ms"],
        heartbeat_interval_ms=spec["heartbeat_interval_ms"], max_poll_records=spec["max_poll_records"])
    coordinator = consumer._coordinator
    consumer.subscribe(spec["topics"], listener=_Callbacks(coordinator, event))
    stop_file, stall_after = Path(spec["stop_file"]), spec.get("stall_after_records")
    zombie_after, zombie = spec.get("zombie_after_records"), False
    received, last_generation = 0, None
    deadline = time.monotonic() + spec["max_seconds"]
    while not stop_file.exists() and time.monotonic() < deadline:
        batches = consumer.poll(timeout_ms=200)
        generation = coordinator._generation
        if (generation.generation_id, generation.member_id) != last_generation and generation.generation_id > 0:
            last_generation = (generation.generation_id, generation.member_id)
            out["generations"].append({"generation_id": generation.generation_id, "member_id": generation.member_id})
            event("generation", generation_id=generation.generation_id, member_id=generation.member_id)
        if not batches:
            continue
        now = round(time.time(), 6)
        for msgs in batches.values():
            for m in msgs:
                out["consumed"].append([m.topic, m.partition, m.offset])
                out["received"].append([m.topic, m.partition, m.offset, now])
                received += 1
        if zombie:
            continue
        if zombie_after is not None and received >= zombie_after:
            zombie = True
            coordinator._close_heartbeat()  # the heartbeat loop ends; polling and fetching go on
            event("heartbeat_stopped", member_id=generation.member_id, generation_id=generation.generation_id,
                  partitions=_names(consumer.assignment()))
            continue
        if stall_after is not None and received >= stall_after:
            stall_after = None
            errors_before = _stall(out, event, generation.member_id, generation.generation_id,
                                   sum(len(v) for v in batches.values()), log)
            try:
                consumer.commit()
                event("commit_after_stall_succeeded")
            except Errors.KafkaError as exc:
                event("commit_failed", error=type(exc).__name__)
            out["refused_at"] = out["events"][-1]["t"]
            out["errors_after_stall"] = [list(e) for e in log.error_events[errors_before:]]
            continue
        try:
            consumer.commit()
        except Errors.KafkaError as exc:
            event("commit_failed", error=type(exc).__name__)
    consumer.close()
    event("left")


def _run_confluent(spec: dict, log: RequestLog, out: dict, event) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": spec["group_id"],
                         "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         **log.librdkafka(spec["client_id"], group_debug=True)})
    def on_assign(c, partitions) -> None:
        event("partitions_assigned", member_id=c.memberid() or "", partitions=_names(partitions))

    def on_revoke(c, partitions) -> None:
        event("partitions_revoked", member_id=c.memberid() or "", partitions=_names(partitions))

    consumer.subscribe(spec["topics"], on_assign=on_assign, on_revoke=on_revoke)
    stop_file, stall_after = Path(spec["stop_file"]), spec.get("stall_after_records")
    received = 0
    deadline = time.monotonic() + spec["max_seconds"]
    while not stop_file.exists() and time.monotonic() < deadline:
        # the first record as soon as it is there, then what else is queued: consume(n, timeout) would wait for n
        msgs = consumer.consume(1, 0.2)
        msgs = [m for m in msgs + (consumer.consume(spec["max_poll_records"] - 1, 0) if msgs else []) if not m.error()]
        if not msgs:
            continue
        now = round(time.time(), 6)
        for m in msgs:
            out["consumed"].append([m.topic(), m.partition(), m.offset()])
            out["received"].append([m.topic(), m.partition(), m.offset(), now])
            received += 1
        if stall_after is not None and received >= stall_after:
            stall_after = None
            out["stall_wall"] = time.time()
            _stall(out, event, consumer.memberid() or "", -1, len(msgs), log)
            out["resume_wall"] = time.time()
        try:
            consumer.commit(asynchronous=False)
        except KafkaException as exc:
            event("commit_failed", error_name=exc.args[0].name(), wall=time.time())
    consumer.close()
    event("left")


def _names(partitions) -> list[str]:
    """`topic:partition` of kafka-python TopicPartitions or confluent-kafka ones, sorted."""
    return sorted(f"{tp.topic}:{tp.partition}" for tp in partitions)


class _Callbacks(ConsumerRebalanceListener):
    """kafka-python's rebalance callbacks as events: revoked runs just before the member sends JoinGroup (with
    nothing, on its first join), assigned once its SyncGroup response is in."""

    def __init__(self, coordinator, event) -> None:
        self.coordinator, self.event = coordinator, event

    def on_partitions_revoked(self, revoked) -> None:
        generation = self.coordinator._generation
        self.event("partitions_revoked", member_id=generation.member_id, generation_id=generation.generation_id,
                   partitions=_names(revoked))

    def on_partitions_assigned(self, assigned) -> None:
        generation = self.coordinator._generation
        self.event("partitions_assigned", member_id=generation.member_id, generation_id=generation.generation_id,
                   partitions=_names(assigned))


_HEARTBEAT = re.compile(r'ConsumerGroupHeartbeat response received for member id "([^"]*)" with epoch (-?\d+)')


def member_epochs(lines: list[tuple[float, str]]) -> tuple[list[dict], list[float]]:
    """Member ids/epochs the broker answered (with the wall-clock time of the first answer), and the moments the
    client found itself fenced, from librdkafka's consumer-group debug log (it does not log the heartbeat's error
    code itself)."""
    epochs: list[dict] = []
    fenced: list[float] = []
    for ts, line in lines:
        m = _HEARTBEAT.search(line)
        if m and (not epochs or (epochs[-1]["member_id"], epochs[-1]["member_epoch"]) != (m.group(1), int(m.group(2)))):
            epochs.append({"member_id": m.group(1), "member_epoch": int(m.group(2)), "wall": ts})
        elif "initiating rebalance" in line and "member fenced" in line:
            fenced.append(ts)
    return epochs, fenced


_SHARE_HEARTBEAT = re.compile(r'ShareGroupHeartbeat of group id "([^"]*)", member id "([^"]*)", member epoch (-?\d+)')


def share_fences(lines: list[tuple[float, str]]) -> list[dict]:
    """Moments a librdkafka share consumer found itself fenced, with the member id and epoch it had sent.

    librdkafka logs "member fenced - rejoining" for both FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID without the
    code; callers name the error from what the broker knew (see the share workloads).
    """
    fences: list[dict] = []
    last: tuple[str, str, int] | None = None
    for ts, line in lines:
        m = _SHARE_HEARTBEAT.search(line)
        if m:
            last = (m.group(1), m.group(2), int(m.group(3)))
        elif "initiating rebalance" in line and "member fenced" in line and last:
            fences.append({"wall": ts, "group_id": last[0], "member_id": last[1], "member_epoch": last[2]})
    return fences


class MemberProcess:
    """Parent side: starts a member process from a spec, stops it with its stop file, reads its result."""

    def __init__(self, workdir: Path, spec: dict) -> None:
        self.client_id, self.workdir = spec["client_id"], workdir
        self.stop_file, self.out = workdir / f"{self.client_id}.stop", workdir / f"{self.client_id}.json"
        spec = {**spec, "stop_file": str(self.stop_file), "out": str(self.out)}
        spec_path = workdir / f"{self.client_id}.spec.json"
        spec_path.write_text(json.dumps(spec))
        self.log_path = workdir / f"{self.client_id}.log"
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "kafkatap.samples.workloads.member", str(spec_path)],
                                     stdout=self.log_file, stderr=subprocess.STDOUT, cwd=Path(__file__).parents[2])

    def stalled(self) -> bool:
        """Whether the member has frozen itself (its stall point); raises if it ended instead."""
        pid, status = os.waitpid(self.proc.pid, os.WNOHANG | os.WUNTRACED)
        if pid == 0:
            return False
        if os.WIFSTOPPED(status):
            return True
        raise RuntimeError(f"{self.client_id} ended (wait status {status}) instead of stalling: "
                           f"{self.log_path.read_text()[-2000:]}")

    def wait_stalled(self, timeout: float, feed) -> None:
        """Call `feed()` (produce a few records) about once a second until the member stalls: it stalls only
        once it holds records, and whether the partitions it was given still have unread ones depends on timing."""
        deadline = time.monotonic() + timeout
        while not self.stalled():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.client_id} did not stall within {timeout} s")
            feed()
            for _ in range(10):
                if self.stalled():
                    return
                time.sleep(0.1)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self, timeout: float = 30) -> dict:
        self.stop_file.touch()
        try:
            self.proc.wait(timeout)
        finally:
            self.kill()
        if not self.out.exists():
            raise RuntimeError(f"{self.client_id} wrote no result: {self.log_path.read_text()[-2000:]}")
        return json.loads(self.out.read_text())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(5)
        self.log_file.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
