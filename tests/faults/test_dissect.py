"""`kafkatap dissect` when things go wrong, driven through the real CLI: inputs that are not captures, output paths it
must not or cannot write, a full disk, and a real Ctrl-C or SIGTERM in the middle of a large run.

Each case checks the exit code, the one line that explains it, that no traceback reached the terminal, and what is
left on disk: published output readable, nothing half-written visible, an earlier output intact after a failure."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.tables.schema import TABLES
from tests.support.bulk import chatty_pcap
from tests.support.cli import assert_one_clean_line, run_cli
from tests.support.disks import tmpfs
from tests.support.paths import SAMPLES
from tests.support.pcap import web_capture, write_pcap

SAMPLE = SAMPLES / "idempotent.pcapng"
LARGER = SAMPLES / "day_in_the_life.pcapng"


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def assert_readable(out: Path) -> None:
    """Every visible Parquet file opens; no hidden file or folder is left beside or inside OUT."""
    for table in TABLES:
        for part in (out / table).glob("*.parquet"):
            pq.read_table(part)
    leftovers = [p.name for p in [*out.parent.iterdir(), *out.rglob("*")] if p.name.startswith(".")]
    assert not leftovers


def test_a_file_that_is_not_a_capture_fails_the_run_but_keeps_its_row(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a capture\n")
    empty = tmp_path / "empty.pcap"
    empty.touch()
    for inputs in ([notes], [empty], [notes, empty]):
        result = run_cli("dissect", *map(str, inputs), "-o", str(tmp_path / "out"), "-q")
        assert_one_clean_line(result, 1, "no input was a capture it could read")
        assert pq.read_table(tmp_path / "out" / "anomalies").column("kind").to_pylist() == \
            ["bad_capture_file"] * len(inputs)
    result = run_cli("dissect", str(notes), str(SAMPLE), "-o", str(tmp_path / "out"), "-q")
    assert_one_clean_line(result, 1, "1 of 2 inputs could not be read as captures")
    assert summary(tmp_path / "out")["rows"]["frames"] > 0
    assert_readable(tmp_path / "out")


def test_output_paths_it_must_not_write(tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("keep me")
    assert_one_clean_line(run_cli("dissect", str(SAMPLE), "-o", str(a_file)), 2, "is a file")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    assert_one_clean_line(run_cli("dissect", str(SAMPLE), "-o", str(theirs)), 2, "not a kafkatap dissect output")
    assert a_file.read_text() == (theirs / "notes.txt").read_text() == "keep me"
    assert_one_clean_line(run_cli("dissect", str(tmp_path / "nope.pcap"), "-o", str(tmp_path / "o")), 2,
                          "no such file")
    assert_one_clean_line(run_cli("dissect", str(tmp_path), "-o", str(tmp_path / "o")), 2, "is a folder")
    assert_one_clean_line(run_cli("dissect", str(SAMPLE), "-o", str(tmp_path / "o"), "--port", "0"), 2,
                          "a port must be")
    assert_one_clean_line(run_cli("dissect", str(SAMPLE), "-o", str(tmp_path / "o"), "--bogus"), 2,
                          "unrecognized arguments")


def test_an_earlier_output_is_replaced_as_a_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("dissect", str(SAMPLE), "-o", str(out), "--records", "-q").returncode == 0
    assert (out / "records").is_dir()
    assert run_cli("dissect", str(SAMPLE), "-o", str(out), "-q").returncode == 0
    assert not (out / "records").exists()  # no table of the earlier run stays beside the new ones
    assert_readable(out)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_full_disk_publishes_nothing_and_keeps_the_earlier_output(tmp_path: Path, workers: int) -> None:
    with tmpfs(tmp_path / "disk", "320k") as disk:
        out = disk / "out"
        assert run_cli("dissect", str(SAMPLE), "-o", str(out), "-q").returncode == 0
        before = summary(out)
        result = run_cli("dissect", str(LARGER), "-o", str(out), "--records", "--payloads", "-q",
                         "--workers", str(workers))
        assert_one_clean_line(result, 1, "no space left on its device")
        assert summary(out) == before
        assert sorted(p.name for p in disk.iterdir()) == ["out"]
        assert_readable(out)


def test_a_read_only_output_is_one_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "64k", read_only=True) as disk:
        assert_one_clean_line(run_cli("dissect", str(SAMPLE), "-o", str(disk / "out")), 1, "Read-only file system")


@pytest.fixture(scope="module")
def large_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 70 MB of small Fetch exchanges: several seconds of dissecting."""
    return chatty_pcap(tmp_path_factory.mktemp("large") / "chatty.pcap", connections=20, pairs=6000)


def _frames_flushed(folder: Path) -> bool:
    """A run in `folder` has flushed frames rows: a part file being written holds more than Parquet's 4-byte magic
    (a part the run has just closed and renamed is gone by the time it is looked at)."""
    for part in folder.glob(".*.writing/frames/.*.writing"):
        with contextlib.suppress(FileNotFoundError):
            if part.stat().st_size > 4:
                return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("sig,workers", [(signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_a_signal_mid_run_publishes_what_was_read(tmp_path: Path, large_capture: Path, sig: int,
                                                  workers: int) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "kafkatap.cli", "dissect", str(large_capture), "-o", str(out),
                             "-q", "--workers", str(workers)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not _frames_flushed(tmp_path):  # the run has written rows (on a busy machine, seconds after it starts)
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, sig)
    signalled = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - signalled < 3
    assert_one_clean_line(subprocess.CompletedProcess(proc.args, proc.returncode, "", err), 130, "interrupted")
    done = summary(out)
    assert done["interrupted"] is True
    assert 0 < done["rows"]["frames"] < 2 * 20 * 6000
    assert done["byte_account"]["balanced"]
    assert pq.read_table(out / "frames").num_rows == done["rows"]["frames"]
    assert_readable(out)


def test_a_capture_without_kafka_exits_3_with_what_was_looked_for(tmp_path: Path) -> None:
    result = run_cli("dissect", str(web_capture(tmp_path / "web.pcap")), "-o", str(tmp_path / "out"), "-q",
                     "--port", "9093")
    assert_one_clean_line(result, 3, "no Kafka traffic found")
    assert "(port 9093 taken as brokers')" in result.stderr and summary(tmp_path / "out")["rows"]["frames"] == 0
    headers_only = write_pcap(str(tmp_path / "nothing.pcap"), [])
    assert_one_clean_line(run_cli("dissect", headers_only, "-o", str(tmp_path / "none"), "-q"), 3,
                          "no Kafka traffic found: the capture holds no packets")
