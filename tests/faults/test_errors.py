"""The one error layer every subcommand goes through (kafkatap.errors.command): which exception becomes which line
and exit code, where an unexpected one's traceback goes, and SIGTERM handled as Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from kafkatap import errors
from tests.support.cli import assert_one_clean_line, run_cli


def wrapped(exc: BaseException):
    @errors.command("demo")
    def main(argv: list[str]) -> int:
        raise exc
    return main


@pytest.mark.parametrize("exc,code,line", [
    (errors.CommandError("the broker log is gone: rerun it"), 1, "kafkatap demo: the broker log is gone: rerun it"),
    (errors.UsageError("--window takes 1s or 500ms"), 2, "kafkatap demo: --window takes 1s or 500ms"),
    (KeyboardInterrupt(), 130, "kafkatap demo: interrupted"),
])
def test_expected_failures_are_one_line(exc: BaseException, code: int, line: str,
                                        capsys: pytest.CaptureFixture) -> None:
    assert wrapped(exc)([]) == code
    assert capsys.readouterr().err.strip() == line


def test_a_bug_is_one_line_naming_the_file_with_its_traceback(capsys: pytest.CaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(errors.DEBUG_ENV, raising=False)
    assert wrapped(RuntimeError("a bug\nwith a second line"))([]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "unexpected error (RuntimeError: a bug)" in err
    where = Path(re.search(r"written to (\S+)", err).group(1))
    assert "Traceback" in where.read_text() and "a bug" in where.read_text()
    where.unlink()


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture) -> None:
    assert wrapped(RuntimeError("a bug"))(["--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_sigterm_ends_a_command_as_ctrl_c_does(capsys: pytest.CaptureFixture) -> None:
    @errors.command("demo")
    def main(argv: list[str]) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        return 0

    assert main([]) == 130
    assert capsys.readouterr().err.strip() == "kafkatap demo: interrupted"


def test_the_console_script_reports_unknown_commands_and_bad_arguments() -> None:
    result = run_cli("frobnicate")
    assert result.returncode == 2 and "unknown command 'frobnicate'" in result.stderr
    assert_one_clean_line(run_cli("capture", "-i", "lo"), 2, "the following arguments are required: -w/--write-dir")
