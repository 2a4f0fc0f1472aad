"""A real Spark standalone cluster on 127.0.0.1: one master and N one-core workers, started from pip pyspark's own
`spark-class`, stopped by their process ids. The cluster tests and the scaling benchmark share it.

Everything it writes (daemon logs, the workers' work folders, executors' scratch space) stays under one folder, and
every daemon binds to loopback. `spark-class` execs the JVM, so the process started is the daemon itself.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.find_spark_home import _find_spark_home

from kafkatap.samples.brokers import free_ports

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STOP_TIMEOUT_S = 30.0


def client_env(**extra: str) -> dict[str, str]:
    """The environment of a driver (a `kafkatap` command) and of the daemons: loopback only, and executors run this
    Python (the test venv's, where kafkatap and its compiled core are installed)."""
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, **extra}


def bare_python(folder: Path) -> Path:
    """An executable Python without kafkatap (for PYSPARK_PYTHON): the test venv's interpreter without its site, so
    without the editable install's finder; the venv's other packages are reachable through PYTHONPATH only."""
    script = folder / "bare-python"
    site = sysconfig.get_paths()["purelib"]
    script.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {sys.executable} -S "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@dataclass
class Cluster:
    master: str  # spark://127.0.0.1:PORT, what --master takes
    ui: str  # the master's web UI; /json/ describes workers and applications
    root: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Until no application runs and every worker has reaped its executors (their cores are free again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if not state["activeapps"] and not any(w["coresused"] for w in state["workers"]):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Spark cluster was still busy after {timeout:.0f} s: {self.state()}")

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The folders the workers gave the app's executors (their cwd: stdout, stderr and shipped files)."""
        return sorted(p for p in self.root.glob(f"work-*/{app_id}/*") if p.is_dir())

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
                         for p in sorted(self.root.glob("logs/*.log")))

    def stop(self) -> None:
        """Workers first (each stops its executors), then the master: SIGTERM, a bounded wait, then SIGKILL."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)


def _daemon(cluster: Cluster, name: str, args: list[str], env: dict[str, str]) -> None:
    spark_class = Path(_find_spark_home()) / "bin" / "spark-class"
    log = open(cluster.root / "logs" / f"{name}.log", "wb")
    with log:
        cluster.processes.append(subprocess.Popen([str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, env=env, cwd=cluster.root))


def _wait_for_workers(cluster: Cluster, workers: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in cluster.processes):
            raise RuntimeError(f"a Spark daemon exited while starting:\n{cluster.logs()}")
        try:
            if cluster.alive_workers() >= workers:
                return
        except OSError:
            pass  # the master's UI is not up yet
        except ValueError:  # json's: seen once, the UI's HTML page at /json/ from a master not yet elected leader
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{workers} Spark workers were not alive after {timeout:.0f} s:\n{cluster.logs()}")


@contextmanager
def standalone(root: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
               timeout: float = 120.0) -> Iterator[Cluster]:
    """A master and `workers` workers of `cores` cores and `memory` each, alive on exit from the with's first line
    and stopped at its end."""
    for folder in ("logs", "local", "conf"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    port, ui_port, *worker_ui_ports = free_ports(2 + workers)
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", root)
    # Small daemons (they only coordinate), executors' scratch under root, no conf from the user's SPARK_CONF_DIR.
    env = client_env(SPARK_DAEMON_MEMORY="256m", SPARK_LOCAL_DIRS=str(root / "local"),
                     SPARK_CONF_DIR=str(root / "conf"))
    try:
        _daemon(cluster, "master", [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                                    "--webui-port", str(ui_port)], env)
        for i in range(workers):
            (root / f"work-{i}").mkdir(exist_ok=True)
            _daemon(cluster, f"worker-{i}", [WORKER_CLASS, "--cores", str(cores), "--memory", memory,
                                             "--host", "127.0.0.1", "--webui-port", str(worker_ui_ports[i]),
                                             "--work-dir", str(root / f"work-{i}"), cluster.master], env)
        _wait_for_workers(cluster, workers, timeout)
        yield cluster
    finally:
        cluster.stop()
