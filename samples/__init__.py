"""Bundled sample captures with ground truth (`<name>.pcapng`, `<name>.truth.json`); see samples/truth.py.

The TLS samples live in `tls/`, each with the clients' key log (`<name>.keys`): apart from the others, which are all
dissected without a key log."""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE_DIR = Path(__file__).parent
TLS_DIR = SAMPLE_DIR / "tls"


def _folder(name: str) -> Path:
    return TLS_DIR if (TLS_DIR / f"{name}.truth.json").exists() else SAMPLE_DIR


def capture_path(name: str) -> Path:
    """Path of a bundled sample capture."""
    return _folder(name) / f"{name}.pcapng"


def load_truth(name: str) -> dict:
    """The ground truth written by the workload that made sample `name`."""
    return json.loads((_folder(name) / f"{name}.truth.json").read_text())


def keylog_path(name: str) -> Path:
    """The NSS key log of a TLS sample (its clients wrote it)."""
    return TLS_DIR / load_truth(name)["tls"]["keylog"]


def tls_available() -> list[str]:
    """Names of the TLS samples present on disk."""
    return sorted(p.name[: -len(".truth.json")] for p in TLS_DIR.glob("*.truth.json"))


def available() -> list[str]:
    """Names of the samples present on disk (real and synthetic)."""
    return sorted(p.name[: -len(".truth.json")] for p in SAMPLE_DIR.glob("*.truth.json")
                  if capture_path(p.name[: -len(".truth.json")]).exists())
