"""A class-data-sharing archive of the classes a local Spark driver loads, so a JVM's start costs less after the first.

A local run's JVM loads, parses and verifies about 25,800 classes (Spark, Scala, Hadoop, Parquet, Jackson and the
ones they generate), most of them during its first queries. JDK 17 dumps the classes a running JVM has loaded into an
archive on request (the `VM.cds dynamic_dump` diagnostic command, in a JVM started with -XX:+RecordDynamicDumpInfo),
and a later JVM given -XX:SharedArchiveFile maps them instead. A JVM's own exit cannot do it
(-XX:ArchiveClassesAtExit): PySpark stops its JVM without the orderly exit the dump needs.

The first local run after an install records and, once its report is written, links the classes it loaded and never
linked (`_link_loaded`, which JDK 17's dump would leave out) and dumps: about 19 s more, 217 MB in the user's cache.
Every later local run maps the archive. On the bundled sample, three runs each way, alternating (load
3-5): the session started in 4.1-5.7 s instead of 5.5-7.4 s, and the JVM used 35-46 s of CPU instead of 43-49 s. An
archive belongs to one Java, one set of Spark jar files (names, sizes and modification times, `_jar_key`), one way
of dumping and the settings from outside that shape the driver's JVM (`user_settings.driver_jvm`: a heap of 32 GB or
more turns compressed object pointers off, and JDK 17 then maps no archive dumped with them on): its name is a digest
of them. A JVM that still refuses it (-Xshare:auto, the default, goes on without it) had a reason the key does not
hold: the run removes it (`check_mapped`), and the next run dumps one for its own settings. KAFKATAP_CLASS_ARCHIVE
names another folder for the archives (and the jar of kafkatap's JVM classes, `cache_folder`), or `off`.

Every new venv, Spark or Java makes a new archive, and the old one would stay in the cache for good (ten of them,
1.4 GB, on a machine that reinstalled through a day). A JVM that maps an archive marks it used (its modification
time), and each dump removes the archives, and half-written ones, no run has used for `UNUSED_DAYS`, and keeps at most
`KEPT_ARCHIVES`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kafkatap.pipelines import user_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENV = "KAFKATAP_CLASS_ARCHIVE"
DUMPED = "loaded classes linked first"
"""How an archive is dumped, in its name's digest: an archive dumped another way is not mapped, but dumped again."""
UNUSED_DAYS = 30
"""An archive no run has mapped for this long belongs to an install that is gone (or rarely used: it is dumped again
on its next run)."""
KEPT_ARCHIVES = 3
"""At most this many archives stay, the ones runs used last (about 220 MB each): a day of reinstalls made one per new
venv (23 of them, 3.3 GB, on the machine where the archive was built)."""
log = logging.getLogger(__name__)
_recording: list[Path] = []  # the archive this process's JVM records for, once it started one that does
_mapping: list[Path] = []  # the archive the last `java_options` gave the JVM to map, until `check_mapped`


