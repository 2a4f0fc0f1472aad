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


def test_a_dissect_command_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow.dataset imports pandas (0.2 s of every command's start); only the rare line about a capture file cut
    short reads the output back with it."""
    command = [sys.executable, "-X", "importtime", "-m", "kafkatap.dissect", str(SAMPLES / "idempotent.pcapng"),
               "-o", str(tmp_path / "out"), "-q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "pyarrow.parquet" in imported and not {"pandas", "pyarrow.dataset"} & imported
