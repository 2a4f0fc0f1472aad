"""kafkatap from Python: the functions behind the commands, for notebooks and scripts.

    import kafkatap
    kafkatap.dissect_captures(["cap.pcapng"], "out", ports=[9092])
    kafkatap.analyze("out", "report")
    kafkatap.read("report", "fenced_epochs")          # a pandas DataFrame
    kafkatap.dashboard("report", "dashboard.html")

Each stage is imported when called, so `import kafkatap` stays cheap and a notebook that only reads Parquet never
starts a JVM. Failures raise `kafkatap.errors.CommandError` (or ValueError for a wrong argument) with the message the
CLI would print. The dissect function is `dissect_captures`, not `dissect`: `kafkatap.dissect` is the dissector's
package.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from threading import Event
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas
    from pyspark.sql import DataFrame, SparkSession


def dissect_captures(captures: Sequence[str | os.PathLike], out: str | os.PathLike, *, ports: Iterable[int] = (9092,),
                     records: bool = False, payloads: bool = False, workers: int = 1, progress: bool = False,
                     tls_keylog: Iterable[str | os.PathLike] = (),
                     on_progress: Callable[[int, int], None] | None = None, stop: Event | None = None) -> dict:
    """Dissect capture files (one capture) into Parquet tables under `out`; returns its summary.json content.
    tls_keylog: NSS key log files to decrypt TLS with. on_progress(messages, capture_bytes) hears how far the run
    is (workers=1); setting `stop` ends the run early with what it has read (summary `interrupted`)."""
    from kafkatap.dissect.run import dissect_captures as run

    return run([os.fspath(c) for c in captures], os.fspath(out), ports=ports, records=records, payloads=payloads,
               workers=workers, progress=progress, tls_keylog=[os.fspath(k) for k in tls_keylog],
               on_progress=on_progress, stop=stop)


def analyze(out: str | os.PathLike, report: str | os.PathLike, *, spark: SparkSession | None = None,
            master: str | None = None, window: str = "1s", jobs: Sequence[str] | None = None,
            on_job: Callable[[str, float], None] | None = None, verbose: bool = False,
            spark_log: str | None = None) -> dict:
    """Run the pipelines over a dissect output into `report`; returns the report's summary.json content.
    Uses `spark` when given, else starts a local session (or one on `master`) whose JVM writes its log to
    `spark_log` (default: a new file under $TMPDIR/kafkatap-logs; verbose=True: the terminal); on_job(job, seconds)
    hears of each job as it ends."""
    from kafkatap.pipelines.failures import spark_failures
    from kafkatap.pipelines.inputs import short_run
    from kafkatap.pipelines.launch import log_path
    from kafkatap.pipelines.report import JOBS, run
    from kafkatap.pipelines.spark import get_spark

    log = None if verbose else spark_log or log_path("analyze")
    with spark_failures(os.fspath(report), log):
        if spark is None:
            spark = get_spark("kafkatap-analyze", master or "local[*]", log=log,
                              short_run=short_run(os.fspath(out)))
        return run(spark, os.fspath(out), os.fspath(report), list(jobs or JOBS), window, on_job=on_job)


def dashboard(report: str | os.PathLike, html: str | os.PathLike = "dashboard.html") -> str:
    """Write the self-contained HTML dashboard of a report; returns its path."""
    from kafkatap.dashboards.build import write_dashboard

    write_dashboard(os.fspath(report), os.fspath(html))
    return os.fspath(html)


@dataclass
class Outputs:
    """Where `report` wrote, and the two summaries (the report's is empty when the dissect was interrupted)."""
    dissected: Path
    report: Path
    page: Path
    dissect_summary: dict
    report_summary: dict


def report(captures: Sequence[str | os.PathLike], out: str | os.PathLike, *, ports: Iterable[int] = (9092,),
           workers: int = 1, tls_keylog: Iterable[str | os.PathLike] = (), spark: SparkSession | None = None,
           master: str | None = None, window: str = "1s", verbose: bool = False,
           on_stage: Callable[[str], None] | None = None, on_progress: Callable[[int, int], None] | None = None,
           on_job: Callable[[str, float], None] | None = None, stop: Event | None = None) -> Outputs:
    """The whole chain into `out`: dissected/ (with records), report/ and dashboard.html. on_stage(name) hears
    "dissect", "analyze" and "dashboard" as each starts; an interrupted dissect ends the chain there."""
    from kafkatap.pipelines.storage import window_interval

    window_interval(window)  # a bad window fails before the capture is read, not after
    root = Path(out)
    done = Outputs(root / "dissected", root / "report", root / "dashboard.html", {}, {})
    tell = on_stage or (lambda stage: None)
    tell("dissect")
    done.dissect_summary = dissect_captures(captures, done.dissected, ports=ports, records=True, workers=workers,
                                            tls_keylog=tls_keylog, on_progress=on_progress if workers == 1 else None,
                                            stop=stop)
    if done.dissect_summary["interrupted"]:
        return done
    tell("analyze")
    done.report_summary = analyze(done.dissected, done.report, spark=spark, master=master, window=window,
                                  on_job=on_job, verbose=verbose)
    tell("dashboard")
    dashboard(done.report, done.page)
    return done


def tables() -> dict[str, list[str]]:
    """The names `read` takes: the dissector's tables and the report's."""
    from kafkatap.dissect.tables.schema import TABLES as DISSECTED
    from kafkatap.pipelines.schema import TABLES as REPORTED

    return {"dissect": list(DISSECTED), "report": list(REPORTED)}


def read(folder: str | os.PathLike, table: str, spark: SparkSession | None = None) -> pandas.DataFrame | DataFrame:
    """One table of a dissect output or a report (`frames`, `fenced_epochs`, `sessions/members`, ...) with its
    declared columns: a pandas DataFrame (integers and booleans in pandas' nullable dtypes: `Int16`, `boolean`), or a
    Spark DataFrame when a session is given."""
    schema = _schema(table)
    root = os.fspath(folder)
    if spark is not None:
        from kafkatap.pipelines.storage import read_table

        return read_table(spark, root, table, schema)
    import pyarrow.dataset as ds

    from kafkatap.dashboards.load import conform, filesystem

    fs, path = filesystem(root)
    where = f"{path.rstrip('/')}/{table}"
    if fs.get_file_info(where).type.name == "NotFound":
        raise ValueError(f"{root} has no table {table!r}")
    return conform(ds.dataset(where, format="parquet", filesystem=fs).to_table(), schema).to_pandas(
        types_mapper=_nullable)


def _nullable(arrow_type: Any) -> Any:
    """pandas' nullable dtype for an integer or boolean column: an int16 `error_code` with nulls stays an integer
    (pandas' default turns it into float64 with NaN, and a bool column with nulls into objects)."""
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        return pd.api.types.pandas_dtype(str(arrow_type).replace("int", "Int").replace("uInt", "UInt"))
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    return None


def _schema(table: str) -> Any:
    from kafkatap.dissect.tables.schema import TABLES as DISSECTED
    from kafkatap.pipelines.schema import TABLES as REPORTED

    schema = DISSECTED.get(table) or REPORTED.get(table)
    if schema is None:
        raise ValueError(f"no table {table!r}; dissect tables: {', '.join(DISSECTED)}; report tables: "
                         f"{', '.join(REPORTED)}")
    return schema
