"""How `kafkatap dissect` scales: one local process against a Spark standalone cluster of 1 and of 2 one-core
workers (tests/support/spark_cluster.py's, on 127.0.0.1), on a capture of a few GB built by scale_capture.py.

For each run: wall time; CPU seconds of every process involved (the command's own tree, measured by a probe process
as dissect_vs_tshark.py does, plus each worker's tree, executors and their Python workers included, sampled from
/proc); MB/s and MB/s per core; and the shuffle's cost from Spark's event log (bytes written and read,
the time tasks spent writing and waiting for it, and the wall time of the stages that read it). The cluster runs
use `kafkatap dissect --master URL` and, with --split-size, the split-size flag. Run from the repository root:

    python -m benchmarks.dissect_scaling [--workdir /tmp/kt-scale] [--size 2000] [--split-size MB]
        [--workers 1,2] [--skip-local]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from benchmarks.dissect_vs_tshark import measure
from benchmarks.scale_capture import PORT, build
from tests.support.spark_cluster import Cluster, client_env, standalone

KAFKATAP = [sys.executable, "-m", "kafkatap.cli"]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_by_pid() -> dict[int, tuple[int, float]]:
    """(parent pid, CPU seconds) of every process now running."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it exited meanwhile
        found[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return found


class TreeCpu:
    """CPU seconds used by some processes and all their descendants from now on, sampled: an executor's Python
    workers are never waited for by a process we could read their time from, so each process's own time is kept as
    last seen (a sample every `interval` seconds: what a process uses in its last interval is lost)."""

    def __init__(self, roots: list[int], interval: float = 0.25) -> None:
        self.roots, self.interval = set(roots), interval
        self.seen: dict[int, float] = {}
        self.start = {pid: cpu for pid, (_, cpu) in _cpu_by_pid().items() if pid in self.roots}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        processes = _cpu_by_pid()
        tree, grew = set(self.roots), True
        while grew:
            more = {pid for pid, (parent, _) in processes.items() if parent in tree} - tree
            tree |= more
            grew = bool(more)
        for pid in tree & processes.keys():
            self.seen[pid] = max(self.seen.get(pid, 0.0), processes[pid][1])

    def _run(self) -> None:
        while not self.done.wait(self.interval):
            self._sample()

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        self._sample()
        return sum(cpu - self.start.get(pid, 0.0) for pid, cpu in self.seen.items())


def spark_defaults(conf: Path, events: Path) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf has the driver write an uncompressed event log to `events`."""
    conf.mkdir(parents=True, exist_ok=True)
    events.mkdir(parents=True, exist_ok=True)
    (conf / "spark-defaults.conf").write_text(f"spark.eventLog.enabled true\nspark.eventLog.dir file://{events}\n"
                                              "spark.eventLog.compress false\n")
    return conf


def shuffle_cost(events: Path) -> dict:
    """Shuffle bytes, the tasks' time writing and waiting for them, and the wall time of the stages that read them,
    summed over the event logs in `events`."""
    cost = {"tasks": 0, "shuffle_write_mb": 0.0, "shuffle_read_mb": 0.0, "write_time_s": 0.0, "fetch_wait_s": 0.0,
            "executor_run_s": 0.0, "reading_stages_wall_s": 0.0}
    reading: set[tuple[int, int]] = set()
    stage_wall: dict[tuple[int, int], float] = {}
    # Spark 4 writes each application's log as a folder of `events_N_…` files (rolling event logs)
    for log in sorted(p for p in events.rglob("*") if p.is_file() and not p.name.startswith((".", "appstatus"))):
        for line in log.open():
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerTaskEnd" and event.get("Task Metrics"):
                metrics = event["Task Metrics"]
                read, write = metrics["Shuffle Read Metrics"], metrics["Shuffle Write Metrics"]
                cost["tasks"] += 1
                cost["executor_run_s"] += metrics["Executor Run Time"] / 1e3
                cost["shuffle_write_mb"] += write["Shuffle Bytes Written"] / 1e6
                cost["write_time_s"] += write["Shuffle Write Time"] / 1e9
                read_bytes = read["Remote Bytes Read"] + read["Local Bytes Read"]
                cost["shuffle_read_mb"] += read_bytes / 1e6
                cost["fetch_wait_s"] += read["Fetch Wait Time"] / 1e3
                if read_bytes:
                    reading.add((event["Stage ID"], event["Stage Attempt ID"]))
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                if "Submission Time" in info and "Completion Time" in info:
                    stage_wall[(info["Stage ID"], info["Stage Attempt ID"])] = \
                        (info["Completion Time"] - info["Submission Time"]) / 1e3
    cost["reading_stages_wall_s"] = sum(stage_wall.get(stage, 0.0) for stage in reading)
    return {k: round(v, 2) for k, v in cost.items()}


def rates(row: dict, mb: float, cores: int) -> dict:
    row.update(mb_s=round(mb / row["wall"], 1), mb_s_per_core=round(mb / row["wall"] / cores, 1),
               mb_per_cpu_s=round(mb / row["cpu"], 1), cores=cores)
    return row


def local_run(capture: Path, out: Path, mb: float) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    row = measure([*KAFKATAP, "dissect", str(capture), "-o", str(out), "--port", str(PORT), "-q"])
    return rates({"run": "local, 1 process", **row}, mb, 1)


def cluster_run(cluster: Cluster, workers: int, capture: Path, out: Path, workdir: Path, mb: float,
                split_size: int | None) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    events = workdir / f"events-{workers}w"
    shutil.rmtree(events, ignore_errors=True)
    env = client_env(SPARK_CONF_DIR=str(spark_defaults(workdir / f"conf-{workers}w", events)))
    # through env(1), which execs the command: the probe's children are still the whole run
    command = ["env", *(f"{k}={v}" for k, v in env.items() if os.environ.get(k) != v),
               *KAFKATAP, "dissect", str(capture), "-o", str(out), "--port", str(PORT), "-q", "--master",
               cluster.master, *(["--split-size", str(split_size)] if split_size else [])]
    daemons = TreeCpu([p.pid for p in cluster.processes[1:]])
    row = measure(command)
    cluster.wait_idle()
    row["cpu"] += daemons.stop()
    row["shuffle"] = shuffle_cost(events)
    return rates({"run": f"cluster, {workers} worker{'s' if workers > 1 else ''}", **row}, mb, workers)


def table(rows: list[dict]) -> str:
    head = ["run", "wall s", "CPU s", "MB/s", "MB/s/core", "MB/CPU s", "shuffle MB w/r", "write+wait s",
            "shuffle stages s"]
    lines = [head]
    for r in rows:
        s = r.get("shuffle")
        lines.append([r["run"], f"{r['wall']:.1f}", f"{r['cpu']:.1f}", f"{r['mb_s']}", f"{r['mb_s_per_core']}",
                      f"{r['mb_per_cpu_s']}", f"{s['shuffle_write_mb']:.0f}/{s['shuffle_read_mb']:.0f}" if s else "-",
                      f"{s['write_time_s'] + s['fetch_wait_s']:.1f}" if s else "-",
                      f"{s['reading_stages_wall_s']:.1f}" if s else "-"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(n) if i == 0 else c.rjust(n) for i, (c, n) in enumerate(zip(line, widths)))
                     for line in lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/kt-scale"))
    p.add_argument("--size", type=float, default=2000, help="MB of capture (scale_capture.py builds it)")
    p.add_argument("--split-size", type=int,
                   help="MiB of the capture each task reads (`kafkatap dissect --split-size`; default: its own)")
    p.add_argument("--workers", default="1,2", help="cluster sizes to run, comma-separated (one core each)")
    p.add_argument("--skip-local", action="store_true")
    args = p.parse_args()
    help_text = subprocess.run([*KAFKATAP, "dissect", "--help"], capture_output=True, text=True).stdout
    if "--master" not in help_text:
        p.error("this kafkatap's dissect has no --master: nothing to run on a cluster")
    capture, meta = build(args.workdir, args.size)
    mb = meta["bytes"] / 1e6
    rows = [] if args.skip_local else [local_run(capture, args.workdir / "out-local", mb)]
    for n in (int(w) for w in args.workers.split(",")):
        with standalone(args.workdir / f"cluster-{n}w", workers=n) as cluster:
            rows.append(cluster_run(cluster, n, capture, args.workdir / f"out-{n}w", args.workdir, mb,
                                    args.split_size))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    walls = {r["cores"]: r["wall"] for r in rows if r["run"].startswith("cluster")}
    result = {"capture": str(capture), "mb": round(mb), "packets": meta["packets"], "runs": rows}
    if 1 in walls and 2 in walls:
        result["speedup_2_over_1_workers"] = round(walls[1] / walls[2], 2)
    (args.workdir / "scaling.json").write_text(json.dumps(result, indent=1))
    print(f"{capture.name}: {mb:.0f} MB, {meta['packets']:,} packets")
    print(table(rows))
    if "speedup_2_over_1_workers" in result:
        print(f"2 workers / 1 worker: {result['speedup_2_over_1_workers']}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
