"""`kafkatap report` when things go wrong before Spark starts: each one line and its exit code, no traceback."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import assert_one_clean_line, run_cli
from tests.support.paths import SAMPLES

SAMPLE = str(SAMPLES / "idempotent.pcapng")


def test_wrong_command_lines(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    assert_one_clean_line(run_cli("report", str(tmp_path / "nope.pcap"), "-o", out), 2, "no such file")
    assert_one_clean_line(run_cli("report", SAMPLE, "-o", out, "--window", "banana"), 2, "bad window 'banana'")
    assert_one_clean_line(run_cli("report", SAMPLE, "-o", out, "--tls-keylog", str(tmp_path / "keys")), 2,
                          "--tls-keylog")
    assert not (tmp_path / "out").exists()


def test_no_input_is_a_capture(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a capture\n")
    result = run_cli("report", str(notes), "-o", str(tmp_path / "out"), "-q")
    assert_one_clean_line(result, 1, "no input was a capture it could read")
    assert not (tmp_path / "out" / "report").exists()
