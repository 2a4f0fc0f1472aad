"""`kafkatap report` when things go wrong before Spark starts: each one line and its exit code, no traceback."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import assert_one_clean_line, run_cli
from tests.support.paths import SAMPLES
from tests.support.pcap import web_capture

SAMPLE = str(SAMPLES / "idempotent.pcapng")


def test_wrong_command_lines(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    assert_one_clean_line(run_cli("report", str(tmp_path / "nope.pcap"), "-o", out), 2, "no such file")
    assert_one_clean_line(run_cli("report", SAMPLE, "-o", out, "--window", "banana"), 2, "bad window 'banana'")
    assert_one_clean_line(run_cli("report", SAMPLE, "-o", out, "--tls-keylog", str(tmp_path / "keys")), 2,
                          "--tls-keylog")
    assert not (tmp_path / "out").exists()
    (tmp_path / "page.txt").write_text("mine")
    assert_one_clean_line(run_cli("report", SAMPLE, "-o", str(tmp_path / "page.txt")), 2, "is a file")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("mine")
    assert_one_clean_line(run_cli("report", SAMPLE, "-o", str(mine)), 2, "holds files that are not a kafkatap report")
    assert (tmp_path / "page.txt").read_text() == "mine" and [p.name for p in mine.iterdir()] == ["notes.md"]


def test_no_input_is_a_capture(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a capture\n")
    result = run_cli("report", str(notes), "-o", str(tmp_path / "out"), "-q")
    assert_one_clean_line(result, 1, "no input was a capture it could read")
    assert not (tmp_path / "out" / "report").exists()


def test_a_capture_without_kafka_says_what_was_looked_for_and_analyzes_nothing(tmp_path: Path) -> None:
    result = run_cli("report", str(web_capture(tmp_path / "web.pcap")), "-o", str(tmp_path / "out"), "-q")
    assert_one_clean_line(result, 3, "no Kafka traffic found: 14 packets, 14 of them TCP, on 2 connections with data")
    assert "give their port with --port" in result.stderr
    assert not (tmp_path / "out").exists()  # nothing written, and no hidden folder left beside it
    assert not list(tmp_path.glob(".out*"))


def test_a_truncated_capture_is_named_on_the_terminal(tmp_path: Path) -> None:
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes((SAMPLES / "idempotent.pcapng").read_bytes()[:-100])
    result = run_cli("dissect", str(cut), "-o", str(tmp_path / "out"), "-q")
    assert result.returncode == 0, result.stderr
    assert f"{cut} is cut short (" in result.stderr and "the tables hold what came before the cut" in result.stderr


def test_a_run_that_ends_early_leaves_the_earlier_report_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "report").mkdir(parents=True)
    (out / "report" / "summary.json").write_text("{}")
    (out / "dashboard.html").write_text("the earlier run's page")
    result = run_cli("report", str(web_capture(tmp_path / "web.pcap")), "-o", str(out), "-q")
    assert result.returncode == 3, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dashboard.html", "report"]
    assert (out / "dashboard.html").read_text() == "the earlier run's page"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
