"""Bundled sample captures with ground truth (`<name>.pcapng`, `<name>.truth.json`); see samples/truth.py."""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE_DIR = Path(__file__).parent


def capture_path(name: str) -> Path:
    """Path of a bundled sample capture."""
    return SAMPLE_DIR / f"{name}.pcapng"


def load_truth(name: str) -> dict:
    """The ground truth written by the workload that made sample `name`."""
    return json.loads((SAMPLE_DIR / f"{name}.truth.json").read_text())


def available() -> list[str]:
    """Names of the samples present on disk (real and synthetic)."""
    return sorted(p.name[: -len(".truth.json")] for p in SAMPLE_DIR.glob("*.truth.json")
                  if capture_path(p.name[: -len(".truth.json")]).exists())
