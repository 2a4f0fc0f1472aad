"""The driver's planner extension (OneTaskShuffles.java): compiled once per Spark, then named to every local session.

Spark plans a shuffle into one partition for each join and window of a one-partition run whose size it cannot
bound (the Java source says why); the extension turns those shuffles into coalesces. It is Java because Spark's
physical planning is only open to JVM classes: it is compiled here, on first use, against the installed pyspark's
jars (`javac` from the JDK `make` installs, or JAVA_HOME's), into the same cache as the class archives, and the
session loads it from there (`spark.jars`, which the driver's class archive does not depend on). Without a Java
compiler a run is the same, only slower: one warning says so. A user who names jars or extensions of their own keeps
them, and the run goes without it (`_named_by_user`).

Measured on a 228k-frame chatty capture (`kafkatap analyze`, two runs each way, alternating, same report): 85.5 and
89.2 s (152 and 159 CPU seconds) without, 80.8 and 78.4 s (141 and 140) with; Spark stages 143 -> 42. The bundled
sample's run did not change beyond its noise (its shuffles carry a few hundred rows).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import tempfile
import zipfile
from pathlib import Path

from kafkatap.pipelines.class_archive import cache_folder
from kafkatap.pipelines.launch import find_java

SOURCE = Path(__file__).with_name("OneTaskShuffles.java")
EXTENSION = "kafkatap.OneTaskShuffles"
"""The extension's class, as `spark.sql.extensions` names it."""
ENABLED = "spark.kafkatap.oneTaskShuffles"
"""The session setting that turns its rule on (OneTaskShuffles.ENABLED): one-partition runs set it
(`intermediates.ONE_PARTITION_CONF`)."""
log = logging.getLogger(__name__)


def jar_path() -> Path:
    """Where the jar of this source for this pyspark is, or will be."""
    import pyspark

    key = hashlib.sha256(SOURCE.read_bytes() + pyspark.__version__.encode()).hexdigest()[:16]
    return cache_folder() / f"planner-{pyspark.__version__}-{key}.jar"


def jar() -> Path | None:
    """The extension's jar, compiled now if this is its first use; None (and one warning) when it cannot be."""
    path = jar_path()
    if path.exists():
        return path
    javac = find_java("javac")  # the compiler of the JDK whose java runs Spark
    if javac is None:
        log.warning("no Java compiler (javac) found: one-partition runs plan their shuffles as Spark does (slower)")
        return None
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            subprocess.run([javac, "--release", "17", "-nowarn", "-cp", str(jars / "*"), "-d", tmp, str(SOURCE)],
                           check=True, capture_output=True, text=True)
            partial = Path(tmp) / path.name
            with zipfile.ZipFile(partial, "w") as out:
                for cls in sorted(Path(tmp).rglob("*.class")):
                    out.write(cls, cls.relative_to(tmp).as_posix())
            os.replace(partial, path)  # whole or not at all: another run may be compiling it too
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else exc
        log.warning("the planner extension did not compile, runs plan their shuffles as Spark does: %s", detail)
        return None
    return path


def _named_by_user() -> list[str]:
    """The settings of ours a user names too, through PYSPARK_SUBMIT_ARGS or spark-defaults.conf: ours would replace
    theirs (a session's settings take precedence over both), so the extension then stays out."""
    text = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    spark_home = os.environ.get("SPARK_HOME")
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (os.path.join(spark_home, "conf") if spark_home else None)
    if conf_dir:
        try:
            text += "\n" + Path(conf_dir, "spark-defaults.conf").read_text(errors="replace")
        except OSError:
            pass
    named = {"spark.jars": r"--jars\b|\bspark\.jars[\s=]", "spark.sql.extensions": r"\bspark\.sql\.extensions[\s=]"}
    return [key for key, pattern in named.items() if re.search(pattern, text)]


def session_settings() -> dict[str, str]:
    """What a session starts with to load the extension; nothing when it cannot be compiled, or when the user names
    jars or extensions of their own (kept as they are, and the run plans its shuffles as Spark does)."""
    theirs = _named_by_user()
    if theirs:
        log.info("the user sets %s: the planner extension stays out", ", ".join(theirs))
        return {}
    path = jar()
    return {"spark.jars": str(path), "spark.sql.extensions": EXTENSION} if path else {}
