"""`kafkatap report CAPTURE [CAPTURE ...] -o DIR`: dissect, analyze and chart a capture in one go.

DIR/dissected (the dissector's tables), DIR/report (the pipelines' tables) and DIR/dashboard.html, with one progress
display over the three stages and a closing summary of what the capture shows. DIR appears whole when the run ends:
until then an earlier report there is left as it was. Exit codes as every command's: 1 when an input was not a
capture (the others are reported), 2 when DIR is a file or a folder of other files, 3 when the captures hold no
Kafka (nothing is analyzed or written), 130 after Ctrl-C (nothing is written).
"""

from __future__ import annotations

import os
import sys
import webbrowser
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kafkatap import api, errors
from kafkatap.dissect.cli import add_keylog_option, check_arguments, cut_short, keylog_files, no_kafka, unreadable
from kafkatap.dissect.stop import stop_on_signal
from kafkatap.dissect.tables import publish
from kafkatap.pipelines.launch import log_path
from kafkatap.pipelines.report import JOBS
from kafkatap.pipelines.cli import window_arg


def parser() -> errors.ArgumentParser:
    p = errors.ArgumentParser(prog="kafkatap report", description=__doc__.split("\n")[0])
    p.add_argument("captures", nargs="+", metavar="CAPTURE", help="pcap or pcapng files (one capture)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output folder (dissected/, report/, "
                                                                      "dashboard.html)")
    p.add_argument("--port", type=int, action="append", metavar="PORT",
                   help="a Kafka broker port (repeatable; default 9092; Kafka on other ports is found anyway)")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="dissect with N processes")
    add_keylog_option(p)
    p.add_argument("--master", default=None, help="Spark master for the pipelines (default local[*])")
    p.add_argument("--window", default="1s", type=window_arg,
                   help="throughput window, e.g. 500ms, 1s, 1m (default 1s)")
    p.add_argument("--open", action="store_true", help="open the dashboard in a browser when done")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display and no summary")
    p.add_argument("--verbose", action="store_true",
                   help="leave Spark's own log on the terminal instead of a file under the temp folder")
    return p


@errors.command("report")
def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_arguments(args.captures, args.port or [9092], args.workers)
    keylogs = keylog_files(args.tls_keylog, lambda line: print(f"kafkatap report: warning: {line}", file=sys.stderr))
    return run(args.captures, Path(args.out), ports=args.port or [9092], workers=args.workers, master=args.master,
               window=args.window, open_page=args.open, quiet=args.quiet, verbose=args.verbose,
               tls_keylog=keylogs)


OUTPUT = {"dissected", "report", "dashboard.html"}
"""What a report folder holds: `-o` on a folder with anything else is refused."""


def run(captures: list[str], out: Path, *, ports: list[int], workers: int = 1, master: str | None = None,
        window: str = "1s", open_page: bool = False, quiet: bool = False, verbose: bool = False,
        tls_keylog: list[str] | None = None) -> int:
    """The whole chain with its display; returns the exit code (also `kafkatap demo`'s). The stages are called one
    by one (not through api.report) so that Ctrl-C stops the dissect cleanly and the later stages at once. They
    write into a hidden folder beside OUT that takes OUT's place when all three are done: a run that fails or is
    interrupted leaves an earlier report whole, never mixed with a new one's tables."""
    console = Console(stderr=True)
    spark_log = None if verbose else log_path("report")
    total = sum(os.path.getsize(c) for c in captures)
    with Stages(console, console.is_terminal and not quiet, total) as stages, \
            publish.staged(out, OUTPUT, "a kafkatap report") as work:
        done = api.Outputs(work / "dissected", work / "report", work / "dashboard.html", {}, {})
        with stop_on_signal() as stop:
            done.dissect_summary = api.dissect_captures(
                captures, done.dissected, ports=ports, records=True, workers=workers, stop=stop,
                tls_keylog=tls_keylog or (), on_progress=stages.dissected if workers == 1 else None)
        stages.next()
        if done.dissect_summary["interrupted"]:
            raise errors.CommandError(f"interrupted: nothing was written, {out} is as it was before the run",
                                      errors.INTERRUPTED)
        if not done.dissect_summary["capture_files_read"]:
            raise errors.CommandError(f"no input was a capture it could read ({unreadable(done.dissect_summary)}): "
                                      "nothing to analyze")
        for line in cut_short(done.dissect_summary, str(done.dissected)):
            console.print(f"[yellow]warning:[/] {line}", soft_wrap=True)
        nothing = no_kafka(done.dissect_summary, ports)
        if nothing:
            raise errors.CommandError(f"{nothing}; nothing was analyzed or written", errors.NO_KAFKA)
        done.report_summary = api.analyze(done.dissected, done.report, master=master, window=window,
                                          on_job=stages.job_done, verbose=verbose, spark_log=spark_log)
        stages.next()
        api.dashboard(done.report, done.page)
        stages.next()
    done = api.Outputs(out / "dissected", out / "report", out / "dashboard.html", done.dissect_summary,
                       done.report_summary)
    if not quiet:
        closing(done, Console(), spark_log)
    if open_page:
        webbrowser.open(done.page.resolve().as_uri())
    bad = done.dissect_summary["unreadable_files"]
    if bad:
        raise errors.CommandError(f"{len(bad)} of {len(captures)} inputs could not be read as captures "
                                  f"({unreadable(done.dissect_summary)}); the report covers the others")
    return errors.OK


