"""The class archive: recorded by a local run's JVM, dumped after its run, mapped by every later JVM."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatap.pipelines import class_archive, user_settings

UNLINKED = "org.apache.spark.ml.feature.Bucketizer"
"""A class the probe loads and never links (nothing of Spark's uses it): JDK 17's dump alone would leave it out."""
PROBE = f"""
import os
from kafkatap.pipelines import class_archive, user_settings
from kafkatap.pipelines.spark import get_spark

spark = get_spark("kafkatap-probe", "local[1]", short_run=True)
spark.range(3).count()
if os.environ.get("PROBE_LOADS"):  # from here on: not a JVM option, which the archive's key holds
    class_archive.diagnostic_command(spark, "vmLog", "output=file=" + os.environ["PROBE_LOADS"], "what=class+load=info")
jvm = spark.sparkContext._jvm
jvm.java.lang.Class.forName("{UNLINKED}", False, jvm.java.lang.ClassLoader.getSystemClassLoader())
pid = jvm.java.lang.ProcessHandle.current().pid()
with open(f"/proc/{{pid}}/maps") as maps:
    print(str(class_archive.archive_path()) in maps.read())
class_archive.dump(spark)
"""


def _probe(folder: Path, **env: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"} | {class_archive.ENV: str(folder)} | env
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300,
                          check=True).stdout.splitlines()[0]  # then the JVM's own lines of the dump


@pytest.mark.slow
def test_the_first_local_jvm_dumps_the_archive_and_the_next_maps_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert _probe(tmp_path) == "False"  # nothing to map yet: it records
    archives = list(tmp_path.glob("*.jsa"))  # beside the jar of kafkatap's JVM classes, which the JVM loads too
    assert len(archives) == 1 and archives[0].stat().st_size > 10 << 20
    loads = tmp_path / "loads.txt"
    assert _probe(tmp_path, PROBE_LOADS=str(loads)) == "True"
    assert list(tmp_path.glob("*.jsa")) == archives  # mapped, not dumped again
    # a class the first JVM loaded and never linked is in the archive too (`LoadedClasses.java`)
    assert f"{UNLINKED} source: shared objects file" in loads.read_text()
    # A JVM refuses an archive dumped with compressed object pointers when it has none (a heap of 32 GB or more): one
    # under the key of such a JVM's settings, as if the key did not hold them, is removed by the run it failed
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:-UseCompressedOops")
    refused = class_archive.archive_path()
    assert refused is not None and refused != archives[0]
    shutil.copy(archives[0], refused)
    assert _probe(tmp_path) == "False"
    assert not refused.exists() and archives[0].exists()  # the next such run dumps one of its own


def test_one_archive_per_java_and_jars_and_none_when_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    path = class_archive.archive_path()
    assert path is not None and path.parent == tmp_path and path.name.endswith(".jsa")
    monkeypatch.setattr(class_archive, "_recording", [])
    monkeypatch.setattr(class_archive, "_mapping", [])
    assert class_archive.java_options() .startswith("-XX:+RecordDynamicDumpInfo") and class_archive._recording == [path]
    assert class_archive._mapping == []
    path.write_bytes(b"")
    assert class_archive.java_options().startswith(f"-XX:SharedArchiveFile={path} ")
    assert class_archive._mapping == [path]  # to be checked once the JVM is up (`check_mapped`)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "another-jdk"))  # no java there
    assert class_archive.archive_path() is None
    monkeypatch.setenv(class_archive.ENV, "off")
    monkeypatch.delenv("JAVA_HOME")
    assert class_archive.archive_path() is None and class_archive.java_options() == ""


def test_jars_made_again_under_the_same_names_have_an_archive_of_their_own(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A venv made again at the same path holds jars of the same names in new files, which the JVM checks (size and
    modification time) and refuses the earlier archive for: that archive must not be the one the new venv maps."""
    jars = tmp_path / "jars"
    jars.mkdir()
    jar = jars / "spark-core_2.13-4.3.0.jar"
    jar.write_bytes(b"PK one")
    monkeypatch.setenv(class_archive.ENV, str(tmp_path / "archives"))
    monkeypatch.setattr(class_archive, "spark_jars", lambda: jars)
    made = jar.stat()
    first = class_archive.archive_path()
    assert class_archive.archive_path() == first  # the same files: the same archive
    os.utime(jar, ns=(made.st_atime_ns, made.st_mtime_ns + 1_000_000_000))  # the same bytes in a newer file
    newer = class_archive.archive_path()
    jar.write_bytes(b"PK a longer one")
    os.utime(jar, ns=(made.st_atime_ns, made.st_mtime_ns))  # another size with the first file's time
    assert len({first, newer, class_archive.archive_path()}) == 3


def test_settings_that_shape_the_driver_jvm_have_an_archive_of_their_own(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's heap and the `java` option variables decide what a JVM maps (above 32 GB of heap, no compressed
    object pointers: JDK 17 refuses an archive dumped with them), so each of their settings has its own archive; a
    setting that does not shape the JVM keeps the archive."""
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    for name in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME", *user_settings.MEMORY_VARIABLES,
                 *user_settings.JAVA_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    first = class_archive.archive_path()
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.eventLog.enabled=true pyspark-shell")
    assert class_archive.archive_path() == first
    paths = {first}
    for name, value in [("PYSPARK_SUBMIT_ARGS", "--driver-memory 40g pyspark-shell"),
                        ("PYSPARK_SUBMIT_ARGS", "--conf spark.driver.memory=40g pyspark-shell"),
                        ("SPARK_DRIVER_MEMORY", "40g"), ("JAVA_TOOL_OPTIONS", "-XX:-UseCompressedOops"),
                        ("JDK_JAVA_OPTIONS", "-Xmx40g")]:
        with monkeypatch.context() as setting:
            setting.setenv(name, value)
            paths.add(class_archive.archive_path())
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.memory   40g\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    paths.add(class_archive.archive_path())
    assert len(paths) == 7


def test_archives_no_run_has_used_for_a_month_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that maps its archive marks it used; old installs' archives and dumps left half-written go once they
    have been unused for `UNUSED_DAYS`, and nothing else in the folder does."""
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    monkeypatch.setattr(class_archive, "_mapping", [])
    mine = class_archive.archive_path()
    assert mine is not None
    month = class_archive.UNUSED_DAYS * 86400
    files = {name: tmp_path / name for name in (
        mine.name, "spark-4.3.0-0123456789abcdef.jsa", "spark-4.3.0-0123456789abcdef.jsa.4242.partial",
        "spark-4.2.0-fedcba9876543210.jsa", "notes.txt")}
    for name, path in files.items():
        path.write_bytes(b"")
        age = 3600 if name == "spark-4.2.0-fedcba9876543210.jsa" else month + 3600  # an hour old, or a month
        os.utime(path, (path.stat().st_atime, path.stat().st_mtime - age))
    assert class_archive.java_options().startswith(f"-XX:SharedArchiveFile={mine} ")  # mapped: used now
    class_archive.prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, "spark-4.2.0-fedcba9876543210.jsa",
                                                                 "notes.txt"])


