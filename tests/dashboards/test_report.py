"""The dashboard's reading and rendering, on the hand-made report of tests/support/report.py."""

from __future__ import annotations

from pathlib import Path

import re
import shutil

import pandas as pd
import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkatap.dashboards.build import render_dashboard, write_dashboard
from kafkatap.dashboards.charts import MAX_BUCKETS, rebucket
from kafkatap.dashboards.cli import main as cli_main
from kafkatap.dashboards.fragments import Col, fmt_int, table
from kafkatap.dashboards.load import Report
from kafkatap.dashboards.sections import e2e, fencings, groups, latency, overview
from kafkatap.dashboards.sections.share import delivery_counts
from kafkatap.errors import CommandError
from kafkatap.pipelines.schema import TABLES
from tests.support.report import FENCED_MEMBER, HOSTILE, LIVE_MEMBER, duplicates, write_report, write_table


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(tmp_path_factory.mktemp("report"))


def test_load_reads_every_declared_table(report_dir: Path) -> None:
    report = Report(str(report_dir))
    assert report.absent == []
    assert report.summary["fenced_epochs"] == 3
    members = report.frame("sessions/members")
    assert list(members.columns) == TABLES["sessions/members"].names
    assert members["first_seen"].dt.tz is None  # naive UTC for plotly
    connections = report.frame("sessions/connections")
    assert connections["requests_by_api"].iloc[0] == {"Produce": 400, "EndTxn": 4, "InitProducerId": 2}


def test_absent_tables_and_columns_read_as_empty_and_null(tmp_path: Path) -> None:
    write_table(tmp_path, "sessions/members", [])
    folder = tmp_path / "fenced_epochs"
    folder.mkdir()
    pq.write_table(pa.table({"kind": ["producer"], "stale_epoch": pa.array([1], pa.int32())}),
                   folder / "part-0.parquet")
    report = Report(str(tmp_path))
    assert "throughput/data" in report.absent and "sessions/members" not in report.absent
    assert report.frame("throughput/data").empty
    fenced = report.frame("fenced_epochs")
    assert list(fenced.columns) == TABLES["fenced_epochs"].names
    assert fenced["error_name"].isna().all() and fenced["stale_epoch"].tolist() == [1]


def test_missing_report_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="kafkatap analyze"):
        Report(str(tmp_path / "nope"))


def test_untrusted_ids_are_escaped_everywhere(report_dir: Path) -> None:
    html = render_dashboard(Report(str(report_dir)))
    assert HOSTILE not in html
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html  # shown as text in the tables


def test_every_section_is_on_the_page_with_its_anchor(report_dir: Path) -> None:
    html = render_dashboard(Report(str(report_dir)))
    for anchor in ("overview", "throughput", "latency", "e2e", "groups", "producers", "share", "fencings",
                   "duplicates", "sessions"):
        assert f'id="{anchor}"' in html and f'href="#{anchor}"' in html
    assert "<script src=" not in html and "<link" not in html  # nothing loaded from the network
    assert FENCED_MEMBER in html and "FENCED_MEMBER_EPOCH" in html and "PRODUCER_FENCED" in html
    assert "inferred: no broker error" in html  # the classic zombie's hover says why it counts as fenced


def test_empty_report_says_what_would_fill_each_section(tmp_path: Path) -> None:
    html = render_dashboard(Report(str(tmp_path)))
    for what in ("No record data", "No group members", "No fencings", "No duplicate deliveries",
                 "No share groups", "No producers", "No end-to-end latencies"):
        assert what in html


def test_tables_cap_their_rows_and_say_where_the_rest_is() -> None:
    df = pd.DataFrame({"n": range(1200)})
    html = table(df, [Col("n", "n", fmt_int, numeric=True)], table_id="t", source="x/y", max_rows=500)
    assert html.count("<tr>") == 501 and "first 500 of 1,200 rows" in html and "<code>x/y</code>" in html


def test_long_captures_are_rebucketed_before_plotting() -> None:
    day = pd.DataFrame({"window_start": pd.date_range("2026-01-01", periods=86_400, freq="1s"), "bytes": 1})
    out, index = rebucket(day, "window_start", [], ["bytes"], pd.Timedelta("1s"), {})
    assert len(out) <= MAX_BUCKETS and out["bytes"].sum() == 86_400 and index.freq == pd.Timedelta("5min")
    # a burst in a long capture is bucketed for the whole capture's span, not for the burst's
    burst = day.head(60)
    out, index = rebucket(burst, "window_start", [], ["bytes"], pd.Timedelta("1s"),
                          {"capture_start": "2026-01-01T00:00:00Z", "capture_end": "2026-01-02T00:00:00Z"})
    assert len(index) <= MAX_BUCKETS + 1 and out["bytes"].sum() == 60


def test_epochs_are_marked_where_they_were_handed(report_dir: Path) -> None:
    html = render_dashboard(Report(str(report_dir)))
    # hover texts, inside the figures' JSON (plotly escapes <, / and non-ASCII there)
    assert "\\u003e4\\u003c\\u002fb\\u003e handed to " + FENCED_MEMBER in html
    assert "by ConsumerGroupHeartbeat response corr 103" in html


