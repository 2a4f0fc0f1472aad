"""Streamed runs: files taken one at a time, in the order given (a live capture's ring), dissected as they come.

The contract: each file is read as soon as it arrives and before the next is asked for, connections carry on
across files, Parquet becomes readable during the run, and the tables at the end equal those of a run over the
whole list.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.streams.driver import run_streams
from tests.support.kafka_messages import NAMED, fetch_request, fetch_response, metadata_request, metadata_response
from tests.support.paths import SAMPLES
from tests.support.pcap import RecordingSink, TcpFlow, timed, write_pcap

SAMPLE = SAMPLES / "day_in_the_life.pcapng"
TABLES = ("frames", "batches", "records", "share", "anomalies")


def test_each_file_is_read_before_the_next_is_asked_for(tmp_path: Path) -> None:
    flow = TcpFlow()
    frames = timed(flow.handshake() + flow.send(0, b"a" * 5000) + flow.send(1, b"b" * 3000) + flow.fin(0)
                   + flow.fin(1))
    early = write_pcap(tmp_path / "z_early.pcap", frames[:5])
    late = write_pcap(tmp_path / "a_late.pcap", frames[5:])
    (tmp_path / "bad.pcap").write_bytes(b"\0" * 100)
    sink = RecordingSink()
    delivered: list[int] = []  # bytes the sink had when each next file was asked for

    def ring() -> Iterator[str]:
        for path in (early, str(tmp_path / "bad.pcap"), late):
            delivered.append(sum(len(e[3]) for e in sink.events if e[0] == "data"))
            yield path

    stats = run_streams(ring(), sink, ordered=True)
    (conn,) = sink.conns  # one connection across the files
    assert sink.data(conn, 0) == b"a" * 5000 and sink.data(conn, 1) == b"b" * 3000
    assert delivered[0] == 0 and delivered[1] > 0  # the first file was dissected before the second was asked for
    assert stats.files == 2 and stats.anomalies == {"bad_capture_file": 1} and stats.packets == len(frames)


def split(sample: Path, tmp_path: Path, packets: int) -> list[str]:
    """The sample cut into files of `packets` packets each, like a ring of a live capture."""
    (tmp_path / "ring").mkdir()
    subprocess.run(["editcap", "-c", str(packets), str(sample), str(tmp_path / "ring" / "ring.pcapng")], check=True,
                   capture_output=True)
    return sorted(str(p) for p in (tmp_path / "ring").iterdir())


def tables_of(out: Path) -> dict:
    return {name: pq.read_table(out / name) for name in TABLES}


def test_streamed_run_equals_a_run_over_the_list(tmp_path: Path) -> None:
    if not SAMPLE.exists():
        pytest.skip(f"{SAMPLE.name} not recorded")
    ports = json.loads(SAMPLE.with_name("day_in_the_life.truth.json").read_text())["broker_ports"]
    files = split(SAMPLE, tmp_path, 1000)
    assert len(files) >= 8
    streamed, whole = tmp_path / "streamed", tmp_path / "whole"
    rows_while_running: list[int] = []
    progress: list[tuple[int, int]] = []

    def ring() -> Iterator[str]:
        for path in files:
            if (streamed / "frames").is_dir():  # what a reader sees while the run goes on
                rows_while_running.append(pq.read_table(streamed / "frames").num_rows)
            yield path

    got = dissect_captures(ring(), str(streamed), ports=ports, records=True, payloads=True, ordered=True,
                           publish_every=0, on_progress=lambda m, n: progress.append((m, n)))
    want = dissect_captures(files, str(whole), ports=ports, records=True, payloads=True)

    assert got == want  # summary.json, topic ids named late included
    assert got["topic_ids_named_late"] == {"frames": 1}
    for name, table in tables_of(whole).items():
        assert tables_of(streamed)[name].equals(table), name
    assert rows_while_running[0] == 0 and rows_while_running[-1] > 1000
    assert rows_while_running == sorted(rows_while_running)
    parts = sorted((streamed / "frames").glob("part-*.parquet"))
    assert len(parts) >= 8 and all(pq.ParquetFile(p).metadata.num_rows for p in parts)  # no empty file
    assert not list((streamed / "frames").glob(".*"))  # nothing left hidden
    assert progress[-1] == (sum(got["messages_by_api"].values()), sum(Path(f).stat().st_size for f in files))
    assert [n for _, n in progress] == sorted(n for _, n in progress)


def test_ids_named_in_a_later_file_are_rewritten_in_the_published_part(tmp_path: Path) -> None:
    flow = TcpFlow(client=("10.0.0.1", 40000), server=("10.0.0.2", 9092))
    first = flow.handshake() + flow.send(0, fetch_request(1)) + flow.send(1, fetch_response(1))
    second = flow.send(0, metadata_request(2))
    second += flow.send(1, metadata_response(2))
    third = flow.send(0, fetch_request(3)) + flow.send(1, fetch_response(3)) + flow.fin(0)
    frames = timed(first + second + third)
    cut = [0, len(first), len(first) + len(second), len(frames)]
    files = [write_pcap(tmp_path / f"ring_{i}.pcap", frames[a:b]) for i, (a, b) in enumerate(zip(cut, cut[1:]))]
    streamed, whole = tmp_path / "streamed", tmp_path / "whole"
    got = dissect_captures(iter(files), str(streamed), records=True, ordered=True, publish_every=0)
    want = dissect_captures(files, str(whole), records=True)
    assert got["topic_ids_named_late"] == want["topic_ids_named_late"] == {"frames": 1, "batches": 1, "records": 1}
    assert len(list((streamed / "batches").glob("part-*.parquet"))) >= 2
    for name, table in tables_of(whole).items():
        assert tables_of(streamed)[name].equals(table), name
    assert {r["topic"] for r in pq.read_table(streamed / "batches").to_pylist()} >= {"orders"}
    assert NAMED not in {r["topic"] for r in pq.read_table(streamed / "batches").to_pylist()}


def test_streamed_runs_are_in_process(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        dissect_captures(iter([]), str(tmp_path), ordered=True, workers=2)
