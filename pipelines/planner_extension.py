"""The driver's planner extension (OneTaskShuffles.java), named to every local session.

Spark plans a shuffle into one partition for each join and window of a one-partition run whose size it cannot
bound (the Java source says why); the extension turns those shuffles into coalesces. It is Java because Spark's
physical planning is only open to JVM classes: it is in the jar of kafkatap's JVM classes (`jvm_jar`), compiled on
first use. Without a Java compiler a run is the same, only slower. A user who names jars or extensions of their own
keeps them, and the run goes without it (`_named_by_user`).

Measured on a 228k-frame chatty capture (`kafkatap analyze`, two runs each way, alternating, same report): 85.5 and
89.2 s (152 and 159 CPU seconds) without, 80.8 and 78.4 s (141 and 140) with; Spark stages 143 -> 42. The bundled
sample's run did not change beyond its noise (its shuffles carry a few hundred rows).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from kafkatap.pipelines import jvm_jar, user_settings

SOURCE = Path(__file__).with_name("OneTaskShuffles.java")
EXTENSION = "kafkatap.OneTaskShuffles"
"""The extension's class, as `spark.sql.extensions` names it."""
ENABLED = "spark.kafkatap.oneTaskShuffles"
"""The session setting that turns its rule on (OneTaskShuffles.ENABLED): one-partition runs set it
(`intermediates.ONE_PARTITION_CONF`)."""
log = logging.getLogger(__name__)


def _named_by_user() -> list[str]:
    """The settings of ours a user names too, through PYSPARK_SUBMIT_ARGS or spark-defaults.conf: ours would replace
    theirs (a session's settings take precedence over both), so the extension then stays out."""
    text = user_settings.submit_text()
    named = {"spark.jars": r"--jars\b|\bspark\.jars[\s=]", "spark.sql.extensions": r"\bspark\.sql\.extensions[\s=]"}
    return [key for key, pattern in named.items() if re.search(pattern, text)]


def session_settings() -> dict[str, str]:
    """What a session starts with to load kafkatap's JVM classes (`jvm_jar`) and name the extension; nothing when
    they cannot be compiled, or when the user names jars or extensions of their own (kept as they are, and the run
    plans its shuffles as Spark does)."""
    theirs = _named_by_user()
    if theirs:
        log.info("the user sets %s: the planner extension stays out", ", ".join(theirs))
        return {}
    path = jvm_jar.jar()
    return {"spark.jars": str(path), "spark.sql.extensions": EXTENSION} if path else {}
