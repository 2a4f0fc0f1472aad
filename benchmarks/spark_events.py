"""What a Spark run cost in scheduling and planning, read from its event log: the numbers that grow when a plan does.

Spark's time on a capture's small tables goes to planning, code generation and scheduling, so a regression shows as
more Spark jobs, more stages or a bigger plan long before it shows in seconds on a busy machine. `kafkatap.pipelines`
tags each Spark job with the kafkatap job that ran it (the `kafkatap.job` local property), so the counts come per
kafkatap job. Enable the log with `conf()` (as `--conf` arguments or builder settings) and read it with `read()`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from kafkatap.pipelines.report import JOB_PROPERTY


def conf(folder: Path) -> dict[str, str]:
    """Spark settings that write one plain (uncompressed, unrolled) event log per application into `folder`."""
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": folder.resolve().as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}


@dataclass
class Cost:
    jobs: int = 0
    stages: int = 0
    tasks: int = 0
    queries: int = 0  # SQL executions
    largest_plan: int = 0  # characters of the largest physical plan description
    plan_chars: int = 0
    query_ids: set[int] = field(default_factory=set)


def read(log: Path) -> dict[str, Cost]:
    """Costs per kafkatap job ("" for Spark work outside any, e.g. the summary), plus "total"."""
    costs: dict[str, Cost] = defaultdict(Cost)
    plans: dict[int, int] = {}
    job_of_stage: dict[int, str] = {}
    with open(log) as f:
        for line in f:
            event = json.loads(line)
            kind = event["Event"]
            if kind.endswith("SQLExecutionStart"):
                plans[event["executionId"]] = len(event.get("physicalPlanDescription", ""))
            elif kind == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                job = props.get(JOB_PROPERTY, "")
                cost = costs[job]
                cost.jobs += 1
                cost.stages += len(event.get("Stage IDs", []))
                for stage in event.get("Stage IDs", []):
                    job_of_stage[stage] = job
                if "spark.sql.execution.id" in props:
                    cost.query_ids.add(int(props["spark.sql.execution.id"]))
            elif kind == "SparkListenerTaskEnd":
                costs[job_of_stage.get(event["Stage ID"], "")].tasks += 1
    total = Cost()
    for cost in list(costs.values()):
        sizes = [plans.get(q, 0) for q in cost.query_ids]
        cost.queries, cost.plan_chars, cost.largest_plan = len(sizes), sum(sizes), max(sizes, default=0)
        total.jobs += cost.jobs
        total.stages += cost.stages
        total.tasks += cost.tasks
        total.queries += cost.queries
        total.plan_chars += cost.plan_chars
        total.largest_plan = max(total.largest_plan, cost.largest_plan)
    costs["total"] = total
    return dict(costs)


def newest_log(folder: Path) -> Path:
    """The event log of the latest application in `folder`."""
    logs = [p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".inprogress")]
    if not logs:
        raise FileNotFoundError(f"no finished Spark event log in {folder}")
    return max(logs, key=lambda p: p.stat().st_mtime)
