"""Wall time, CPU and Spark's own cost (jobs, stages, tasks, plan sizes) of `kafkatap analyze`, as a user runs it.

    python benchmarks/analyze_bench.py [OUT ...] [--runs 3] [--master local[*]] [--baseline-python PYTHON]
        [--conf KEY=VALUE ...] [--dataframes]

Each OUT is a `kafkatap dissect` output folder; with none, the bundled `day_in_the_life` sample is dissected first
(with --records). Every round runs `kafkatap analyze OUT -o REPORT` once per input, in turn, as a fresh command (the
JVM's start included, as a user pays it), under a probe process that adopts the JVM when the command's Python exits
(a child subreaper), so the CPU seconds are the whole run's, Java's included. Spark writes an event log per run
(`spark_events`): its jobs, stages, tasks, SQL queries and largest physical plan, per kafkatap job, are the figures
that grow with a plan long before seconds do on a busy machine. Printed: per input, the medians over --runs of wall
and CPU seconds, each kafkatap job's seconds (as the command printed them) and counts, as a table and as JSON.
`--baseline-python` runs another installation's kafkatap beside this one (an earlier checkout's venv: the baseline in
the same run, first in every other round: use an even --runs); a version that does not tag its Spark jobs has its counts
under "total" only. `--dataframes` adds one untimed run per input that counts the DataFrames each job builds (each one
an analyzer pass in the JVM).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_events  # noqa: E402 - a sibling module, found through the path set above

PYTHON = sys.executable
SAMPLE = "day_in_the_life"

_PROBE = """
import ctypes, json, os, resource, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the JVM, orphaned when the command exits, comes to us
start = time.perf_counter()
run = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - start
while True:  # reap the adopted JVM so its CPU counts in RUSAGE_CHILDREN
    try:
        os.wait()
    except ChildProcessError:
        break
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": run.returncode, "wall": wall, "cpu": u.ru_utime + u.ru_stime, "stderr": run.stderr}))
"""
_DONE = re.compile(r"^(\w+): done in ([\d.]+) s$", re.M)
_COUNTED = f"""
import collections, json, sys
from pyspark.sql.classic import dataframe
from kafkatap.cli import main
built = collections.Counter()
init = dataframe.DataFrame.__init__
def counted(self, *args, **kwargs):
    init(self, *args, **kwargs)
    built[self.sparkSession.sparkContext.getLocalProperty({spark_events.JOB_PROPERTY!r}) or "(no job)"] += 1
