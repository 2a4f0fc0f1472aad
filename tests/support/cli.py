"""The installed `kafkatap` command run as a user runs it, and the shape of a failure it may show: one line, the
documented exit code, no traceback (Python or Java)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TRACES = ("Traceback", "\tat org.", "\tat java.", "Exception in thread", "Py4J")


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`kafkatap ARGS` through the installed package (not the checkout: cwd is not the repository)."""
    return subprocess.run([sys.executable, "-m", "kafkatap.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd or Path("/"))


def assert_one_clean_line(result: subprocess.CompletedProcess, code: int, phrase: str) -> None:
    """Exit code `code`, and stderr is one line of kafkatap's (at most a few, e.g. a warning before it) that holds
    `phrase`, without a stack trace."""
    err = result.stderr
    assert result.returncode == code, f"exit {result.returncode}, want {code}: {err}"
    assert phrase in err, err
    assert not any(trace in err for trace in TRACES), err
    lines = [line for line in err.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 3, err
    assert any(line.startswith("kafkatap ") and phrase in line for line in lines), err
