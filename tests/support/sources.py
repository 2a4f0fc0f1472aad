"""A module's plain-Python source run as Python, beside the installed module of the same name, which the compiled
core builds from that same source (frames_row.py, batch_row.py): the two must agree."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def source_module(path: Path) -> ModuleType:
    """The module at `path`, loaded from the .py file itself under a name of its own (not the compiled build)."""
    spec = importlib.util.spec_from_file_location(f"{path.stem}_source", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
