"""The switch between the compiled core and the pure-Python dissector: it knows every compiled module setup.py builds,
and, seen from outside, an install without the compiled core (simulated by an import hook) runs the pure-Python
dissector, says so once even with worker processes, and writes the same output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect import native
from tests.support.paths import ROOT, SAMPLES

BLOCKER = """
import sys
class NotBuilt:
    def find_spec(self, name, path=None, target=None):
        if name in {extensions!r}:
            raise ImportError(name + " is not built")
sys.meta_path.insert(0, NotBuilt())
"""


def dissect(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkatap.cli", "dissect", str(SAMPLES / "idempotent.pcapng"),
                           "-o", str(out), "-q", "--workers", "2"], env=env, capture_output=True, text=True,
                          timeout=300)


def _modules(pattern: str) -> list[Path]:
    """The project's files matching pattern, outside build/ and hidden folders (.venv)."""
    return [p for p in ROOT.glob(pattern)
            if not p.relative_to(ROOT).parts[0].startswith(".") and p.relative_to(ROOT).parts[0] != "build"]


def _module_name(path: Path) -> str:
    return "kafkatap." + str(path.relative_to(ROOT).with_suffix("")).replace("/", ".")


def test_every_compiled_module_is_known() -> None:
    """setup.py compiles every .pyx file, and every .py with a .pxd of its name; native (and so the tests' gate) must
    know each of them."""
    assert {_module_name(p) for p in _modules("*/**/*.pyx")} == set(native.EXTENSIONS)
    assert {_module_name(p) for p in _modules("*/**/*.pxd") if p.with_suffix(".py").exists()} == set(
        native.COMPILED_SOURCES)


@pytest.mark.slow
def test_without_the_compiled_core_the_pure_dissector_runs_and_says_so_once(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(BLOCKER.format(extensions=set(native.EXTENSIONS)))
    env = {k: v for k, v in os.environ.items() if k not in (native.ENV, native.SAID)}
    fallback = dissect(tmp_path / "fallback", {**env, "PYTHONPATH": str(hook)})
    assert fallback.returncode == 0, fallback.stderr
    assert fallback.stderr.count(native.NOT_BUILT) == 1, fallback.stderr
    quiet = dissect(tmp_path / "quiet", {**env, "PYTHONPATH": str(hook), native.ENV: "1"})
    assert quiet.returncode == 0 and native.NOT_BUILT not in quiet.stderr, quiet.stderr
    runs = ["quiet"]
    if not native.missing():
        default = dissect(tmp_path / "default", env)
        assert default.returncode == 0 and native.NOT_BUILT not in default.stderr, default.stderr
        runs.append("default")
    for run in runs:
        for table in sorted(p.name for p in (tmp_path / "fallback").iterdir() if p.is_dir()):
            assert pq.read_table(tmp_path / run / table).equals(pq.read_table(tmp_path / "fallback" / table)), table
        summaries = [json.loads((tmp_path / r / "summary.json").read_text()) for r in ("fallback", run)]
        for summary in summaries:
            summary.pop("elapsed_s", None)
        assert summaries[0] == summaries[1]
