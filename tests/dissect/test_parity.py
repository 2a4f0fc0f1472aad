"""The compiled dissector core against the pure-Python reference, the pure side in a process started with
KAFKATAP_PURE_PYTHON=1: every sample, and every kind of fault the fault tests inject (reordered, duplicated and
dropped segments, a capture starting mid-stream, noise and TLS on the Kafka port, absurd length prefixes, cut files)
and a seeded corpus of Kafka-level mutations, dissected both ways (every other fault capture with the records/ table
and payloads), must give identical tables and summaries. tests/dissect/packets/test_compiled.py does the same for
damaged capture files; test_module_parity.py holds each compiled module to its twin."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect import native
from kafkatap.dissect.run import dissect_captures
from tests.support.mutations import mutate
from tests.support.paths import SAMPLES
from tests.support.pcap import TcpFlow, pcap_bytes, timed
from tests.support.replay import Replay

UNSTABLE_SUMMARY = ("elapsed_s", "output")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(native.missing()), reason="the compiled core is not built (pure-Python run)")]


def faults(replay: Replay) -> dict[str, list[bytes]]:
    """Packet lists, one per kind of fault, all over the sample's own connections."""
    rnd = random.Random(1124)
    clean = [s.frame for s in replay.segments()]
    shuffled = list(clean)
    for i in range(0, len(shuffled) - 8, 8):
        window = shuffled[i:i + 8]
        rnd.shuffle(window)
        shuffled[i:i + 8] = window
    noise = TcpFlow(client=("127.0.0.1", 50001), server=("127.0.0.1", replay.port))
    tls = TcpFlow(client=("127.0.0.1", 50002), server=("127.0.0.1", replay.port))

    def edited(edit: Callable[[int, int, int, bytes], bytes]) -> list[bytes]:
        return [s.frame for s in replay.segments(edit=edit)]

    out = {
        "reordered": shuffled,
        "duplicated": [f for f in clean for _ in range(1 + (rnd.random() < 0.1))],
        "dropped": [f for f in clean if rnd.random() > 0.03],
        "mid_stream": [s.frame for s in replay.segments(handshake=False)][len(clean) // 3:],
        "noise": clean + noise.handshake() + noise.send(0, rnd.randbytes(20000)) + noise.send(1, rnd.randbytes(5000)),
        "tls": clean + tls.handshake() + tls.send(0, b"\x16\x03\x01\x02\x00" + rnd.randbytes(512)) + tls.fin(0),
    }
    for n, prefix in enumerate((b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", struct.pack(">i", 200 << 20))):
        out[f"absurd{n}"] = edited(lambda c, s, i, d, p=prefix: p + bytes(range(64)) + d if i == 3 and s == 0 else d)
    for n in range(24):
        out[f"mutated{n}"] = edited(lambda c, s, i, d: mutate(d, rnd, 0) if rnd.random() < 0.05 else d)
    return out


def tables(out: Path) -> tuple[dict, dict]:
    summary = json.loads((out / "summary.json").read_text())
    return ({t.name: pq.read_table(t) for t in sorted(out.iterdir()) if t.is_dir()},
            {k: v for k, v in summary.items() if k not in UNSTABLE_SUMMARY})


def test_faults_and_mutations_give_the_same_output_on_both_paths(tmp_path: Path) -> None:
    """The compiled default against the pure path in a process of its own (KAFKATAP_PURE_PYTHON=1, as a user selects
    it), on every fault capture and the mutated corpus."""
    replay = Replay("produce_consume")
    captures = {name: pcap_bytes(timed(frames)) for name, frames in faults(replay).items()}
    whole = captures["reordered"]
    captures["cut"] = whole[:len(whole) * 2 // 3]
    captures["day_in_the_life"] = (SAMPLES / "day_in_the_life.pcapng").read_bytes()
    runs = []
    for n, (name, data) in enumerate(captures.items()):
        capture = tmp_path / f"{name}.pcap"
        capture.write_bytes(data)
        records = n % 2 == 0  # the compiled fast paths for record data run only without the records/ table
        runs.append(Run(str(capture), str(tmp_path / "pure" / name), [replay.port], records))
    _assert_same_on_both_paths(runs, tmp_path / "compiled")


class Run(NamedTuple):
    capture: str
    out: str  # the pure path's output folder
    ports: list[int]
    records: bool  # with the records/ table and payloads


_PURE_RUN = """
import json, sys
from kafkatap.dissect import native
from kafkatap.dissect.run import dissect_captures
assert not native.compiled, "KAFKATAP_PURE_PYTHON did not select the pure-Python path"
for capture, out, ports, records in json.loads(sys.argv[1]):
    dissect_captures([capture], out, ports=ports, records=records, payloads=records)
"""


def _assert_same_on_both_paths(runs: list[Run], compiled: Path) -> None:
    """Each run dissected here (the compiled default) into `compiled`, and by one KAFKATAP_PURE_PYTHON=1 process (a
    process of its own, so nothing the compiled modules bound at import is in the way): the same tables and
    summary."""
    for run in runs:
        dissect_captures([run.capture], str(compiled / Path(run.out).name), ports=run.ports, records=run.records,
                         payloads=run.records)
    env = {**os.environ, native.ENV: "1"}
    subprocess.run([sys.executable, "-c", _PURE_RUN, json.dumps(runs)], env=env, check=True, timeout=900)
    for run in runs:
        (ours, our_summary), (theirs, their_summary) = tables(compiled / Path(run.out).name), tables(Path(run.out))
        assert our_summary == their_summary, run.capture
        assert ours.keys() == theirs.keys(), run.capture
        for table in ours:
            assert ours[table].equals(theirs[table], check_metadata=True), (run.capture, table)


def test_every_sample_is_the_same_from_a_pure_python_process(tmp_path: Path) -> None:
    """The pure path as a user selects it against the compiled default, on every sample with its own ports."""
    runs = []
    for truth_path in sorted(SAMPLES.glob("*.truth.json")):
        truth = json.loads(truth_path.read_text())
        capture = SAMPLES / truth["capture"]
        runs.append(Run(str(capture), str(tmp_path / "pure" / capture.stem), truth["broker_ports"], True))
    _assert_same_on_both_paths(runs, tmp_path / "compiled")


def _record_data() -> dict[str, bytes]:
    """Record data of every kind the batches/ rows tell apart. The compiled rows of plain data (magic 2 batches with
    their CRCs, no control batch) are written straight from the batch headers; every other kind goes through
    batch_row.batch_rows, as a partition beside plain ones does."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    from kafkatap.dissect.tables.batch_row import MAX_MS
    from kafkatap.samples.synthetic import CONTROL_COMMIT, control_batch, record_batch

    gzip = DefaultRecordBatchBuilder(2, 1, False, 9, 0, 0, 1 << 20)
    gzip.append(0, 1_700_000_000_000, b"k", b"v" * 300, [])
    legacy = LegacyRecordBatchBuilder(1, 0, 1 << 20)
    legacy.append(0, 1_700_000_000_000, b"k", b"v")
    plain = b"".join([record_batch(0, [(b"k", b"v")] * 3, 1_700_000_000_000),
                      record_batch(3, [(None, b"v")], -1, producer_id=7, producer_epoch=2, base_sequence=5),
                      record_batch(4, [(b"k", None)], MAX_MS + 1, producer_id=7, producer_epoch=3, base_sequence=0,
                                   transactional=True),
                      record_batch(5, [(b"k", b"v")], MAX_MS), bytes(gzip.build())])
    damaged = bytearray(record_batch(0, [(b"k", b"v")], 1_700_000_000_000))
    damaged[-1] ^= 0xFF
    return {"plain": plain, "cut": plain + record_batch(9, [(b"k", b"v")], 1)[:40],
            "control": plain + control_batch(9, CONTROL_COMMIT, 1_700_000_000_000, 7, 3), "damaged": bytes(damaged),
            "legacy": bytes(legacy.build())}


def test_every_kind_of_record_data_gives_the_same_batches_on_both_paths(tmp_path: Path) -> None:
    """Produce requests and Fetch responses carrying each kind of record data alone, and beside plain data, answered
    or not: the compiled default and the pure path write the same batches/ rows."""
    from kafkatap.dissect.protocol.generated.api_keys import ApiKey
    from tests.support.kafka_messages import fetch_partition, request, response

    data = _record_data()
    produce, fetch, port = ApiKey.PRODUCE, ApiKey.FETCH, 39093
    flow = TcpFlow(client=("10.0.0.1", 40000), server=("10.0.0.2", port))
    packets = flow.handshake()

    corr = 0
    for kinds in [[k] for k in data] + [["plain", k] for k in data if k != "plain"]:
        corr += 1
        topic = {"name": "t", "partition_data": [{"index": i, "records": data[k]} for i, k in enumerate(kinds)]}
        packets += flow.send(0, request(produce, 8, corr, {"transactional_id": None, "acks": -1, "timeout_ms": 500,
                                                           "topic_data": [topic]}))
        if kinds != ["plain", "legacy"]:  # one Produce left unanswered: its batches' rows without a response
            answer = [{"index": i, "error_code": 0 if k != "damaged" else 2, "base_offset": 100 * corr + i,
                       "log_append_time_ms": -1, "log_start_offset": 0, "record_errors": [], "error_message": None}
                      for i, k in enumerate(kinds)]
            answered = {"responses": [{"name": "t", "partition_responses": answer}], "throttle_time_ms": 0}
            packets += flow.send(1, response(produce, 8, corr, answered))
        corr += 1
        asked = [{"partition": i, "current_leader_epoch": -1, "fetch_offset": 1, "log_start_offset": -1,
                  "partition_max_bytes": 1 << 20} for i in range(len(kinds))]
        packets += flow.send(0, request(fetch, 11, corr, {
            "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": "t", "partitions": asked}],
            "forgotten_topics_data": [], "rack_id": ""}))
        fetched = [fetch_partition(data[k], i, 20) for i, k in enumerate(kinds)]
        packets += flow.send(1, response(fetch, 11, corr, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                                                           "responses": [{"topic": "t", "partitions": fetched}]}))
    capture = tmp_path / "record_data.pcap"
    capture.write_bytes(pcap_bytes(timed(packets + flow.fin(0) + flow.fin(1))))
    run = Run(str(capture), str(tmp_path / "pure" / "record_data"), [port], False)
    _assert_same_on_both_paths([run], tmp_path / "compiled")

    table = pq.read_table(tmp_path / "compiled" / "record_data" / "batches")
    for name in ("first_timestamp", "max_timestamp"):  # as integers: MAX_MS is past datetime's years
        table = table.set_column(table.schema.get_field_index(name), name, table[name].cast("int64"))
    batches = table.to_pylist()
    produced = [b for b in batches if b["direction"] == "produce"]
    assert {b["compression"] for b in batches} == {"none", "gzip"} and {b["magic"] for b in batches} == {1, 2}
    assert [b["crc_ok"] for b in produced if b["partition"] == 0].count(False) == 1  # the damaged batch, alone
    assert {(b["first_timestamp"] is None, b["max_timestamp"] is None) for b in produced} == {(False, False),
                                                                                           (True, True)}
    assert any(b["is_control"] for b in batches) and any(b["is_transactional"] for b in batches)
    assert any(b["assigned_offset"] is None for b in produced) and any(b["partition_error_code"] == 2 for b in produced)
