"""OUT/summary.json and its one-screen rendering.

The byte account is the honesty check of a run: for every stream (connection, direction) the bytes the capture
delivered equal the bytes decoded plus the bytes skipped, by reason. Bytes the capture never had (TCP gaps) are
listed beside it as `lost_in_gaps`, outside the equation, since nobody saw them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from kafkatap.dissect.tls import KeyLog

if TYPE_CHECKING:
    from rich.console import Console


def _iso(ts_us: int | None) -> str | None:
    if ts_us is None:
        return None
    try:
        return datetime.fromtimestamp(ts_us / 1e6, tz=timezone.utc).isoformat()
    except (ValueError, OverflowError, OSError):  # a damaged capture's timestamp past year 9999
        return None


def byte_account(streams: list[dict]) -> dict[str, Any]:
    totals: dict[str, Any] = {"seen": 0, "decoded": 0, "skipped": {}, "lost_in_gaps": 0}
    balanced = True
    for s in streams:
        totals["seen"] += s["seen"]
        totals["decoded"] += s["decoded"]
        totals["lost_in_gaps"] += s["lost_in_gaps"]
        for reason, n in s["skipped"].items():
            totals["skipped"][reason] = totals["skipped"].get(reason, 0) + n
        balanced &= s["seen"] == s["decoded"] + sum(s["skipped"].values())
    return {"balanced": balanced, "totals": totals, "streams": streams}


def _sum(parts: list[dict], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for k, v in part[key].items():
            out[k] = out.get(k, 0) + v
    return out


def tls(keylog_files: list[str], keylog: KeyLog | None, parts: list[dict]) -> dict[str, Any]:
    """The key logs given (paths and line counts, never a secret) and what became of the TLS connections."""
    counts = None if keylog is None else {"client_randoms": len(keylog), "secrets": keylog.lines,
                                          "malformed_lines": keylog.malformed, "ignored_lines": keylog.ignored,
                                          "conflicting_lines": keylog.conflicts}
    return {"keylog_files": keylog_files, "keylog": counts, "connections": _sum(parts, "tls_outcomes")}


def build(paths: list[str], parts: list[dict], late_names: dict[str, int], tls_info: dict[str, Any]) -> dict:
    """The summary of a run from its workers' results (each worker followed its own connections; the packet
    counts, the same in every worker, come from the first). Lists are in an order of their own (streams by
    connection, warnings sorted), so the summary does not depend on how the connections were spread: only
    `workers` and `topic_ids_named_late` (a worker names late what it learnt on another's connections) do."""
    stats = parts[0]["stats"]
    streams = sorted((s for part in parts for s in part["streams"]), key=lambda s: (s["conn_id"], s["direction"]))
    warnings = sorted(w for part in parts for w in part["warnings"])
    malformed = (tls_info["keylog"] or {}).get("malformed_lines")
    if malformed:
        warnings.append(f"{malformed} lines of the TLS key logs are not `LABEL client_random secret` lines: skipped")
    return {
        "files": list(paths),
        "capture_files_read": stats.files,
        "interrupted": any(part["stats"].interrupted for part in parts),
        "files_unread": [f for f in paths if any(f in part["stats"].files_unread for part in parts)],
        "unreadable_files": stats.unreadable_files,
        "packets": stats.packets,
        "bytes": stats.bytes,
        "tcp_packets": stats.tcp_packets,
        "capture_span": {"first_ts": _iso(stats.first_ts_us), "last_ts": _iso(stats.last_ts_us),
                         "first_ts_us": stats.first_ts_us, "last_ts_us": stats.last_ts_us},
        "connections": {"with_payload": sum(part["with_payload"] for part in parts), **_sum(parts, "connections")},
        "messages_by_api": dict(sorted(_sum(parts, "messages").items(), key=lambda kv: -kv[1])),
        "frames_by_status": dict(sorted(_sum(parts, "statuses").items())),
        "anomalies_by_kind": dict(sorted(_sum(parts, "anomalies").items())),
        "rows": _sum(parts, "rows"),
        "topic_ids_named_late": late_names,
        "values_out_of_range": _sum(parts, "out_of_range"),
        "workers": len(parts),
        "byte_account": byte_account(streams),
        "tls": tls_info,
        "warnings": warnings,
    }


def render(summary: dict, console: Console) -> None:
    """One screen: the capture, the messages by api, statuses, anomalies and the byte account."""
    from rich.table import Table  # here: a quiet run never renders, nor imports rich

    span = summary["capture_span"]
    acc = summary["byte_account"]
    head = Table(title="kafkatap dissect", show_header=False, box=None)
    unread = summary["files_unread"]
    head.add_row("files", str(len(summary["files"])) + (f"  ({len(unread)} not reached)" if unread else ""))
    if summary["interrupted"]:
        head.add_row("interrupted", "[yellow]yes: these tables hold what was read before the signal[/]")
    head.add_row("packets", f"{summary['packets']:,}  ({summary['bytes']:,} bytes)")
    head.add_row("span", f"{span['first_ts']} .. {span['last_ts']}")
    conns = summary["connections"]
    head.add_row("connections", ", ".join(f"{k} {v}" for k, v in conns.items()))
    head.add_row("rows", ", ".join(f"{k} {v:,}" for k, v in summary["rows"].items()))
    t = acc["totals"]
    skipped = ", ".join(f"{k} {v:,}" for k, v in sorted(t["skipped"].items())) or "none"
    head.add_row("byte account", f"{t['seen']:,} seen = {t['decoded']:,} decoded + skipped ({skipped})"
                 f"  ({'balanced' if acc['balanced'] else 'NOT BALANCED'}); {t['lost_in_gaps']:,} lost in gaps")
    tls_info = summary["tls"]
    if tls_info["keylog_files"] or conns.get("tls"):
        outcomes = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in tls_info["connections"].items() if v) or "none"
        keylogs = ", ".join(tls_info["keylog_files"]) or "none given (--tls-keylog)"
        head.add_row("tls", f"connections: {outcomes}; key logs: {keylogs}")
    console.print(head)
    tables = Table(show_header=True, box=None)
    tables.add_column("api", style="cyan")
    tables.add_column("messages", justify="right")
    tables.add_column("status", style="green")
    tables.add_column("frames", justify="right")
    tables.add_column("anomaly", style="red")
    tables.add_column("count", justify="right")
    apis = list(summary["messages_by_api"].items())[:12]
    statuses = list(summary["frames_by_status"].items())
    anomalies = sorted(summary["anomalies_by_kind"].items(), key=lambda kv: -kv[1])[:12]
    for i in range(max(len(apis), len(statuses), len(anomalies))):
        row: list[str] = []
        for items in (apis, statuses, anomalies):
            row += [items[i][0], f"{items[i][1]:,}"] if i < len(items) else ["", ""]
        tables.add_row(*row)
    console.print(tables)
    for warning in summary["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}")
