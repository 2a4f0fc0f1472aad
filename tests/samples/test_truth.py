"""Each bundled sample's ground truth agrees with its capture: structure, tshark's view, and the dissector's Parquet.

The truth is what the clients did and saw (written by samples/workloads/*); these tests check the counts it states
against what is on the wire, so a wrong truth file or a dissector that drops or invents frames both fail here.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.samples import available, capture_path, load_truth
from kafkatap.samples.make import MAX_CAPTURE_BYTES
from kafkatap.samples.truth import API_KEYS, API_NAMES, request_bounds, validate

SAMPLES = available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not SAMPLES, reason="no sample captures on disk")]


@pytest.mark.parametrize("name", SAMPLES)
def test_truth_is_well_formed(name: str) -> None:
    truth = load_truth(name)
    assert validate(truth) == []
    assert truth["sample"] == name
    assert truth["capture"] == capture_path(name).name
    assert capture_path(name).stat().st_size < MAX_CAPTURE_BYTES
    assert truth["broker_ports"] and all(19000 <= p < 20000 or p > 32767 for p in truth["broker_ports"])
    assert truth["requests"]["by_api"] == dict(sum((Counter(v) for v in truth["requests"]["by_client"].values()),
                                                   Counter()))
    client_ids = {c["client_id"] for c in truth["clients"]}
    assert set(truth["requests"]["by_client"]) <= client_ids
    assert {c["client_id"] for c in truth["consumed"]} <= client_ids
    total = Counter()
    for p in truth["produced"]:
        total[f"{p['topic']}/{p['partition']}"] += p["records"]
        assert p["topic"] in truth["topics"]
    assert dict(total) == truth["produced_by_partition"]


def _tshark_requests(name: str, ports: list[int]) -> Counter:
    decode_as = [a for p in ports for a in ("-d", f"tcp.port=={p},kafka")]
    out = subprocess.run(
        ["tshark", "-r", str(capture_path(name)), *decode_as, "-o", "tcp.desegment_tcp_streams:TRUE",
         "-T", "fields", "-E", "occurrence=a",
         "-e", "kafka.client_id", "-e", "kafka.request_key"],
        capture_output=True, text=True, check=True, timeout=120).stdout
    counts: Counter = Counter()
    for line in out.splitlines():
        clients, keys = (line.split("\t") + [""])[:2]
        for client, key in zip(clients.split(","), keys.split(",")):
            if key:
                counts[(client, API_NAMES[int(key)])] += 1
    return counts


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize("name", [n for n in SAMPLES if not load_truth(n)["synthetic"]])
def test_tshark_sees_the_requests_the_truth_states(name: str) -> None:
    """An independent decoder (Wireshark's) finds exactly the requests the clients logged, per client and api (but
    for those they cancelled in flight, which may not have been written); in a cluster's capture, the brokers' own
    clients besides (their request logs' counts are approximate)."""
    truth = load_truth(name)
    expected = Counter({(c, api): n for c, per_api in truth["requests"]["by_client"].items()
                        for api, n in per_api.items()})
    got = _tshark_requests(name, truth["broker_ports"])
    brokers = truth.get("broker_requests", {}).get("by_client", {})
    assert {c for c, _ in got} - set(truth["requests"]["by_client"]) == set(brokers)
    got = Counter({k: n for k, n in got.items() if k[0] not in brokers})
    assert set(got) <= set(expected)
    assert all(fewest <= got[k] <= most for k, (fewest, most) in request_bounds(truth).items()), (got, expected)


# ---- the dissector's Parquet output against the truth ------------------------------------------------------------

@pytest.fixture(scope="module")
def dissected(tmp_path_factory: pytest.TempPathFactory) -> dict:
    run = pytest.importorskip("kafkatap.dissect.run")
    out: dict = {}
    for name in SAMPLES:
        target = tmp_path_factory.mktemp(name)
        run.dissect_captures([str(capture_path(name))], str(target), ports=load_truth(name)["broker_ports"])
        out[name] = {table: _read(target / table) for table in ("frames", "batches", "share")}
    return out


def _read(directory: Path) -> list[dict]:
    files = sorted(directory.glob("*.parquet"))
    return [row for f in files for row in pq.read_table(f).to_pylist()]


@pytest.mark.parametrize("name", SAMPLES)
def test_requests_by_client_and_api(name: str, dissected: dict) -> None:
    truth = load_truth(name)
    frames = [f for f in dissected[name]["frames"] if f["status"] != "unpaired_response"]
    seen = Counter((f["client_id"], f["api_name"]) for f in frames)
    bounds = request_bounds(truth)  # exact, but for requests a client cancelled in flight
    for client in truth["requests"]["by_client"]:
        got = {api: n for (c, api), n in seen.items() if c == client}
        assert {api for api, n in got.items() if n} <= {api for c, api in bounds if c == client}, client
        for (c, api), (fewest, most) in bounds.items():
            assert c != client or fewest <= got.get(api, 0) <= most, (client, api)
    if "broker_by_api" in truth["requests"]:  # what the mock itself counted, over its ports only
        mock_ports = set(truth["broker_ports_by_kind"]["librdkafka_mock"])
        at_mock = Counter(f["api_name"] for f in frames if int(f["broker_addr"].rsplit(":", 1)[1]) in mock_ports)
        assert dict(at_mock) == truth["requests"]["broker_by_api"]


@pytest.mark.parametrize("name", SAMPLES)
def test_produced_records_per_partition(name: str, dissected: dict) -> None:
    truth = load_truth(name)
    produced: Counter = Counter()
    for b in dissected[name]["batches"]:
        if b["direction"] == "produce" and not b["partition_error_code"]:
            produced[f"{b['topic']}/{b['partition']}"] += b["record_count"]
    assert dict(produced) == truth["produced_by_partition"]


@pytest.mark.parametrize("name", SAMPLES)
def test_consumed_offsets_were_fetched(name: str, dissected: dict) -> None:
    """Every offset a consumer's application received was in a fetch response batch for its partition."""
    truth = load_truth(name)
    fetched: dict[tuple, list[tuple[int, int]]] = {}
    for b in dissected[name]["batches"]:
        if b["direction"] in ("fetch", "share_fetch") and not b["is_control"]:
            fetched.setdefault((b["topic"], b["partition"]), []).append((b["base_offset"], b["last_offset"]))
    for c in truth["consumed"]:
        spans = fetched.get((c["topic"], c["partition"]), [])
        for first, last in c["offsets"]:
            for off in (first, last):
                assert any(a <= off <= b for a, b in spans), (c["client_id"], c["topic"], c["partition"], off)


@pytest.mark.parametrize("name", SAMPLES)
def test_duplicate_deliveries_are_on_the_wire(name: str, dissected: dict) -> None:
    """A range the truth says was delivered n times was carried by at least n fetch responses."""
    truth = load_truth(name)
    for d in truth["duplicate_deliveries"]:
        carriers = {(b["conn_id"], b["correlation_id"]) for b in dissected[name]["batches"]
                    if b["direction"] in ("fetch", "share_fetch") and b["topic"] == d["topic"]
                    and b["partition"] == d["partition"] and b["base_offset"] <= d["first_offset"] <= b["last_offset"]}
        assert len(carriers) >= d["deliveries"], d


@pytest.mark.parametrize("name", SAMPLES)
def test_fencing_errors_in_frames(name: str, dissected: dict) -> None:
    truth = load_truth(name)
    errors = Counter((f["client_id"], f["api_name"], f["error_name"]) for f in dissected[name]["frames"]
                     if f["error_name"] not in (None, "NONE"))
    for fenced in truth["fenced_epochs"]:
        assert any(c == fenced["client_id"] and e == fenced["error_name"] for c, _, e in errors), fenced
    for client, per_api in truth["response_errors"].items():
        for api, per_error in per_api.items():
            for error, n in per_error.items():
                assert errors[(client, api, error)] == n, (client, api, error)


@pytest.mark.parametrize("name", [n for n in SAMPLES if load_truth(n)["share_deliveries"]])
def test_share_deliveries_acquired(name: str, dissected: dict) -> None:
    """Each record a share consumer received was in an acquired range with the delivery count the client saw."""
    truth = load_truth(name)
    acquired = [r for r in dissected[name]["share"] if r["kind"] == "acquired"]
    for d in truth["share_deliveries"]:
        assert any(r["topic"] == d["topic"] and r["partition"] == d["partition"]
                   and r["first_offset"] <= d["offset"] <= r["last_offset"]
                   and r["delivery_count"] == d["delivery_count"] for r in acquired), d


def test_api_table_is_consistent() -> None:
    assert all(API_KEYS[name] == key for key, name in API_NAMES.items())
    assert API_NAMES[18] == "ApiVersions" and API_NAMES[68] == "ConsumerGroupHeartbeat" and API_NAMES[79] == (
        "ShareAcknowledge")
