"""`kafkatap dashboard` when things go wrong, driven through the real CLI: a folder that is not a finished report
(dissect output, nothing, an interrupted analyze), and a page it cannot write (no folder, read-only, full disk).

Each case checks the exit code, the one line that explains it, that no traceback reached the terminal, and that no
page (half-written or temporary) is left behind.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.cli import assert_one_clean_line, run_cli
from tests.support.disks import tmpfs
from tests.support.paths import SAMPLES
from tests.support.report import write_report

SAMPLE = SAMPLES / "idempotent.pcapng"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(tmp_path_factory.mktemp("report"))


def dashboard(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli("dashboard", *map(str, args), cwd=cwd)


def pages(folder: Path) -> list[str]:
    """The HTML files in folder, temporary ones included."""
    return sorted(p.name for p in folder.glob("*.html")) + sorted(p.name for p in folder.glob(".dashboard-*"))


@pytest.mark.skipif(not SAMPLE.exists(), reason="sample not generated yet")
def test_dissect_output_given_as_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    dissect_captures([str(SAMPLE)], str(out))
    assert_one_clean_line(dashboard(out, "-o", "x.html", cwd=tmp_path), 1,
                          f"{out} is dissect output, not a report: run `kafkatap analyze {out} -o REPORT`, then "
                          "`kafkatap dashboard REPORT`")
    assert pages(tmp_path) == []


def test_folders_that_are_no_finished_report(report: Path, tmp_path: Path) -> None:
    assert_one_clean_line(dashboard(tmp_path / "missing", "-o", "x.html", cwd=tmp_path), 1, "does not exist")
    (tmp_path / "empty").mkdir()
    assert_one_clean_line(dashboard(tmp_path / "empty", "-o", "x.html", cwd=tmp_path), 1,
                          "is not a kafkatap report (it has no summary.json and no report table)")
    unfinished = write_report(tmp_path / "unfinished")
    (unfinished / "summary.json").unlink()  # as `kafkatap analyze` leaves a run it did not finish
    assert_one_clean_line(dashboard(unfinished, "-o", "x.html", cwd=tmp_path), 1,
                          "is an unfinished report (it has no summary.json)")
    assert pages(tmp_path) == []


def test_a_page_it_cannot_write(report: Path, tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("keep me")
    assert_one_clean_line(dashboard(report, "-o", tmp_path / "a_file" / "x.html", cwd=tmp_path), 1,
                          f"cannot write {tmp_path / 'a_file' / 'x.html'}: {tmp_path / 'a_file'} is not a folder")
    (tmp_path / "a_folder").mkdir()
    assert_one_clean_line(dashboard(report, "-o", tmp_path / "a_folder", cwd=tmp_path), 1,
                          f"cannot write {tmp_path / 'a_folder'} (Is a directory)")
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        assert_one_clean_line(dashboard(report, "-o", ro / "x.html", cwd=tmp_path), 1,
                              f"cannot write {ro / 'x.html'} (Read-only file system)")
    assert pages(tmp_path) == [] and pages(tmp_path / "a_folder") == []


def test_a_full_disk_leaves_the_old_page_whole(report: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "256k") as small:
        (small / "dashboard.html").write_text("the old page")
        assert_one_clean_line(dashboard(report, "-o", small / "dashboard.html", cwd=tmp_path), 1,
                              f"no space left on the device of {small / 'dashboard.html'}")
        assert pages(small) == ["dashboard.html"]
        assert (small / "dashboard.html").read_text() == "the old page"
