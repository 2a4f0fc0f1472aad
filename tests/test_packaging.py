"""The built wheel owns one top-level name, `kafkatap`, and installs beside Fox-IT's `dissect.*` namespace packages.

Built and installed offline: the wheel with the venv's own setuptools (no build isolation), `dissect.cstruct` from the
wheelhouse that `make` downloads next to the venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from kafkatap.dissect import native
from tests.support.paths import ROOT

WHEELHOUSE = Path(sys.prefix) / "wheelhouse"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the checkout, so a stale build/ folder can neither leak into the wheel nor stay behind.
    Its C compiled unoptimized and without debug information: the wheel holds the same files either way (compared
    once: 399 names), the build takes 11 CPU seconds instead of 53, and `make` has compiled the same sources with
    the release flags for every other test and benchmark."""
    source, dist = tmp_path_factory.mktemp("source") / "kafkatap", tmp_path_factory.mktemp("dist")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__",
                                                                 "demo-out", "tests", "benchmarks", "docs"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(source)], check=True, capture_output=True, env={**os.environ, "CFLAGS": "-O0 -g0"})
    (built,) = dist.glob("kafkatap-*.whl")
    return built


def test_wheel_holds_only_kafkatap(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {name for name in top if not name.endswith(".dist-info")} == {"kafkatap"}
    for stage in ("capture", "dissect", "pipelines", "dashboards", "samples"):
        assert f"kafkatap/{stage}/__init__.py" in names
    assert "kafkatap/samples/day_in_the_life.pcapng" in names
    assert {"kafkatap/samples/tls/tls13.pcapng", "kafkatap/samples/tls/tls13.keys",
            "kafkatap/samples/tls/tls13.truth.json"} <= set(names)
    assert {"kafkatap/pipelines/log4j2.properties", "kafkatap/pipelines/OneTaskShuffles.java",
            "kafkatap/pipelines/LoadedClasses.java"} <= set(names)
    assert "kafkatap/dissect/protocol/generated/api_keys.py" in names


@pytest.mark.skipif(native.pure_requested(), reason=f"{native.ENV} is set: the compiled core may not be built")
def test_wheel_holds_the_compiled_core(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for module in native.EXTENSIONS:
        path = module.replace(".", "/")
        assert [n for n in names if n.startswith(path + ".") and n.endswith(".so")], f"{module} was not compiled"
        assert path + ".pyi" in names
        assert path + ".c" not in names


def test_installs_beside_dissect_cstruct(wheel: Path, tmp_path: Path) -> None:
    cstruct = sorted(WHEELHOUSE.glob("dissect_cstruct-*.whl"))
    assert cstruct, (f"no dissect.cstruct wheel in {WHEELHOUSE}: `make` downloads it "
                     f"(rm {sys.prefix}/bin/.installed; make)")
    env = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel), str(cstruct[-1])],
                   check=True, capture_output=True)
    result = subprocess.run([str(env / "bin" / "kafkatap"), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and "dissect" in result.stdout
    probe = ("import json, dissect, dissect.cstruct, kafkatap.cli; "
             "print(json.dumps([getattr(dissect, '__file__', None), list(dissect.__path__)]))")
    result = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    init, paths = json.loads(result.stdout)
    assert init is None, "dissect must stay a namespace package: no kafkatap file may land in it"
    assert [sorted(p.name for p in Path(path).iterdir()) for path in paths] == [["cstruct"]]
