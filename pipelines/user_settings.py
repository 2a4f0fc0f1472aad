"""What a user gives a local driver from outside the command: spark-submit's arguments and defaults file, and the
variables every `java` reads. A session's own settings take precedence over the first two, so what matters there
is what a session cannot set (its JVM's heap) and what would clash with ours (`planner_extension`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

JAVA_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
"""Options every JVM the `java` launcher starts takes (the driver's among them), whatever spark-submit passes."""
MEMORY_VARIABLES = ("SPARK_DRIVER_MEMORY", "SPARK_MEM")
"""The driver's heap when spark-submit is not told one (Spark's launcher reads them in this order)."""


def submit_text() -> str:
    """PYSPARK_SUBMIT_ARGS and the text of spark-defaults.conf (SPARK_CONF_DIR, else SPARK_HOME/conf), if any."""
    text = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    spark_home = os.environ.get("SPARK_HOME")
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (os.path.join(spark_home, "conf") if spark_home else None)
    if conf_dir:
        try:
            text += "\n" + Path(conf_dir, "spark-defaults.conf").read_text(errors="replace")
        except OSError:
            pass
    return text


def driver_jvm() -> list[str]:
    """What shapes the driver's JVM from outside: the heap named to spark-submit (`--driver-memory`,
    `spark.driver.memory`) or in its variables, and the `java` option variables, each as written."""
    heap = re.findall(r"--driver-memory[\s=]+\S+|\bspark\.driver\.memory[\s=]+\S+", submit_text())
    return [*heap, *(f"{name}={os.environ.get(name, '')}" for name in (*MEMORY_VARIABLES, *JAVA_VARIABLES))]