dataframe.DataFrame.__init__ = counted
rc = main(sys.argv[1:])
print(json.dumps(built), file=sys.stderr)
sys.exit(rc)
"""


def dissect_sample(work: Path) -> Path:
    """The bundled sample dissected with records, as `make demo` does."""
    from kafkatap.samples import SAMPLE_DIR  # noqa: PLC0415 - only when no OUT is given

    truth = json.loads((SAMPLE_DIR / f"{SAMPLE}.truth.json").read_text())
    out = work / SAMPLE
    ports = [a for p in truth["broker_ports"] for a in ("--port", str(p))]
    subprocess.run([PYTHON, "-m", "kafkatap.cli", "dissect", str(SAMPLE_DIR / truth["capture"]), "-o", str(out),
                    "--records", "-q", *ports], check=True, stdout=subprocess.DEVNULL)
    return out


def analyze_once(python: str, out: Path, report: Path, logs: Path, master: str, extra: list[str]) -> dict:
    """One `kafkatap analyze` under the probe: wall, CPU, each job's seconds and Spark's costs. `extra`: more
    `key=value` Spark settings, to compare one against the default."""
    logs.mkdir(parents=True, exist_ok=True)
    settings = [f"{k}={v}" for k, v in spark_events.conf(logs).items()] + extra
    conf = " ".join(f"--conf {s}" for s in settings)
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": f"{conf} pyspark-shell"}
    cmd = [python, "-m", "kafkatap.cli", "analyze", str(out), "-o", str(report), "--master", master]
    # run from the work folder: `-m` puts the current folder first on the path, and a checkout's own `kafkatap/`
    # there would shadow the installation under test (a baseline's included)
    probe = subprocess.run([PYTHON, "-c", _PROBE, *cmd], check=True, capture_output=True, text=True, env=env,
                           cwd=report.parent)
    result = json.loads(probe.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"analyze {out} failed ({result['rc']}): {result['stderr'][-2000:]}")
    costs = spark_events.read(spark_events.newest_log(logs))
    return {"wall": result["wall"], "cpu": result["cpu"],
            "jobs": {job: float(s) for job, s in _DONE.findall(result["stderr"])}, "spark": costs}


def dataframes_built(python: str, out: Path, report: Path, master: str) -> dict[str, int]:
    """DataFrames one `kafkatap analyze` builds, per kafkatap job: each is an analyzer pass in the JVM, the planning
    cost that grows with the transforms' calls. Counted in a run of its own (the command's entry point with PySpark's
    DataFrame counting), not in the timed ones."""
    cmd = [python, "-c", _COUNTED, "analyze", str(out), "-o", str(report), "--master", master]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=report.parent)  # as in analyze_once
    if run.returncode != 0:
        raise RuntimeError(f"analyze {out} failed ({run.returncode}): {run.stderr[-2000:]}")
    counts = json.loads(run.stderr.strip().splitlines()[-1])
    return {"total": sum(counts.values()), **dict(sorted(counts.items()))}


def summarize(name: str, runs: list[dict]) -> dict:
    """Medians over the runs (Spark's counts are the same in every run but for the broadcasts adaptive execution
    picks; the median is reported)."""
    def med(values) -> float:
        return round(statistics.median(values), 2)

    counted = ("jobs", "stages", "tasks", "queries", "largest_plan")
    jobs = {job: {"seconds": med(r["jobs"][job] for r in runs),
                  **({k: int(med(getattr(r["spark"][job], k) for r in runs)) for k in counted}
                     if all(job in r["spark"] for r in runs) else {})}
            for job in runs[0]["jobs"]}
    total = {k: int(med(getattr(r["spark"]["total"], k) for r in runs)) for k in (*counted, "plan_chars")}
    return {"input": name, "runs": len(runs), "wall_s": med(r["wall"] for r in runs),
            "cpu_s": med(r["cpu"] for r in runs), "walls_s": [round(r["wall"], 2) for r in runs],
            "spark": total, "jobs": jobs}


def table(result: dict) -> str:
    lines = [f"{result['input']}: wall {result['wall_s']} s (runs {result['walls_s']}), CPU {result['cpu_s']} s; "
             f"Spark jobs {result['spark']['jobs']}, stages {result['spark']['stages']}, tasks "
             f"{result['spark']['tasks']}, queries {result['spark']['queries']}, largest plan "
             f"{result['spark']['largest_plan']:,} chars ({result['spark']['plan_chars']:,} in all)",
             f"  {'job':<22}{'s':>7}{'jobs':>6}{'stages':>8}{'tasks':>7}{'queries':>9}{'largest plan':>14}"]
    for job, j in result["jobs"].items():
        counts = (f"{j['jobs']:>6}{j['stages']:>8}{j['tasks']:>7}{j['queries']:>9}{j['largest_plan']:>14,}"
                  if "jobs" in j else f"{'-':>6}{'-':>8}{'-':>7}{'-':>9}{'-':>14}")
        lines.append(f"  {job:<22}{j['seconds']:>7.1f}{counts}")
    if "dataframes" in result:
        built = result["dataframes"]
        lines.append(f"  DataFrames built: {built['total']:,} (" + ", ".join(
            f"{job} {n:,}" for job, n in built.items() if job != "total") + ")")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outs", nargs="*", type=Path, metavar="OUT", help="dissect output folders (default: the "
                        f"bundled {SAMPLE} sample, dissected here)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--baseline-python", metavar="PYTHON",
                        help="also run the kafkatap another Python has (e.g. an earlier checkout's venv), alternating")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for every run (repeatable), to measure it against a run without")
    parser.add_argument("--dataframes", action="store_true",
                        help="after the timed runs, one more per input counting the DataFrames each job builds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafkatap-analyze-bench-") as tmp:
        work = Path(tmp)
        outs = args.outs or [dissect_sample(work)]
        pythons = {"": PYTHON} | ({"baseline ": args.baseline_python} if args.baseline_python else {})
        runs = [(label, python, out) for out in outs for label, python in pythons.items()]
        seen: dict[tuple[str, Path], list[dict]] = {(label, out): [] for label, _, out in runs}
        for i in range(args.runs):
            # alternating, so a slow spell of the machine hits all; each round in the other order, since a run's
            # place in its round counted: in two rounds of 6 pairs, a version ran 0.4 s faster second than first
            for n, (label, python, out) in (enumerate(runs) if i % 2 == 0 else reversed(list(enumerate(runs)))):
                seen[label, out].append(analyze_once(python, out, work / f"report-{n}-{i}", work / f"events-{n}-{i}",
                                                     args.master, args.conf))
        results = [summarize(f"{label}{out}", ms) for (label, out), ms in seen.items()]
        if args.dataframes:
            for result, (n, (label, python, out)) in zip(results, enumerate(runs)):
                result["dataframes"] = dataframes_built(python, out, work / f"report-{n}-counted", args.master)
    for result in results:
        print(table(result))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
