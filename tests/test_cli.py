"""The console script's own help: the one place a user sees every exit code without opening the docs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kafkatap import errors
from kafkatap.cli import usage


def test_help_names_every_exit_code() -> None:
    codes = {value for name, value in vars(errors).items() if name.isupper() and isinstance(value, int)}
    listed = {int(c) for c in re.findall(r"\b(\d+) [a-z]", usage().split("Exit codes:", 1)[1])}
    assert codes == listed


@pytest.mark.parametrize("stage", ["capture", "dissect", "pipelines", "dashboards", "samples"])
def test_every_stage_runs_as_a_module_with_its_commands_help(stage: str) -> None:
    """`python -m kafkatap.<stage>` is the stage's own command (the one `kafkatap` dispatches to)."""
    done = subprocess.run([sys.executable, "-m", f"kafkatap.{stage}", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: kafkatap "), done.stderr
