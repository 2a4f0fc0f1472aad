"""Every way `kafkatap capture` refuses or fails: a clear message, a non-zero exit, nothing half-written.

Each failure is real: the capture runs as the `nobody` user (no capture rights), on an interface that does not
exist, with a PATH that holds no engine, with bad ports, and on a 256 kB tmpfs that fills up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.traffic import send_loop

PORT = 29310
IS_ROOT = os.geteuid() == 0

pytestmark = pytest.mark.slow


def capture(*args: str, env: dict | None = None, user: str | None = None, timeout: float = 60
            ) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "kafkatap.capture", *args]
    if user:
        cmd = ["setpriv", "--reuid", user, "--regid", "nogroup", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=env or dict(os.environ))


@pytest.mark.parametrize("ports", [[""], [","], ["0"], ["70000"], ["kafka"], ["9094-9092"]])
def test_invalid_ports(tmp_path: Path, ports: list[str]) -> None:
    args = [a for p in ports for a in ("--port", p)]
    done = capture("-i", "lo", *args, "-w", str(tmp_path / "ring"))
    assert done.returncode == 2
    assert "--port" in done.stderr
    assert not (tmp_path / "ring").exists()


@pytest.mark.parametrize("bootstrap,code,message", [("nonsense", 2, "is not HOST:PORT"),
                                                     (f"127.0.0.1:{PORT + 9}", 1, "Connection refused")])
def test_bootstrap_errors(tmp_path: Path, bootstrap: str, code: int, message: str) -> None:
    done = capture("-i", "lo", "--bootstrap", bootstrap, "-w", str(tmp_path / "ring"))
    assert done.returncode == code and message in done.stderr
    assert not (tmp_path / "ring").exists()


def test_tls_keylog_needs_dissect_and_a_readable_file(tmp_path: Path) -> None:
    keys = tmp_path / "keys.log"
    done = capture("-i", "lo", "--port", str(PORT), "-w", str(tmp_path / "ring"), "--tls-keylog", str(keys))
    assert done.returncode == 2 and "--tls-keylog needs --dissect OUT" in done.stderr
    done = capture("-i", "lo", "--port", str(PORT), "-w", str(tmp_path / "ring"), "--dissect", str(tmp_path / "out"),
                   "--tls-keylog", str(keys))
    assert done.returncode == 2 and f"--tls-keylog {keys}: cannot be read (No such file" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "ring").exists() and not (tmp_path / "out").exists()


def test_refuses_a_directory_with_an_earlier_run(tmp_path: Path) -> None:
    earlier = tmp_path / "kafkatap_00001_20260101000000.pcapng"
    earlier.write_bytes(b"earlier run")
    done = capture("-i", "lo", "--port", str(PORT), "-w", str(tmp_path))
    assert done.returncode == 2 and "earlier run" in done.stderr
    assert earlier.read_bytes() == b"earlier run"


def test_unknown_interface_lists_the_real_ones(tmp_path: Path) -> None:
    done = capture("-i", "nosuch0", "--port", str(PORT), "-w", str(tmp_path / "ring"))
    assert done.returncode == 2
    assert "no interface named 'nosuch0'" in done.stderr
    for name in os.listdir("/sys/class/net"):
        assert name in done.stderr
    assert not (tmp_path / "ring").exists()


@pytest.mark.parametrize("engine,package", [("dumpcap", "apt install tshark"), ("tcpdump", "apt install tcpdump")])
def test_engine_missing_names_the_package(tmp_path: Path, engine: str, package: str) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # no engine on this PATH
    done = capture("-i", "lo", "--port", str(PORT), "-w", str(tmp_path / "ring"), "--engine", engine, env=env)
    assert done.returncode == 1
    assert f"{engine} is not installed" in done.stderr and package in done.stderr
    assert not (tmp_path / "ring").exists()


@pytest.mark.skipif(not IS_ROOT, reason="the scapy fallback needs capture rights (root here)")
def test_no_engine_falls_back_to_scapy_and_says_so(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))
    traffic = send_loop(PORT + 1, 100, pause=0.05)
    done = capture("-i", "lo", "--port", str(PORT + 1), "-w", str(tmp_path / "ring"), "--duration", "6", env=env)
    traffic.join(10)
    assert done.returncode == 0, done.stderr
    assert "falling back to scapy" in done.stderr
    assert "engine: scapy" in done.stdout
    files = list((tmp_path / "ring").iterdir())
    assert [f.name for f in files] == ["kafkatap_00001.pcap"]
    packets = int(done.stdout.split("packets captured: ")[1].split()[0])
    assert packets > 0


def nobody_can_run(program: str) -> bool:
    """Whether a `nobody` process can start this interpreter again (the scapy engine is a child interpreter)."""
    again = "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
    return subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", program, "-c",
                           again], capture_output=True, timeout=30).returncode == 0


@pytest.fixture
def nobody_dir() -> Path:
    """A directory `nobody` can write to (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="kafkatap-nobody-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(not IS_ROOT or shutil.which("setpriv") is None, reason="needs root to become `nobody`")
@pytest.mark.parametrize("engine", ["dumpcap", "tcpdump", "scapy"])
def test_no_permission_says_how_to_grant_it(nobody_dir: Path, engine: str) -> None:
    if engine != "scapy" and shutil.which(engine) is None:
        pytest.skip(f"{engine} not installed")
    if engine == "scapy" and not nobody_can_run(sys.executable):
        pytest.skip(f"`nobody` cannot execute {sys.executable} (its interpreter lives in a private directory)")
    ring = nobody_dir / "ring"
    done = capture("-i", "lo", "--port", str(PORT), "-w", str(ring), "--engine", engine, "--duration", "5",
                   user="nobody")
    assert done.returncode == 1
    assert "no permission to capture on lo" in done.stderr
    assert "setcap cap_net_raw,cap_net_admin=eip" in done.stderr and "wireshark" in done.stderr
    assert not ring.exists()  # nothing half-written: the directory it created is gone again


@pytest.fixture
def tiny_disk() -> Path:
    """A 256 kB tmpfs: the real ENOSPC of a full disk."""
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root")
    path = Path(tempfile.mkdtemp(prefix="kafkatap-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        path.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield path
    subprocess.run(["umount", str(path)], check=False)
    path.rmdir()


@pytest.mark.parametrize("engine", ["dumpcap", "tcpdump"])
def test_full_disk_stops_cleanly_and_every_file_reads(tiny_disk: Path, engine: str) -> None:
    if shutil.which(engine) is None or shutil.which("tshark") is None:
        pytest.skip(f"{engine} or tshark not installed")
    port = PORT + (2 if engine == "dumpcap" else 3)
    traffic = send_loop(port, 1500)
    done = capture("-i", "lo", "--port", str(port), "-w", str(tiny_disk), "--engine", engine, "--ring-mb", "0.1",
                   "--duration", "30")
    traffic.join(30)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "disk holding the capture directory is full" in done.stderr
    assert "packets captured:" in done.stdout  # the summary is printed anyway
    files = sorted(tiny_disk.iterdir())
    assert files
    for f in files:
        read = subprocess.run(["tshark", "-r", str(f)], capture_output=True, text=True, timeout=60)
        assert read.returncode == 0 and "cut short" not in read.stderr, (f, read.stderr)
