"""`kafkatap demo`: `kafkatap report` on a bundled sample, so a new user sees every stage's output in one command."""

from __future__ import annotations

from pathlib import Path

from kafkatap import errors
from kafkatap.report_cli import run
from kafkatap.samples import available, capture_path

DEFAULT_SAMPLE = "day_in_the_life"


@errors.command("demo")
def main(argv: list[str]) -> int:
    parser = errors.ArgumentParser(
        prog="kafkatap demo",
        description="Dissect a bundled sample capture, run every pipeline in local Spark, and write the dashboard.",
    )
    parser.add_argument("--sample", default=DEFAULT_SAMPLE, help=f"bundled sample name (default {DEFAULT_SAMPLE})")
    parser.add_argument("-o", "--out", default="demo-out", help="output folder (default ./demo-out)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--open", action="store_true", help="open the dashboard in a browser when done")
    parser.add_argument("--verbose", action="store_true",
                        help="leave Spark's own log on the terminal instead of a file under the temp folder")
    args = parser.parse_args(argv)
    if args.sample not in available():
        parser.error(f"no bundled sample {args.sample!r}; bundled: {', '.join(available())}")
    return run([str(capture_path(args.sample))], Path(args.out).resolve(), ports=[9092], master=args.master,
               open_page=args.open, verbose=args.verbose)
