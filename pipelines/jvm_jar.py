"""The jar of kafkatap's own JVM classes (`pipelines/*.java`): compiled once per Spark, loaded by every local session.

Four classes, each Java because what it does is only open to JVM code: the planner extension (OneTaskShuffles.java,
`planner_extension`), the class linker the class archive's dump calls first (LoadedClasses.java, `class_archive`),
the driver's class loader that remembers misses (ClassLookups.java, `class_lookups`) and py4j's objects listed and
released many at a time (GatewayObjects.java, `gateway_objects`). They are compiled here, on
first use, against the installed pyspark's jars (`javac` from the JDK `make` installs, or JAVA_HOME's), into the same
cache as the class archives, and a local session loads the jar from there (`spark.jars`, which the driver's class
archive does not depend on). Without a Java compiler a run is the same, only slower: one warning says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

from kafkatap.pipelines.class_archive import cache_folder, spark_jars
from kafkatap.pipelines.launch import find_java

SOURCES = sorted(Path(__file__).parent.glob("*.java"))
log = logging.getLogger(__name__)


def jar_path() -> Path:
    """Where the jar of these sources for this pyspark is, or will be."""
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in SOURCES:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return cache_folder() / f"kafkatap-{pyspark.__version__}-{digest.hexdigest()[:16]}.jar"


def jar() -> Path | None:
    """The jar, compiled now if this is its first use; None (and one warning) when it cannot be."""
    path = jar_path()
    if path.exists():
        return path
    javac = find_java("javac")  # the compiler of the JDK whose java runs Spark
    if javac is None:
        log.warning("no Java compiler (javac) found: one-partition runs plan their shuffles as Spark does, and the "
                    "class archive keeps only the classes Java links (slower)")
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            subprocess.run([javac, "--release", "17", "-nowarn", "-cp", str(spark_jars() / "*"), "-d", tmp,
                            *map(str, SOURCES)], check=True, capture_output=True, text=True)
            partial = Path(tmp) / path.name
            with zipfile.ZipFile(partial, "w") as out:
                for cls in sorted(Path(tmp).rglob("*.class")):
                    out.write(cls, cls.relative_to(tmp).as_posix())
            os.replace(partial, path)  # whole or not at all: another run may be compiling it too
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else exc
        log.warning("kafkatap's JVM classes did not compile, runs go on without them (slower): %s", detail)
        return None
    return path
