"""What a run imports: the modules only some runs need (the TLS session and cryptography, the crc32c package, the
worker pool) are imported when a run needs them, not by every run's start-up, which a small capture mostly is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.paths import SAMPLES

LATER = ("cryptography", "kafkatap.dissect.tls.session", "crc32c", "multiprocessing", "concurrent.futures.process")

RUN = """
import json, sys
from kafkatap.dissect.run import dissect_captures
imported = sorted(m for m in {later!r} if m in sys.modules)
dissect_captures([{capture!r}], {out!r})
print(json.dumps({{"at_start": imported, "after": sorted(m for m in {later!r} if m in sys.modules)}}))
"""


def test_modules_some_runs_need_are_imported_when_needed(tmp_path: Path) -> None:
    code = RUN.format(later=LATER, capture=str(SAMPLES / "idempotent.pcapng"), out=str(tmp_path / "out"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    imported = json.loads(done.stdout.splitlines()[-1])
    assert imported["at_start"] == []
    assert not {"cryptography", "kafkatap.dissect.tls.session", "multiprocessing"} & set(imported["after"])
    assert (tmp_path / "out" / "frames").is_dir()


def _dissect_imports(out: Path, *options: str) -> tuple[set[str], str]:
    """The modules a `python -m kafkatap.dissect` of a sample imported, and what it wrote to stderr."""
    command = [sys.executable, "-X", "importtime", "-m", "kafkatap.dissect", str(SAMPLES / "idempotent.pcapng"),
               "-o", str(out), *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    imported = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    return imported, "\n".join(line for line in lines if not line.startswith("import time:"))


def test_a_dissect_command_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow.dataset imports pandas (0.2 s of every command's start); only the rare line about a capture file cut
    short reads the output back with it."""
    imported, _ = _dissect_imports(tmp_path / "out", "-q")
    assert "pyarrow.parquet" in imported and not {"pandas", "pyarrow.dataset"} & imported


def test_a_quiet_dissect_with_nothing_to_say_does_not_import_rich(tmp_path: Path) -> None:
    """rich costs about 25 ms of the command's start (a fortieth of a chatty capture's dissect): a quiet run with no
    warning to print does without it, and a run that renders its summary still renders it."""
    imported, said = _dissect_imports(tmp_path / "quiet", "-q")
    assert not any(name.split(".")[0] == "rich" for name in imported) and said == ""
    imported, said = _dissect_imports(tmp_path / "loud")
    assert "rich.console" in imported and "kafkatap dissect" in said  # the summary table
