"""The repository's files, located from here: a test's own `__file__` depends on how deep it sits in tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SCHEMAS_DOC = DOCS / "schemas.md"
ARCHITECTURE_DOC = DOCS / "architecture.md"
PYPROJECT = ROOT / "pyproject.toml"
SAMPLES = ROOT / "samples"
REAL_BROKER_SAMPLES = sorted(p.name.removesuffix(".truth.json") for p in SAMPLES.glob("kafka44_*.truth.json"))
"""The samples recorded on Apache Kafka 4.4 with its Java clients."""
DATA = ROOT / "tests" / "data"
GOLDEN = ROOT / "tests" / "golden"
