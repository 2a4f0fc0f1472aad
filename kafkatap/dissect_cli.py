"""`kafkatap dissect`: the dissector's command line (dissect/cli.py), which with `--master` dissects on Spark
(pipelines/spark_dissect.py). Here, above both, because the dissector does not import the pipelines."""

from __future__ import annotations

import argparse

from kafkatap import errors
from kafkatap.dissect import cli


@errors.command("dissect")
def main(argv: list[str]) -> int:
    args = cli.parser().parse_args(argv)
    return cli.run(args, on_spark if args.master else cli.local)


def on_spark(args: argparse.Namespace, ports: list[int], keylogs: list[str]) -> dict:
    """The dissect on Spark; its JVM writes to a log file, and its failures are one line naming it."""
    from kafkatap.pipelines.failures import spark_failures
    from kafkatap.pipelines.launch import log_path, wind_down_deadline
    from kafkatap.pipelines.spark import get_spark
    from kafkatap.pipelines.spark_dissect import dissect_on_spark

    log = log_path("dissect")
    with spark_failures(args.out, log):
        spark = get_spark("kafkatap-dissect", args.master, log=log)
        if not args.quiet:
            cli.stderr_console().print(f"dissecting on Spark ({args.master}); its log: {log}")
        with wind_down_deadline():
            return dissect_on_spark(spark, args.captures, args.out, ports=ports, records=args.records,
                                    payloads=args.payloads, tls_keylog=keylogs, split_size=args.split_size << 20)
