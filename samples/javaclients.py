"""The Java reference clients of a sample: the programs of samples/java, each in its own JVM, driven over stdin.

A program prints its ground truth as JSON lines on stdout (read here as they come) and logs to stderr (a file in the
work folder): its NetworkClient's DEBUG lines name every request it sent and every response it received, read back
by `read_log` into exact request counts and the response errors, the way samples/clients.py reads librdkafka's log.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatap.samples.clients import RequestLog, kafka_python_error_name
from kafkatap.samples.kafka import HOME, VERSION, classpath
from kafkatap.samples.truth import API_KEYS, Truth

LIBRARY = f"Apache Kafka Java client {VERSION}"
LOG4J = Path(__file__).parent / "java" / "log4j2-clients.properties"
_HEADER = r"RequestHeader\(apiKey=(\w+), apiVersion=\d+, clientId=([^,]*), correlationId=-?\d+"
_SENT = re.compile(r"^(\d+) DEBUG .*? Sending \w+ request with header " + _HEADER)
_RECEIVED = re.compile(r"^(\d+) DEBUG .*? Received \w+ response from node \S+ for request with header " + _HEADER
                       + r"[^)]*\): (.*)$")
_CANCELLED = re.compile(r"^\d+ DEBUG .*?\[\w+ clientId=([^,\]]*)[,\]].*? Cancelled in-flight (\w+) request with "
                        r"correlation id -?\d+ due to node \S+ being disconnected")
_ERROR_CODE = re.compile(r"errorCode=(-?\d+)")
_MEMBER = re.compile(r"memberId='([^']*)', memberEpoch=(-?\d+)")
_PRODUCER = re.compile(r"producerId=(\d+), producerEpoch=(\d+)")
_HEARTBEATS = ("ConsumerGroupHeartbeat", "StreamsGroupHeartbeat")  # KIP-848 and KIP-1071: member id and epoch
_API_NAMES = {name.lower(): name for name in API_KEYS}


def api_of(enum_name: str) -> str:
    """Kafka's api name from the Java client's ApiKeys constant: CONSUMER_GROUP_HEARTBEAT -> ConsumerGroupHeartbeat."""
    return _API_NAMES.get(enum_name.replace("_", "").lower(), f"java:{enum_name}")


def classes() -> Path:
    """The compiled programs of samples/java (`make kafka`)."""
    path = HOME / "classes"
    if not (path / ".compiled").exists():
        raise FileNotFoundError(f"the Java sample programs are not compiled in {path}: run `make kafka`")
    return path


class JavaClient:
    """One program of samples/java running in its own JVM; `events` fills with its JSON lines as they arrive."""

    def __init__(self, main: str, args: list[str], log: Path) -> None:
        self.main, self.log = main, log
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 f"-Dlog4j2.configurationFile={LOG4J}", "-cp", classpath(classes()), main, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()

    def wait_for(self, what: str, timeout: float, count: int = 1, where=lambda event: True) -> dict[str, Any]:
        """The `count`-th event `what` for which `where` holds (waiting at most `timeout` seconds for it)."""
        def found() -> list[dict]:
            return [e for e in self.events if e["what"] == what and where(e)]
        with self._cond:
            if not self._cond.wait_for(lambda: len(found()) >= count or self.proc.poll() is not None, timeout) \
                    or len(found()) < count:
                raise TimeoutError(f"{self.main}: no {what} #{count} within {timeout} s (exit {self.proc.poll()}; "
                                   f"log {self.log}); events: {self.events[-5:]}")
            return found()[count - 1]

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Ask it to close ("stop" on stdin), wait for it to exit; kill it past `timeout`. Returns its events."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a frozen program cannot read its stdin
            try:
                self.send("stop")
                self.proc.stdin.close()
                self.proc.wait(timeout)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.kill()
        self._reader.join(5)
        return self.events

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


class JavaClients:
    """The programs a workload started, in order, each logging to a file of its own in `logs`."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        logs.mkdir()
        self.programs: list[JavaClient] = []

    def start(self, main: str, client_id: str, args: list[str]) -> JavaClient:
        program = JavaClient(main, args, self.logs / f"{client_id}-{len(self.programs)}.log")
        self.programs.append(program)
        return program


def producing(producer: JavaClient, client_id: str, truth: Truth, timeout: float) -> Callable[[int], None]:
    """`produce(n)` for a SampleProducer program: sends n records and returns once they are acknowledged (its nth
    `acked` line), then records the truth's `produced` event, so a workload's next step sees them on the broker."""
    batches = 0

    def produce(n: int) -> None:
        nonlocal batches
        producer.send(f"produce {n}")
        batches += 1
        producer.wait_for("acked", timeout, count=batches)
        truth.event(client_id, "produced", records=n)
    return produce


@dataclass
class ClientLog:
    """What a program's log says its clients exchanged with the brokers."""
    sent: Counter = field(default_factory=Counter)  # (client_id, api) -> requests sent
    # (client_id, api) -> of those, cancelled in flight because their broker disconnected: written to the socket or
    # not (a broker shutting down closes the connection while the client may still be writing), the client cannot tell
    cancelled: Counter = field(default_factory=Counter)
    errors: list[tuple[float, str, str, str]] = field(default_factory=list)  # (wall, client_id, api, error_name)
    # (wall, client_id, member_id, member_epoch): 0 when it joins, then the epochs the coordinator hands it
    member_epochs: list[tuple[float, str, str, int]] = field(default_factory=list)
    # (wall, client_id, api, producer_id, producer_epoch): handed by InitProducerId, and by EndTxn in transactions v2
    producer_epochs: list[tuple[float, str, str, int, int]] = field(default_factory=list)


