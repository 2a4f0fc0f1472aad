"""Assembling sections into one self-contained HTML page: inline CSS, plotly.js inlined once, the figures as JSON.

The page works offline (no CDN, no fonts, no external library). Its own script records every JavaScript error into
`#js-errors` and `data-js-errors`, and counts charts drawn into `data-charts-drawn`, so a headless browser's
`--dump-dom` shows whether the page worked. Tables sort with a few lines of inline JS rather than a library, since
a library would be one more thing to inline and it would not do more than compare cells.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from kafkatap.dashboards.fragments import Section, esc

CSS = r"""
:root { --ink:#1f2937; --muted:#6b7280; --line:#e5e7eb; --bg:#f3f4f6; --accent:#2563eb; --bad:#dc2626;
  --warn:#d97706; --good:#059669; }
* { box-sizing: border-box; }
html { scroll-behavior: smooth; scroll-padding-top: 64px; }
body { margin:0; background:var(--bg); color:var(--ink); font: 14px/1.5 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, sans-serif; }
header.top { position: sticky; top:0; z-index:10; background:#111827; color:#f9fafb; display:flex; align-items:center;
  gap:24px; padding:0 24px; height:52px; box-shadow:0 1px 3px rgba(0,0,0,.3); }
header.top .brand { font-weight:700; font-size:16px; letter-spacing:.02em; white-space:nowrap; }
header.top .brand span { color:#93c5fd; font-weight:500; }
header.top nav { display:flex; gap:4px; overflow-x:auto; }
header.top nav a { color:#d1d5db; text-decoration:none; padding:6px 10px; border-radius:6px; white-space:nowrap; }
header.top nav a:hover { background:#1f2937; color:#fff; }
main { max-width:1320px; margin:0 auto; padding:24px; }
section.panel { background:#fff; border:1px solid var(--line); border-radius:10px; padding:20px 24px; margin:0 0 24px;
  box-shadow:0 1px 2px rgba(0,0,0,.04); }
section.panel > h2 { margin:0 0 4px; font-size:20px; }
section.panel > p.lead { margin:0 0 16px; color:var(--muted); }
h3 { font-size:15px; margin:20px 0 8px; }
.cards { display:grid; grid-template-columns:repeat(auto-fill, minmax(150px, 1fr)); gap:12px; margin:8px 0 16px; }
.card { display:block; border:1px solid var(--line); border-radius:8px; padding:12px 14px; background:#f9fafb;
  color:inherit; text-decoration:none; border-left:4px solid var(--accent); }
a.card:hover { background:#eff6ff; }
.card-value { font-size:24px; font-weight:700; font-variant-numeric:tabular-nums; }
.card-label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card-detail { color:var(--muted); font-size:12px; margin-top:2px; }
.card-bad { border-left-color:var(--bad); } .card-bad .card-value { color:var(--bad); }
.card-warn { border-left-color:var(--warn); } .card-good { border-left-color:var(--good); }
.chart { width:100%; min-height:120px; margin:8px 0; }
.grid2 { display:grid; grid-template-columns:1fr 1fr; gap:16px; }
@media (max-width: 900px) { .grid2 { grid-template-columns:1fr; } }
.table-wrap { overflow:auto; max-height:560px; border:1px solid var(--line); border-radius:8px; }
table.sortable { border-collapse:collapse; width:100%; font-size:13px; }
table.sortable th { position:sticky; top:0; background:#f9fafb; text-align:left; padding:8px 10px; cursor:pointer;
  border-bottom:1px solid var(--line); white-space:nowrap; user-select:none; }
table.sortable th:hover { background:#eef2ff; }
table.sortable th::after { content:" \2195"; color:#9ca3af; font-size:11px; }
table.sortable th[aria-sort=ascending]::after { content:" \25B2"; color:var(--accent); }
table.sortable th[aria-sort=descending]::after { content:" \25BC"; color:var(--accent); }
table.sortable td { padding:6px 10px; border-bottom:1px solid #f3f4f6; vertical-align:top; white-space:nowrap; }
table.sortable td.wrap { white-space:normal; min-width:260px; max-width:480px; overflow-wrap:anywhere; }
table.sortable td.num { text-align:right; font-variant-numeric:tabular-nums; }
table.sortable tbody tr:hover { background:#f9fafb; }
tr.row-bad td:first-child { box-shadow: inset 3px 0 0 var(--bad); }
tr.row-warn td:first-child { box-shadow: inset 3px 0 0 var(--warn); }
tr.row-muted td { color:var(--muted); }
.empty { border:1px dashed #cbd5e1; border-radius:8px; padding:16px; color:var(--muted); background:#f9fafb;
  margin:8px 0; }
.empty strong { color:var(--ink); }
p.note { color:var(--muted); font-size:12px; margin:6px 0; }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; margin:0 0 12px; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; font-variant-numeric:tabular-nums; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:12px; background:#f3f4f6;
  padding:1px 4px; border-radius:4px; }
#js-errors { white-space:pre-wrap; color:var(--bad); background:#fef2f2; border:1px solid #fecaca; border-radius:8px;
  padding:12px; margin:0 0 24px; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:0 0 32px; }
"""

# Runs before plotly.js so an error while loading it is recorded too.
ERROR_TRAP = r"""
(function () {
  var errors = [];
  function record(message) {
    errors.push(String(message));
    document.documentElement.setAttribute('data-js-errors', String(errors.length));
    var box = document.getElementById('js-errors');
    if (box) { box.hidden = false; box.textContent = errors.join('\n'); }
  }
  window.kafkatapErrors = errors;
  window.kafkatapRecordError = record;
  window.addEventListener('error', function (e) { record(e.message || e); });
  window.addEventListener('unhandledrejection', function (e) {
    record('unhandled rejection: ' + (e.reason && e.reason.message || e.reason));
  });
})();
"""

RENDER = r"""
(function () {
  var record = window.kafkatapRecordError, body = document.body;
  var box = document.getElementById('js-errors');
  if (window.kafkatapErrors.length) { box.hidden = false; box.textContent = window.kafkatapErrors.join('\n'); }
  var charts = document.querySelectorAll('div.chart[data-figure]'), drawn = 0;
  body.setAttribute('data-charts-expected', String(charts.length));
  body.setAttribute('data-charts-drawn', '0');
  if (typeof Plotly === 'undefined') { record('plotly.js did not load'); return; }
  charts.forEach(function (div) {
    try {
      var spec = JSON.parse(document.getElementById(div.getAttribute('data-figure')).textContent);
      var config = {responsive: true, displaylogo: false, displayModeBar: false};
      Plotly.newPlot(div, spec.data, spec.layout, config).then(function () {
        drawn += 1;
        body.setAttribute('data-charts-drawn', String(drawn));
      }, function (err) { record('chart ' + div.id + ': ' + err); });
    } catch (err) { record('chart ' + div.id + ': ' + err); }
  });
})();

(function () {
  function key(cell, numeric) {
    var raw = cell.hasAttribute('data-sort') ? cell.getAttribute('data-sort') : cell.textContent.trim();
    if (raw === '') { return null; }
    return numeric ? parseFloat(raw) : raw.toLowerCase();
  }
  function sortBy(th) {
    var table = th.closest('table'), body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute('aria-sort') !== 'ascending', numeric = th.getAttribute('data-type') === 'num';
    table.querySelectorAll('th[aria-sort]').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return {row: row, key: key(row.cells[index], numeric), i: i};
    });
    rows.sort(function (a, b) {
      if (a.key === b.key) { return a.i - b.i; }
      if (a.key === null) { return 1; }
      if (b.key === null) { return -1; }
      var order = a.key < b.key ? -1 : 1;
      return ascending ? order : -order;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
  }
  document.querySelectorAll('table.sortable th').forEach(function (th) {
    th.addEventListener('click', function () { sortBy(th); });
  });
})();
"""


def _figure_json(fig: go.Figure) -> str:
    """Figure JSON safe inside <script>: `<` escaped so no data can close the tag."""
    return pio.to_json(fig, validate=False, remove_uids=True).replace("<", "\\u003c")


def render_page(title: str, subtitle: str, sections: Sequence[Section], footer: str = "") -> str:
    figures: list[str] = []
    parts: list[str] = []
    for section in sections:
        blocks: list[str] = []
        for block in section.blocks:
            if isinstance(block, go.Figure):
                n = len(figures)
                figures.append(f'<script type="application/json" id="figure-{n}">{_figure_json(block)}</script>')
                height = int(block.layout.height or 320)
                blocks.append(f'<div class="chart" id="chart-{n}" data-figure="figure-{n}" '
                              f'style="height:{height}px"></div>')
            else:
                blocks.append(block)
        lead = f'<p class="lead">{section.lead}</p>' if section.lead else ""
        parts.append(f'<section class="panel" id="{esc(section.id)}"><h2>{esc(section.title)}</h2>{lead}'
                     f'{"".join(blocks)}</section>')
    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
<script>{ERROR_TRAP}</script>
<script>{get_plotlyjs()}</script>
</head>
<body>
<header class="top"><div class="brand">kafkatap <span>{esc(subtitle)}</span></div><nav>{nav}</nav></header>
<main>
<pre id="js-errors" hidden></pre>
{"".join(parts)}
</main>
<footer>{footer}</footer>
{"".join(figures)}
<script>{RENDER}</script>
</body>
</html>
"""
