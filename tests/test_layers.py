"""The layer rules of pyproject.toml's [tool.importlinter] hold: `lint-imports` keeps every contract.

setup.py maps the stage folders (capture/, dissect/, ...) onto subpackages of `kafkatap`. An editable install serves
that mapping from a meta-path finder, which import-linter's graph builder (grimp walks the package's directory)
cannot follow: run from the repository it would see `kafkatap/` alone. So the test lays the installed package out
as symlinks in a temporary directory and runs lint-imports there, and it checks that a contract the code breaks is
reported, so the graph really holds the stages' modules and a kept contract means something.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PYPROJECT, ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

REVERSED = """
[tool.importlinter]
root_package = "kafkatap"

[[tool.importlinter.contracts]]
name = "stages upside down"
type = "layers"
layers = ["kafkatap.dissect", "kafkatap.pipelines", "kafkatap.dashboards"]

[[tool.importlinter.contracts]]
name = "dissector upside down"
type = "layers"
containers = ["kafkatap.dissect"]
layers = ["packets", "streams", "kafka", "tables", "run", "cli"]
"""


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding `kafkatap/` as installed: its own modules, and each stage folder under its subpackage
    name (found through the import system, so the layout follows setup.py's mapping)."""
    root = tmp_path_factory.mktemp("layout")
    package = root / "kafkatap"
    package.mkdir()
    for path in (ROOT / "kafkatap").glob("*.py"):
        (package / path.name).symlink_to(path)
    for folder in sorted(p for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "kafkatap"):
        spec = importlib.util.find_spec(f"kafkatap.{folder.name}")
        if spec is not None and spec.origin is not None and Path(spec.origin).parent == folder:
            (package / folder.name).symlink_to(folder, target_is_directory=True)
    assert (package / "dissect").is_dir(), "kafkatap.dissect is not installed from this checkout"
    return root


def lint_imports(layout: Path, config: Path) -> subprocess.CompletedProcess:
    """lint-imports from the layout directory (import-linter puts the working directory first on sys.path)."""
    assert LINT_IMPORTS.is_file(), f"no {LINT_IMPORTS}: pip install -e '.[dev]'"
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(config)], cwd=layout,
                          capture_output=True, text=True, timeout=300)


def test_layer_contracts_are_kept(layout: Path) -> None:
    result = lint_imports(layout, PYPROJECT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


def test_a_broken_contract_is_reported(layout: Path, tmp_path: Path) -> None:
    """Contracts the code breaks, between the stages and between the dissector's layers, fail with the imports."""
    config = tmp_path / "reversed.toml"
    config.write_text(REVERSED)
    result = lint_imports(layout, config)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Contracts: 0 kept, 2 broken." in result.stdout
    assert "kafkatap.pipelines is not allowed to import kafkatap.dissect" in result.stdout
    assert "kafkatap.dissect.streams is not allowed to import kafkatap.dissect.packets" in result.stdout