def test_duplicate_card_counts_proven_ranges_and_names_the_others(report_dir: Path, tmp_path: Path) -> None:
    root = write_report(tmp_path)
    extra = {"kind": "consumer_group", "group_id": "orders-cg", "topic": "orders", "partition": 3, "first_offset": 0,
             "last_offset": 9, "records": 10, "deliveries": 2, "cause": "rebalance", "possible": False}
    write_table(root, "duplicate_deliveries", [*duplicates(), {**extra, "wire_only": True},
                                               {**extra, "kind": "producer", "possible": True}])
    html = render_dashboard(Report(str(root)))
    assert "70 records delivered again" in html  # 50 + 10 + 10 of the proven rows, as summary.json counts them
    assert "2 more possible or wire-only ranges listed" in html
    assert "Grey rows (1) are wire-only" in html


def test_write_dashboard_creates_the_file(report_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "dashboard.html"
    write_dashboard(str(report_dir), str(out))
    assert out.stat().st_size > 1_000_000  # plotly.js is inlined
    assert not list(out.parent.glob(".dashboard-*"))


def test_delivery_counts_spread_each_range_over_its_deliveries() -> None:
    # 100 records acquired: a 10-record range delivered twice (count 2 at the redelivery), a 1-record range three
    # times (count 3 at the last), and 100 - 10*2 - 1*3 = 77 records delivered once
    ranges = pd.DataFrame({"deliveries": [2, 3], "delivery_count": [2, 3], "records": [10, 1]})
    assert delivery_counts(100, ranges).to_dict() == {1: 77 + 10 + 1, 2: 10 + 1, 3: 1}


def test_cli_writes_the_page_and_refuses_a_missing_report(report_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "d.html"
    assert cli_main([str(report_dir), "-o", str(out)]) == 0 and out.exists()
    assert cli_main([str(tmp_path / "missing"), "-o", str(tmp_path / "x.html")]) == 1
    assert "kafkatap analyze" in capsys.readouterr().err


def _html(section: object) -> str:
    return "".join(b for b in section.blocks if isinstance(b, str))


def _rows(html: str, table_id: str) -> list[str]:
    return re.findall(r"<tr[^>]*>(.*?)</tr>", html.split(f'id="{table_id}"')[1].split("</table>")[0])[1:]


def test_group_timeline_draws_each_rebalance_episode_as_a_band(report_dir: Path) -> None:
    section = groups.render(Report(str(report_dir)))
    orders = next(b for b in section.blocks if isinstance(b, go.Figure) and "orders-cg" in b.layout.title.text)
    bands = [shape for shape in orders.layout.shapes if shape.name == "rebalance episode"]
    assert len(bands) == 3 and all(b.type == "rect" and b.yref == "paper" for b in bands)
    assert [b.label.text for b in bands] == ["13 s · member_joined", "2 s · member_fenced", "1 s · member_joined"]
    hover = next(t for t in orders.data if t.name == "rebalance episode").hovertext
    fenced = next(h for h in hover if "member_fenced" in h)
    for part in ("2 s", "epoch <b>5</b>", "partitions moved: 1 (orders:0)", "stalled_s: 0", FENCED_MEMBER):
        assert part in fenced
    legacy = next(b for b in section.blocks if isinstance(b, go.Figure) and "legacy-grp" in b.layout.title.text)
    assert len(legacy.layout.shapes) == 1


def test_groups_section_lists_the_episodes_and_the_ownership_conflicts(report_dir: Path) -> None:
    html = _html(groups.render(Report(str(report_dir))))
    episodes = _rows(html, "rebalances-table")
    assert len(episodes) == 4 and "member_joined" in episodes[0] and "orders:0" in episodes[0]  # the stall first
    assert sum("member_fenced" in row for row in episodes) == 1
    conflicts = _rows(html, "ownership-conflicts-table")
    assert len(conflicts) == 2
    assert all(f"{FENCED_MEMBER} (consumer-b)" in row and f"{LIVE_MEMBER} (consumer-a)" in row for row in conflicts)
    assert ">assignment<" in conflicts[0] and ">fetch<" in conflicts[1] and "FENCED_MEMBER_EPOCH" in conflicts[0]


def test_groups_section_says_when_there_are_no_episodes_or_conflicts(tmp_path: Path) -> None:
    root = write_report(tmp_path / "report")
    for name in ("rebalances", "ownership_conflicts"):
        shutil.rmtree(root / name)
    html = _html(groups.render(Report(str(root))))
    assert "No rebalance episodes" in html and "No ownership conflicts" in html
    assert "rebalances-table" not in html and "ownership-conflicts-table" not in html


def test_e2e_section_charts_each_topic_and_notes_missing_produces(report_dir: Path) -> None:
    section = e2e.render(Report(str(report_dir)))
    charts = [b for b in section.blocks if isinstance(b, go.Figure)]
    assert [c.layout.title.text for c in charts] == ["orders: produce → delivery", "tasks: produce → delivery"]
    assert [t.name for t in charts[0].data] == ["p50", "p95", "p99"]
    assert max(v for v in charts[0].data[2].y if pd.notna(v)) == 2880.0  # the fencing window's spike
    html = _html(section)
    rows = _rows(html, "e2e-table")
    assert len(rows) == 2 and "orders-cg" in html and "share-g" in html
    assert "20 delivered offsets (orders 10, tasks 10) have no Produce in the capture" in html


def test_e2e_section_has_no_missing_note_when_every_produce_was_seen(tmp_path: Path) -> None:
    write_table(tmp_path, "e2e_latency", [{"window_start": pd.Timestamp("2026-01-01", tz="UTC"),
                                           "window_end": pd.Timestamp("2026-01-01 00:00:01", tz="UTC"),
                                           "topic": "t", "partition": 0, "client_id": "c", "records": 5,
                                           "produce_seen": 5, "produce_missing": 0, "p50_ms": 1.0, "p95_ms": 2.0,
                                           "p99_ms": 3.0, "max_ms": 4.0}])
    html = _html(e2e.render(Report(str(tmp_path))))
    assert "client c" in html and "no Produce" not in html


def test_overview_cards_show_rebalances_e2e_p99_and_conflicts(report_dir: Path) -> None:
    html = _html(overview.render(Report(str(report_dir))))
    found = re.findall(r'<div class="card-value">([^<]*)</div><div class="card-label">([^<]*)</div>', html)
    cards = {label: value for value, label in found}
    assert cards["rebalances"] == "4" and cards["worst e2e p99"] == "2.88 s" and cards["ownership conflicts"] == "2"
    assert "1.0 s stalled in total over 2 groups" in html and "orders 2.88 s, tasks 90.0 ms" in html
    assert 'href="#rebalances"' in html and 'href="#e2e"' in html and 'href="#ownership-conflicts"' in html


def test_latency_table_shows_the_exact_whole_capture_percentiles(tmp_path: Path) -> None:
    windows = [{"window_start": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(seconds=s),
                "window_end": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(seconds=s + 1),
                "api_key": 0, "api_name": "Produce", "broker_addr": "b:9092", "requests": 100, "errors": 0,
                "unpaired": 0, "latency_p50_us": 1000, "latency_p95_us": 1500, "latency_p99_us": p99,
                "latency_max_us": 40_000} for s, p99 in enumerate([2000, 2000, 40_000])]
    write_table(tmp_path, "throughput/requests", windows)
    write_table(tmp_path, "throughput/latency", [
        {"api_key": 0, "api_name": "Produce", "broker_addr": "b:9092", "requests": 301, "answered": 300, "errors": 2,
         "latency_p50_us": 1000.0, "latency_p95_us": 1900.0, "latency_p99_us": 37_600.0, "latency_max_us": 40_000}])
    html = _html(latency.render(Report(str(tmp_path))))
    (row,) = _rows(html, "latency-table")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[5:10] == ["1", "1.0 ms", "1.9 ms", "37.6 ms", "40.0 ms"]  # unpaired, exact p50/p95/p99, worst window
    assert "exact over the whole capture" in html


def test_latency_section_of_an_older_report_asks_for_a_new_analysis(tmp_path: Path) -> None:
    write_table(tmp_path, "throughput/requests", [
        {"window_start": pd.Timestamp("2026-01-01", tz="UTC"), "window_end": pd.Timestamp("2026-01-01 00:00:01",
         tz="UTC"), "api_key": 0, "api_name": "Produce", "broker_addr": "b:9092", "requests": 1, "errors": 0,
         "unpaired": 0, "latency_p50_us": 1000, "latency_p95_us": 1000, "latency_p99_us": 1000,
         "latency_max_us": 1000}])
    html = _html(latency.render(Report(str(tmp_path))))
    assert "No exact percentiles in this report" in html and "kafkatap analyze" in html


def test_each_fencing_is_explained_in_one_sentence(report_dir: Path) -> None:
    html = _html(fencings.render(Report(str(report_dir))))
    rows = _rows(html, "fencings-table")
    explained = [r for r in rows if "used epoch 4 after the coordinator had handed it 5" in r]
    assert len(explained) == 1 and "stale_epoch" in explained[0]


def test_groups_that_only_commit_are_listed_with_their_commit_lag(report_dir: Path, tmp_path: Path) -> None:
    html = _html(groups.render(Report(str(report_dir))))
    (row,) = _rows(html, "commit-only-groups-table")
    assert "manual-assign" in row and "assigner" in row and ">239<" in row  # 120 + 119 records behind
    only = tmp_path / "only"
    for name in ("sessions/groups", "sessions/commits"):
        shutil.copytree(report_dir / name, only / name)
    html = _html(groups.render(Report(str(only))))
    assert "No group members in this capture" in html and "Groups that only commit offsets (1)" in html
