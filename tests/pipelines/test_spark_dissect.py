"""The Spark dissect (files read in splits, connections spread over partitions) writes what the local dissect
writes: the same rows in every table, and summary.json as `--workers N` writes it with N the partitions, plus
`splits`; that summary equals the one-process one but for `workers` and `topic_ids_named_late`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tables.schema import TABLES
from kafkatap.pipelines.spark_dissect import dissect_on_spark
from tests.support.paths import SAMPLES

pytestmark = pytest.mark.spark
PARTS = 3
CAPTURES = sorted(SAMPLES.glob("*.pcapng"))


@pytest.fixture(autouse=True)
def python_workers(spark):
    """The RDD tasks run Python: this one, whatever `python3` the PATH has."""
    spark.sparkContext.pythonExec = sys.executable


def ports(capture: Path) -> list[int]:
    return json.loads(capture.with_name(capture.name.replace(".pcapng", ".truth.json")).read_text())["broker_ports"]


def rows(out: Path, table: str, drop: tuple[str, ...] = ()) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k not in drop}, default=str, sort_keys=True)
                  for r in pq.read_table(out / table).to_pylist())


def same_tables(a: Path, b: Path, drop: tuple[str, ...] = ()) -> None:
    for table in TABLES:
        assert rows(a, table, drop) == rows(b, table, drop), table


def local(files: list[Path], out: Path, ports: list[int], workers: int = PARTS) -> dict:
    return dissect_captures([str(f) for f in files], str(out), ports=ports, records=True, workers=workers)


def on_spark(spark, files: list[Path], out: Path, ports: list[int], split_size: int) -> dict:
    return dissect_on_spark(spark, [str(f) for f in files], str(out), ports=ports, records=True,
                            split_size=split_size, parts=PARTS)


@pytest.mark.slow
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_every_sample_as_the_local_run(spark, tmp_path: Path, capture: Path) -> None:
    split_size = capture.stat().st_size // 3 + 1
    summary = on_spark(spark, [capture], tmp_path / "spark", ports(capture), split_size)
    assert summary.pop("splits") == 3
    assert summary == local([capture], tmp_path / "local", ports(capture))
    same_tables(tmp_path / "spark", tmp_path / "local")
    one = local([capture], tmp_path / "one", ports(capture), workers=1)
    same_tables(tmp_path / "spark", tmp_path / "one")
    assert without_spread(summary) == without_spread(one)


def without_spread(summary: dict) -> dict:
    """A summary without what depends on how the connections were spread over workers."""
    return {k: v for k, v in summary.items() if k not in ("workers", "topic_ids_named_late")}


@pytest.mark.slow
def test_a_ring_of_files_is_one_capture(spark, tmp_path: Path) -> None:
    """The ring dumpcap writes (kafkatap_00000_<time>.pcapng, ...): connections cross files, and the whole ring
    dissects as the file it was cut from."""
    original = SAMPLES / "day_in_the_life.pcapng"
    cut = tmp_path / "cut"
    cut.mkdir()
    subprocess.run(["editcap", "-c", "3000", str(original), str(cut / "kafkatap.pcapng")], check=True,
                   capture_output=True)
    ring = []
    for n, part in enumerate(sorted(cut.iterdir())):
        ring.append(tmp_path / f"kafkatap_{n:05d}_20261124{93000 + n:06d}.pcapng")
        part.rename(ring[-1])
    assert len(ring) >= 3
    summary = on_spark(spark, ring, tmp_path / "spark", ports(original), 200_000)
    assert summary["splits"] > len(ring)
    whole = local([original], tmp_path / "whole", ports(original), workers=1)
    assert summary["frames_by_status"] == whole["frames_by_status"]
    assert sum(whole["frames_by_status"].values()) == 2787 and whole["frames_by_status"]["unpaired_request"] == 5
    same_tables(tmp_path / "spark", tmp_path / "whole", drop=("capture_file", "packet_index", "request_file",
                                                              "request_packet", "response_file", "response_packet"))
    summary.pop("splits")
    assert summary == local(ring, tmp_path / "local", ports(original))
    same_tables(tmp_path / "spark", tmp_path / "local")  # packet numbers too, counted per file of the ring


@pytest.mark.slow
def test_damaged_inputs_as_the_local_run(spark, tmp_path: Path) -> None:
    """A truncated file, a file that is not a capture, and junk bytes inside a pcap: reported, and what can be
    read dissected, as locally."""
    sample = SAMPLES / "produce_consume.pcapng"
    data = sample.read_bytes()
    truncated = tmp_path / "truncated.pcapng"
    truncated.write_bytes(data[:-1000])
    text = tmp_path / "notes.pcap"
    text.write_text("not a capture\n" * 100)
    pcap = tmp_path / "idempotent.pcap"
    subprocess.run(["editcap", "-F", "pcap", str(SAMPLES / "idempotent.pcapng"), str(pcap)], check=True)
    raw = pcap.read_bytes()
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(raw[:len(raw) // 2] + b"\xff" * 37 + raw[len(raw) // 2:])
    files = [truncated, text, junk]
    port = ports(sample) + ports(SAMPLES / "idempotent.pcapng")
    summary = on_spark(spark, files, tmp_path / "spark", port, 20_000)
    assert summary.pop("splits") > 3
    expected = local(files, tmp_path / "local", port)
    assert summary == expected
    assert str(text) in summary["unreadable_files"]
    assert {"truncated_file", "bad_capture_file"} <= set(summary["anomalies_by_kind"])
    same_tables(tmp_path / "spark", tmp_path / "local")


def test_the_command_line_says_when_it_needs_the_console_script(tmp_path: Path) -> None:
    from kafkatap.dissect import cli

    assert cli.main([str(SAMPLES / "idempotent.pcapng"), "-o", str(tmp_path / "o"), "--master", "local[2]"]) == 2