class Stages:
    """One progress display over the three stages: capture bytes while dissecting, jobs while analyzing."""

    def __init__(self, console: Console, enabled: bool, capture_bytes: int) -> None:
        self.progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), TextColumn("{task.fields[note]}"),
                                 TimeElapsedColumn(), console=console, transient=True, disable=not enabled)
        self.tasks = [self.progress.add_task("dissect", total=capture_bytes, note=""),
                      self.progress.add_task("analyze", total=len(JOBS), note="", start=False),
                      self.progress.add_task("dashboard", total=1, note="", start=False)]
        self.stage = 0

    def __enter__(self) -> Stages:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def dissected(self, messages: int, nbytes: int) -> None:
        self.progress.update(self.tasks[0], completed=nbytes, note=f"{messages:,} Kafka messages")

    def job_done(self, job: str, seconds: float) -> None:
        self.progress.update(self.tasks[1], advance=1, note=f"{job} ({seconds:.1f} s)")

    def next(self) -> None:
        """The current stage is done; the next one starts."""
        task = self.tasks[self.stage]
        self.progress.update(task, completed=self.progress.tasks[task].total)
        self.stage += 1
        if self.stage < len(self.tasks):
            self.progress.start_task(self.tasks[self.stage])
            if self.stage == 1:
                self.progress.update(self.tasks[1], note="starting Spark")


def _counts(by: dict[str, int] | None, most: int = 6) -> str:
    """`NAME n, NAME n, ...`, the most frequent first (the first `most` of them)."""
    items = sorted((by or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{name} {n:,}" for name, n in items[:most]) + (", ..." if len(items) > most else "")


def closing(done: api.Outputs, console: Console, spark_log: str | None) -> None:
    """What the capture shows, in a few lines, and where the page and Spark's log are."""
    d, r = done.dissect_summary, done.report_summary
    t = Table(title="kafkatap report", show_header=False, box=None)
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")  # a path in full, over several lines if need be
    span = r.get("capture_span_s", 0)
    t.add_row("capture", f"{len(d['files'])} file(s), {d['packets']:,} packets, span {span:.1f} s")
    t.add_row("kafka", f"{r.get('frames', 0):,} frames on {r.get('connections', 0)} connections, "
                       f"{r.get('clients', 0)} clients, {r.get('brokers', 0)} brokers, {r.get('groups', 0)} groups")
    names = _counts(r.get("errors_by_name"))
    t.add_row("errors", f"{r.get('errors', 0):,} error responses" + (f" ({names})" if names else "")
              + f", {r.get('anomalies', 0):,} anomalies")
    causes = _counts(r.get("fenced_epochs_by_cause"))
    t.add_row("fencings", f"{r.get('fenced_epochs', 0):,}" + (f" ({causes}; the dashboard explains each)"
                                                              if causes else ""))
    episodes = r.get("rebalances") or {}
    stalled = sum(g["stalled_s"] for g in episodes.values())
    unfetched = sum(g.get("fetch_gap_s", 0.0) for g in episodes.values())
    t.add_row("rebalances", f"{sum(g['episodes'] for g in episodes.values())} in {len(episodes)} group(s), "
                            f"partitions without an owner for {stalled:.1f} s in all, their records unfetched "
                            f"for {unfetched:.1f} s")
    t.add_row("ownership conflicts", str(r.get("ownership_conflicts", 0)))
    duplicates = sum((r.get("duplicate_records") or {}).values())
    t.add_row("delivered again", f"{duplicates:,} records")
    worst = max((r.get("e2e_p99_ms") or {}).items(), key=lambda kv: kv[1], default=None)
    if worst:
        t.add_row("end-to-end p99", f"{worst[1]:,.0f} ms (topic {worst[0]}, the slowest)")
    if r.get("share_poison_records"):
        t.add_row("poison records", f"{r['share_poison_records']:,} archived at the delivery limit")
    t.add_row("dashboard", str(done.page))
    if spark_log and os.path.exists(spark_log):
        t.add_row("spark log", spark_log)
    console.print(t)
