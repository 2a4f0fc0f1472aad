"""`made_once` (tests/support/made_once.py): what several test files read is made once per run, across processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.made_once import DONE, made_once
from tests.support.paths import ROOT

# Two processes ask at once; each `make` appends its pid to a log, sleeping so that the other asks meanwhile
RACE = """
import os, sys, time
from pathlib import Path
from tests.support.made_once import made_once

class Factory:
    def getbasetemp(self):
        return Path(sys.argv[1]) / f"popen-{os.getpid()}"

def make(folder):
    with open(Path(sys.argv[1]) / "makes.log", "a") as log:
        log.write(f"{os.getpid()}\\n")
    time.sleep(0.5)
    (folder / "out.txt").write_text("made")

print((made_once(Factory(), "gw", "thing", make) / "out.txt").read_text())
"""


def test_two_processes_asking_at_once_make_it_once(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outputs = [proc.communicate(timeout=60)[0].strip() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert outputs == ["made", "made"]
    assert len((tmp_path / "makes.log").read_text().split()) == 1


def test_a_failed_make_leaves_nothing_taken_for_made(tmp_path_factory: pytest.TempPathFactory) -> None:
    def fails(folder: Path) -> None:
        (folder / "half.txt").write_text("half")
        raise RuntimeError("the make failed")

    with pytest.raises(RuntimeError):
        made_once(tmp_path_factory, "master", "flaky", fails)
    made = made_once(tmp_path_factory, "master", "flaky", lambda folder: (folder / "out.txt").write_text("made"))
    assert sorted(p.name for p in made.iterdir()) == [DONE, "out.txt"]  # the failed attempt's file is gone