def spark_jars() -> Path:
    """The installed pyspark's jars: what the driver's classes come from, so what an archive holds and what kafkatap's
    own JVM classes compile against (`jvm_jar`)."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def archive_path() -> Path | None:
    """Where the archive of this Java and these Spark jars is, or would be; None when switched off or no Java."""
    setting = os.environ.get(ENV, "")
    if setting == "off":
        return None
    from kafkatap.pipelines.launch import find_java  # here: launch imports pyspark, which most callers never need

    java = find_java()
    if java is None:
        return None
    import pyspark

    jars = spark_jars()
    real = Path(java).resolve()
    key = "\n".join([DUMPED, str(real), str(real.stat().st_mtime_ns), pyspark.__version__, str(jars),
                     *sorted(_jar_key(p) for p in jars.glob("*.jar")), *user_settings.driver_jvm()])
    return cache_folder() / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def _jar_key(jar: Path) -> str:
    """A jar as the JVM checks it before it maps an archive: its name, size and modification time. A venv made again
    at the same path has jars of the same names, and the JVM refused the earlier venv's archive, without a word under
    `-Xlog:cds*=off` and without a dump to replace it, in every run after (a checkout's `make demo` then ran the bundled
    sample without its archive)."""
    stat = jar.stat()
    return f"{jar.name} {stat.st_size} {stat.st_mtime_ns}"


def cache_folder() -> Path:
    """Where local runs keep what they make for later runs (the archives, `planner_extension`'s jar): the folder
    KAFKATAP_CLASS_ARCHIVE names, else the user's cache."""
    setting = os.environ.get(ENV, "")
    if setting and setting != "off":
        return Path(setting)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafkatap"


def java_options() -> str:
    """The driver's JVM options: map the archive when there is one, else record for the dump after the run."""
    path = archive_path()
    _mapping.clear()
    if path is None:
        return ""
    # the dump warns of every class it leaves out (hundreds of lines): none of them is the user's business
    quiet = "-Xlog:cds*=off"
    if path.exists():
        _mark_used(path)
        _mapping.append(path)
        return f"-XX:SharedArchiveFile={path} {quiet}"
    _recording.append(path)
    return f"-XX:+RecordDynamicDumpInfo {quiet}"


def check_mapped(spark: "SparkSession") -> None:
    """Remove the archive this process's JVM was given if the JVM did not map it, so that the next run records and
    dumps one it maps, instead of every run starting without one (a driver heap of 32 GB or more given some way
    `user_settings` does not read, for one). Read from the JVM's memory maps: JDK 17 tells a refusal nowhere else
    (`-Xlog:cds` is off, and the flags it shows are the same as for an archive it mapped). Where there are no
    /proc maps, nothing is known and nothing removed."""
    if not _mapping:
        return
    path = _mapping.pop()
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    try:
        inode = path.stat().st_ino
        with open(f"/proc/{pid}/maps") as maps:
            mapped = any(_maps_file(line) == (inode, path.name) for line in maps)
    except OSError:  # no /proc (not Linux), or the archive already gone
        return
    if not mapped:
        log.warning("the JVM did not map the class archive %s (dumped under other settings): removed, so the next "
                    "run dumps one for these", path)
        path.unlink(missing_ok=True)  # another JVM that maps it keeps its pages


def _maps_file(line: str) -> tuple[int, str]:
    """(inode, file name) of a line of /proc/PID/maps: the inode is the file's wherever it is mounted or linked, and
    the name is the one the JVM opened."""
    fields = line.split(maxsplit=5)
    if len(fields) < 6 or not fields[4].isdigit():
        return 0, ""
    name = fields[5].rstrip("\n").removesuffix(" (deleted)")
    return int(fields[4]), name.rpartition("/")[2]


def _mark_used(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:  # another user's cache: theirs to keep
        pass


def prune(folder: Path) -> None:
    """Remove the archives (and half-written ones) in `folder` that no run has used for `UNUSED_DAYS`, and the archives
    beyond the `KEPT_ARCHIVES` used last."""
    oldest = time.time() - UNUSED_DAYS * 86400
    archives = []
    for old in [*folder.glob("spark-*.jsa"), *folder.glob("spark-*.jsa.*.partial")]:
        try:
            used = old.stat().st_mtime
            if used < oldest:
                old.unlink()
            elif old.suffix == ".jsa":
                archives.append((used, old))
        except OSError:  # gone meanwhile, or not ours
            pass
    for _, old in sorted(archives, reverse=True)[KEPT_ARCHIVES:]:
        old.unlink(missing_ok=True)  # a JVM that maps it keeps its pages


def _array(gateway, cls, *items):
    """A Java array of `cls` holding items."""
    out = gateway.new_array(cls, len(items))
    for i, item in enumerate(items):
        out[i] = item
    return out


def diagnostic_command(spark: "SparkSession", command: str, *arguments: str) -> None:
    """Run one of the JVM's diagnostic commands (as `jcmd` names them, in the MBean's camel case: `vmCds` for
    `VM.cds`), through MBeanServer's public interface: py4j looks methods up on the server's own class, which Java's
    modules keep out of reach."""
    jvm, gateway = spark.sparkContext._jvm, spark.sparkContext._gateway
    for_name = jvm.java.lang.Class.forName
    invoke = for_name("javax.management.MBeanServer").getMethod("invoke", _array(
        gateway, jvm.java.lang.Class, for_name("javax.management.ObjectName"), for_name("java.lang.String"),
        for_name("[Ljava.lang.Object;"), for_name("[Ljava.lang.String;")))
    params = _array(gateway, jvm.java.lang.Object, _array(gateway, jvm.java.lang.String, *arguments))
    signature = _array(gateway, jvm.java.lang.String, "[Ljava.lang.String;")
    invoke.invoke(jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer(), _array(
        gateway, jvm.java.lang.Object, jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
        command, params, signature))


def dump(spark: "SparkSession") -> None:
    """Dump the archive from this process's recording JVM, once, after a complete run, unless another run dumped it
    meanwhile (about 19 s saved). Written beside and renamed, so a run that starts meanwhile (or a second one dumping)
    never maps half a file; a failure only costs the gain."""
    if not _recording:
        return
    path = _recording.pop()
    if path.exists():  # another first run (a second command, the tests' other process) dumped it meanwhile
        _mark_used(path)
        return
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    _link_loaded(spark.sparkContext._jvm)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        diagnostic_command(spark, "vmCds", "dynamic_dump", str(partial))
        if partial.exists():
            os.replace(partial, path)
            prune(path.parent)
    except Exception as exc:  # noqa: BLE001 - the archive only saves time: the run itself succeeded
        partial.unlink(missing_ok=True)
        log.warning("no class archive written to %s: %s", path, exc)


def _link_loaded(jvm) -> None:  # noqa: ANN001 - py4j's view of the JVM
    """Link the classes the JVM loaded and never linked, so that the dump keeps them (`LoadedClasses.java` says why:
    about 4,200 classes of a run of the bundled sample). Without kafkatap's JVM classes (`jvm_jar`: no Java compiler,
    or jars the user names) the archive holds the classes Java linked, as it would without this step."""
    from py4j.java_gateway import JavaClass
    from py4j.protocol import Py4JError

    linker = jvm.kafkatap.LoadedClasses
    if not isinstance(linker, JavaClass):  # py4j names a class it cannot load as a package
        return
    try:
        log.info("linked %d loaded classes before the dump", linker.link())
    except Py4JError as exc:  # only the archive's coverage is lost
        log.warning("the loaded classes were not linked before the dump: %s", exc)