def test_only_the_archives_used_last_are_kept(tmp_path: Path) -> None:
    """Each new venv makes an archive of its own: a day of reinstalls would fill the cache with them."""
    names = [f"spark-4.3.0-{n:016x}.jsa" for n in range(class_archive.KEPT_ARCHIVES + 2)]
    for age, name in enumerate(names):  # the first used last
        path = tmp_path / name
        path.write_bytes(b"")
        os.utime(path, (path.stat().st_atime, path.stat().st_mtime - 60 * age))
    (tmp_path / "kafkatap-4.3.0-0123456789abcdef.jar").write_bytes(b"")
    class_archive.prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*names[:class_archive.KEPT_ARCHIVES],
                                                                 "kafkatap-4.3.0-0123456789abcdef.jar"])


def test_an_archive_another_run_dumped_meanwhile_is_not_dumped_again(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two first runs record at once (two commands, the tests' two processes): the one that ends second keeps the
    archive the first one dumped, without asking its JVM for another (about 10 s)."""
    monkeypatch.setenv(class_archive.ENV, str(tmp_path))
    path = class_archive.archive_path()
    assert path is not None
    monkeypatch.setattr(class_archive, "_recording", [path])
    path.write_bytes(b"dumped by the other run")
    class_archive.dump(object())  # no JVM is asked: a session would be needed for that
    assert class_archive._recording == [] and list(tmp_path.iterdir()) == [path]
