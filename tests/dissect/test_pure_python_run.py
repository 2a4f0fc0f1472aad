"""The fault and fuzz tests again on the pure-Python dissector, in a pytest process started as a user selects it
(KAFKATAP_PURE_PYTHON=1 before anything imports, so every twin in it is the pure one).

A test of the suite rather than a second command after it: pytest-xdist runs it beside the other test files, where
`make test`'s second command kept one core idle for its 20 s at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkatap.dissect import native
from tests.support.paths import ROOT

PURE_TESTS = ("tests/dissect/test_faults.py", "tests/dissect/test_fuzz.py", "tests/dissect/tls/test_fuzz.py")


@pytest.mark.slow
@pytest.mark.skipif(native.pure_requested(), reason="this process is a pure-Python run already")
def test_the_fault_and_fuzz_tests_pass_on_the_pure_python_dissector() -> None:
    # pytest's and xdist's variables describe this process: the inner run is a session of its own
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")} | {native.ENV: "1"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PURE_TESTS],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1] and "skipped" not in result.stdout, result.stdout[-2000:]
