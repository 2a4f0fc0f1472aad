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
DATA = ROOT / "tests" / "data"
GOLDEN = ROOT / "tests" / "golden"
