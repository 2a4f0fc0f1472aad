"""The console script's own help: the one place a user sees every exit code without opening the docs."""

from __future__ import annotations

import re

from kafkatap import errors
from kafkatap.cli import usage


def test_help_names_every_exit_code() -> None:
    codes = {value for name, value in vars(errors).items() if name.isupper() and isinstance(value, int)}
    listed = {int(c) for c in re.findall(r"\b(\d+) [a-z]", usage().split("Exit codes:", 1)[1])}
    assert codes == listed