def read_log(path: Path) -> ClientLog:
    """A program's log read back: the requests it sent, the responses it received with a non-zero error code (the
    top-level one, else the first nested one), and the member ids and epochs of its ConsumerGroupHeartbeats and
StreamsGroupHeartbeats, in order:
    epoch 0 for each request that joins (or rejoins) the group, and the epoch every successful response handed it."""
    out = ClientLog()
    for line in path.read_text(errors="replace").splitlines():
        m = _SENT.match(line)
        if m:
            api = api_of(m.group(2))
            out.sent[(m.group(3), api)] += 1
            joining = _MEMBER.search(line) if api in _HEARTBEATS else None
            if joining and joining.group(2) == "0":
                out.member_epochs.append((int(m.group(1)) / 1000, m.group(3), joining.group(1), 0))
            continue
        m = _CANCELLED.match(line)
        if m:
            out.cancelled[(m.group(1), api_of(m.group(2)))] += 1
            continue
        m = _RECEIVED.match(line)
        if not m:
            continue
        wall, api, client, body = int(m.group(1)) / 1000, api_of(m.group(2)), m.group(3), m.group(4)
        code = next((int(c) for c in _ERROR_CODE.findall(body) if c != "0"), 0)
        if code:
            out.errors.append((wall, client, api, kafka_python_error_name(code)))
        elif api in _HEARTBEATS:
            member = _MEMBER.search(body)
            if member and int(member.group(2)) > 0:
                out.member_epochs.append((wall, client, member.group(1), int(member.group(2))))
        elif api in ("InitProducerId", "EndTxn"):
            producer = _PRODUCER.search(body)
            if producer:
                out.producer_epochs.append((wall, client, api, int(producer.group(1)), int(producer.group(2))))
    return out


def record(truth: Truth, requests: RequestLog, programs: list[JavaClient], groups: dict[str, str]) -> list[ClientLog]:
    """The programs' JSON lines into the truth's events, with the offsets they acknowledged ("acked") and consumed
    ("records", as members of `groups`: client id -> group id); their logs' requests and response errors into
    `requests`, the requests cancelled in flight into the truth's `cancelled_requests`. Returns each program's log,
    read back."""
    logs = []
    for program in programs:
        log = read_log(program.log)
        logs.append(log)
        requests.merge({cid: {api: n for (c, api), n in log.sent.items() if c == cid} for cid, _ in log.sent},
                       [(cid, api, name) for _, cid, api, name in log.errors])
        for (cid, api), n in sorted(log.cancelled.items()):
            per_api = truth.doc.setdefault("cancelled_requests", {}).setdefault(cid, {})
            per_api[api] = per_api.get(api, 0) + n
        for e in program.events:
            detail = {k: v for k, v in e.items() if k not in ("wall", "client_id", "what")}
            truth.doc["events"].append({"t": round(e["wall"] - truth.t0_wall, 3), "client_id": e["client_id"],
                                        "what": e["what"], "wall": e["wall"], **detail})
            if e["what"] == "acked":
                for tp, offsets in e["offsets"].items():
                    topic, part = tp.rsplit(":", 1)
                    for off in offsets:
                        truth.produced(e["client_id"], topic, int(part), off)
            elif e["what"] == "records":
                for off in e["offsets"]:
                    truth.consumed(e["client_id"], groups[e["client_id"]], "consumer_group", e["topic"],
                                   e["partition"], off)
    return logs


def reached_epochs(epochs: dict[str, list[dict]], log: ClientLog) -> None:
    """Add the member ids and epochs the log's members reached to `epochs` (client id -> steps, each change once):
    0 at every join, then what their heartbeat responses handed them."""
    for _, cid, member_id, epoch in log.member_epochs:
        reached = epochs.setdefault(cid, [])
        if not reached or reached[-1] != {"member_id": member_id, "member_epoch": epoch}:
            reached.append({"member_id": member_id, "member_epoch": epoch})


def fenced_after_freeze(truth: Truth, log: ClientLog, kind: str, group_id: str, stall: dict[str, Any],
                        froze_past: str) -> None:
    """The fencing of a member frozen (SIGSTOP) at `stall` (its `client_id`, `member_id` and `wall`) until the
    coordinator removed it, as its own log has it: the error its first refused request after the freeze was answered
    (its heartbeat thread, resumed first, may be refused before its application thread notices anything), with
    every refusal since in the detail; `froze_past` names the timeout it outlasted."""
    refused = [(wall, api, name) for wall, cid, api, name in log.errors
               if cid == stall["client_id"] and wall >= stall["wall"]]
    if not refused:
        raise RuntimeError(f"{stall['client_id']} was not refused after its freeze")
    wall, api, name = refused[0]
    truth.fenced(kind, name, stall["client_id"], group_id=group_id, member_id=stall["member_id"],
                 detail=f"froze past {froze_past}; first refused request after the resume: {api}; refusals: "
                        + ", ".join(f"{a} {e}" for a, e in sorted(Counter(r[1:] for r in refused))),
                 t=round(wall - truth.t0_wall, 3))
