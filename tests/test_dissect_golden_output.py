"""Regression guard for speed work on the engine: every table the dissector writes for each sample must stay the same,
row for row and value for value.

tests/data/dissect_golden_output.json holds, per sample (keyed by the sample file's sha256), the row count and a
sha256 of the content of every table (frames, batches, records with payloads, share, anomalies) and of summary.json
(minus the file paths). It was generated from the engine before the chatty-path optimisation and checked against the
samples' ground truth by tests/test_dissect_samples.py. A sample that was re-recorded since has another sha256 and is
skipped with a note; after checking the new output is right, regenerate the fixture with

    python -m tests.test_dissect_golden_output --regenerate
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FIXTURE = Path(__file__).resolve().parent / "data" / "dissect_golden_output.json"
TABLES = ("frames", "batches", "records", "share", "anomalies")


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def port_of(sample: Path) -> list[int]:
    truth = sample.with_name(sample.name.replace(".pcapng", ".truth.json"))
    return json.loads(truth.read_text())["broker_ports"] if truth.exists() else [9092]


def digest(paths: list[Path], out: Path, ports: list[int]) -> dict:
    """Row count and content hash of every table of one run (with --records --payloads), and of its summary."""
    summary = dissect_captures([str(p) for p in paths], str(out), ports=ports, records=True, payloads=True,
                               workers=1)
    result = {}
    for table in TABLES:
        data = pq.read_table(out / table)
        rows = data.to_pylist()
        for row in rows:  # the anomalies' capture file path depends on where the repository is
            if row.get("capture_file"):
                row["capture_file"] = Path(row["capture_file"]).name
        rows = json.dumps(rows, default=repr).encode()
        result[table] = {"rows": data.num_rows, "sha256": hashlib.sha256(rows).hexdigest()}
    summary.pop("files")  # paths, like the capture_file column
    result["summary"] = hashlib.sha256(json.dumps(summary, sort_keys=True, default=repr).encode()).hexdigest()
    return result


def load() -> dict:
    return json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}


GOLDEN = load()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_tables_are_unchanged(name: str, tmp_path: Path) -> None:
    expected = GOLDEN[name]
    sample = SAMPLES / name
    if not sample.exists() or file_sha(sample) != expected["sample_sha256"]:
        pytest.skip(f"{name} was re-recorded after the fixture: check its output, then regenerate the fixture")
    got = digest([sample], tmp_path, port_of(sample))
    for table in TABLES:
        assert got[table] == expected[table], f"{name}: {table} changed"
    assert got["summary"] == expected["summary"], f"{name}: summary.json changed"


def regenerate() -> None:
    import tempfile

    golden = {}
    for sample in sorted(SAMPLES.glob("*.pcapng")):
        with tempfile.TemporaryDirectory() as tmp:
            golden[sample.name] = {"sample_sha256": file_sha(sample), **digest([sample], Path(tmp), port_of(sample))}
    FIXTURE.write_text(json.dumps(golden, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(__doc__)
    regenerate()
