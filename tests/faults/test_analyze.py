"""`kafkatap analyze` when things go wrong, driven through the real CLI: bad arguments, inputs that are not the
dissector's, no Java, a Spark that does not start, a full disk, Ctrl-C and SIGTERM; and a good run that keeps Spark's
own log off the terminal.

Each case checks the exit code, the one line that explains it, and that no Python or Java stack trace reached the
terminal. Cases that start a JVM are marked spark and slow (each costs seconds).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tables.schema import BATCHES, FRAMES
from kafkatap.errors import CommandError
from kafkatap.pipelines import inputs, launch
from kafkatap.pipelines.inputs import check_inputs
from kafkatap.samples.brokers import free_ports
from tests.support.cli import assert_one_clean_line, run_cli
from tests.support.disks import tmpfs
from tests.support.paths import SAMPLES

SAMPLE = SAMPLES / "idempotent.pcapng"
JVM_NOISE = ("WARNING: Using incubator modules", "log4j", "WARN ", "Warning")

pytestmark = pytest.mark.skipif(not SAMPLE.exists(), reason="sample not generated yet")


@pytest.fixture(scope="module")
def dissected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dissected") / "out"
    dissect_captures([str(SAMPLE)], str(out))
    return out


def analyze(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_cli("analyze", *map(str, args), cwd=cwd, env=env)


def test_bad_arguments_are_usage_errors(dissected: Path, tmp_path: Path) -> None:
    assert_one_clean_line(analyze(dissected, "-o", "r", "--window", "banana", cwd=tmp_path), 2,
                          "bad window 'banana': use a number and a unit")
    assert_one_clean_line(analyze(dissected, "-o", "r", "--jobs", "sessions,nope", cwd=tmp_path), 2,
                          "unknown jobs nope: choose from sessions")
    assert_one_clean_line(analyze(dissected, cwd=tmp_path), 2, "the following arguments are required: -o/--out")
    assert not (tmp_path / "r").exists()


def test_a_missing_input_folder(tmp_path: Path) -> None:
    assert_one_clean_line(analyze(tmp_path / "no" / "such", "-o", "r", cwd=tmp_path), 1, "does not exist")
    (tmp_path / "a_file").write_text("x")
    assert_one_clean_line(analyze(tmp_path / "a_file", "-o", "r", cwd=tmp_path), 1, "is not a folder")


def no_frames(out: Path) -> None:
    out.mkdir()
    (out / "notes.txt").write_text("not a dissect output")


def two_columns(out: Path) -> None:
    (out / "frames").mkdir(parents=True)
    table = pa.table({"conn_id": ["c"], "api_key": pa.array([0], pa.int16())})
    pq.write_table(table, out / "frames" / "part-00000.parquet")


def batches_without_fingerprints(out: Path) -> None:
    """An earlier version's output: its batches lack the fingerprints, which Spark would read as nulls (no possible
    re-sends, silently)."""
    for name, schema in (("frames", FRAMES), ("batches", BATCHES.remove(BATCHES.get_field_index("fingerprint")))):
        (out / name).mkdir(parents=True)
        pq.write_table(schema.empty_table(), out / name / "part-00000.parquet")


def corrupt(out: Path) -> None:
    (out / "frames").mkdir(parents=True)
    (out / "frames" / "part-00000.parquet").write_bytes(b"PAR1 but not really")


def empty_frames(out: Path) -> None:
    (out / "frames").mkdir(parents=True)
    (out / "frames" / "_SUCCESS").write_text("")


NOT_THE_DISSECTORS = pytest.mark.parametrize("make,phrase", [
    (no_frames, "is not a kafkatap dissect output: it has no frames/ table; run `kafkatap dissect CAPTURE -o OUT`"),
    (two_columns, f"lacks {len(FRAMES) - 2} of the {len(FRAMES)} columns of the dissector's frames table (client_addr, "
                  "broker_addr"),
    (batches_without_fingerprints, f"lacks 1 of the {len(BATCHES)} columns of the dissector's batches table "
                                   "(fingerprint): it was written by another version"),
    (corrupt, "is not a Parquet file"),
    (empty_frames, "cannot read the frames table"),
], ids=["no-frames", "other-schema", "older-batches", "corrupt", "empty"])


@NOT_THE_DISSECTORS
def test_inputs_that_are_not_the_dissectors(make, phrase: str, tmp_path: Path) -> None:  # noqa: ANN001 - a maker
    """A local folder is checked before the JVM starts: the answer comes at once, and Spark never ran."""
    make(tmp_path / "out")
    result = analyze(tmp_path / "out", "-o", "report", cwd=tmp_path, env=without_java())  # Spark could not start
    assert_one_clean_line(result, 1, phrase)
    assert "dissect" in result.stderr


@NOT_THE_DISSECTORS
@pytest.mark.spark
def test_inputs_that_are_not_the_dissectors_through_spark(make, phrase: str, tmp_path: Path, spark) -> None:  # noqa: ANN001
    """The same answers through Hadoop FS and Spark, for a URI (hdfs://, s3a://; here file://) and the API."""
    make(tmp_path / "out")
    with pytest.raises(CommandError, match=re.escape(phrase)):
        check_inputs(spark, (tmp_path / "out").as_uri())


@pytest.mark.spark
def test_a_dissect_output_is_checked_with_one_read_of_its_frames_schema(dissected: Path, spark, monkeypatch) -> None:
    """Both checks read the frames and batches tables' schemas once each (a read per declared column was 36 Spark
    jobs more per analyze)."""
    reads = []
    monkeypatch.setattr(inputs.pq, "read_schema", lambda path, _read=pq.read_schema: reads.append(path) or _read(path))
    inputs.check_local(str(dissected))
    sc = spark.sparkContext
    sc.setJobGroup("check-inputs-test", "the input check's Spark jobs")
    try:
        inputs.check_inputs(spark, dissected.as_uri())
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert [Path(path).parent.name for path in reads] == ["frames", "batches"]
    assert len(sc.statusTracker().getJobIdsForGroup("check-inputs-test")) == 2


def without_java() -> dict[str, str]:
    """This environment without JAVA_HOME and without a `java` on the PATH."""
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = os.pathsep.join(f for f in env.get("PATH", "").split(os.pathsep) if f and
                                  not (Path(f) / "java").exists())
    return env


def test_without_java_it_says_how_to_get_it(dissected: Path, tmp_path: Path) -> None:
    assert_one_clean_line(analyze(dissected, "-o", "report", cwd=tmp_path, env=without_java()), 1,
                          "Spark needs Java 17 or newer: install it (Debian: apt-get install "
                          "openjdk-17-jre-headless) or set JAVA_HOME")


@pytest.mark.spark  # needs Java, though it starts no JVM
def test_a_master_nobody_listens_on_fails_at_once(dissected: Path, tmp_path: Path) -> None:
    master = f"spark://127.0.0.1:{free_ports(1)[0]}"
    started = time.monotonic()
    result = analyze(dissected, "-o", "report", "--master", master, cwd=tmp_path)
    assert_one_clean_line(result, 1, f"Spark did not start (no Spark master answers at {master})")
    assert time.monotonic() - started < 30  # Spark alone retries for a minute


@pytest.mark.spark
def test_a_master_spark_refuses_names_its_log(dissected: Path, tmp_path: Path) -> None:
    result = analyze(dissected, "-o", "report", "--master", "banana", cwd=tmp_path)
    assert_one_clean_line(result, 1, "Spark did not start (Master must either be yarn or start with spark")
    log = Path(re.search(r"see Spark's log in (\S+)", result.stderr).group(1))
    assert "Exception in thread" in log.read_text()


@pytest.mark.spark
@pytest.mark.slow
def test_a_full_disk_for_the_report(dissected: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "report", "64k") as report:
        (report / "summary.json").write_text('{"claims": "complete"}')
        result = analyze(dissected, "-o", report, cwd=tmp_path)
        assert_one_clean_line(result, 1, f"no space left on the device of {report}")
        assert not (report / "summary.json").exists()  # the old one went first: no complete-looking report is left


@pytest.mark.spark
@pytest.mark.slow
def test_a_good_run_keeps_spark_off_the_terminal(dissected: Path, tmp_path: Path) -> None:
    result = analyze(dissected, "-o", "report", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not any(noise in result.stderr for noise in JVM_NOISE), result.stderr
    *jobs, named = result.stderr.splitlines()
    assert all(re.fullmatch(r"\w+: done in [\d.]+ s", line) for line in jobs), result.stderr
    log = Path(re.fullmatch(r"Spark's log: (\S+)", named).group(1))
    assert log.exists() and "WARNING: Using incubator modules" in log.read_text()  # the JVM's own lines went there
    assert json.loads(result.stdout) == json.loads((tmp_path / "report" / "summary.json").read_text())


def _analyze_until_a_job_ends(dissected: Path, report: Path, tmp_path: Path) -> tuple[subprocess.Popen, list[str]]:
    """`kafkatap analyze` in a process group of its own, once its first job's line came: Spark is up and the run is
    half-way. Returns the process and its stderr so far."""
    proc = subprocess.Popen([sys.executable, "-m", "kafkatap.cli", "analyze", str(dissected), "-o", str(report)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "done in" in line:
            break
    if not (seen and "done in" in seen[-1]):
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("".join(seen))
    return proc, seen


def _ended(proc: subprocess.Popen, seen: list[str], timeout: float) -> subprocess.CompletedProcess:
    """The interrupted command's outcome, its whole stderr included; its process group killed if it is still up."""
    try:
        stdout, rest = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, "".join(seen) + rest)


def _java_children(pid: int) -> list[int]:
    """The java processes `pid` started (pyspark's JVM)."""
    children = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    return [c for c in children if Path(f"/proc/{c}/comm").read_text().strip() == "java"]


def _running(pid: int) -> bool:
    """Not gone, and not a zombie nobody reaped yet (the state after the command's name in /proc/PID/stat)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.spark
@pytest.mark.slow
def test_an_interrupt_is_one_line_and_exit_130(sig: signal.Signals, dissected: Path, tmp_path: Path) -> None:
    """The signal goes to the whole process group, as a terminal's Ctrl-C does: the JVM gets it too (and dies of
    SIGTERM), which must still read as an interrupt, not as a Spark failure."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "summary.json").write_text('{"claims": "complete"}')
    proc, seen = _analyze_until_a_job_ends(dissected, report, tmp_path)
    os.killpg(proc.pid, sig)
    result = _ended(proc, seen, timeout=120)
    assert_one_clean_line(result, 130, "kafkatap analyze: interrupted")
    assert not (report / "summary.json").exists()


@pytest.mark.spark
@pytest.mark.slow
def test_an_interrupt_ends_the_command_though_its_jvm_stopped_answering(dissected: Path, tmp_path: Path) -> None:
    """After Ctrl-C the command waits for its jobs, and they for py4j calls into the JVM, which have no timeout: a JVM
    that stops answering then (frozen here by SIGSTOP; a CI run's analyze, given SIGTERM, was still up 120 s later)
    would hold the command for good. `launch.WIND_DOWN_S` after the interrupt the command kills it, and ends as an
    interrupt."""
    report = tmp_path / "report"
    proc, seen = _analyze_until_a_job_ends(dissected, report, tmp_path)
    try:
        (jvm,) = _java_children(proc.pid)
        os.kill(jvm, signal.SIGSTOP)
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)  # the JVM is in its group: none is left frozen
        raise
    result = _ended(proc, seen, timeout=launch.WIND_DOWN_S + 60)
    assert_one_clean_line(result, 130, "kafkatap analyze: interrupted")
    assert time.monotonic() - started >= launch.WIND_DOWN_S  # it did wait for the jobs to wind down first
    deadline = time.monotonic() + 10
    while _running(jvm) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(jvm)
