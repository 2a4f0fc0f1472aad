"""HTML building blocks every section shares: escaped text, cards, notes and sortable tables.

Every string that comes from the report (client ids, group ids, member ids, error details) is untrusted capture
data, so it only ever reaches the page through `esc` (or `table`, which calls it).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

MAX_TABLE_ROWS = 500


def esc(value: object) -> str:
    """Text for the page: element content and quoted attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def esc_plot(value: object) -> str:
    """Text for a plotly label or hover: plotly renders a few tags (`<b>`, `<br>`, `<a>`) and decodes `&lt;` /
    `&gt;` / `&amp;` but shows `&quot;` verbatim, so only those three are escaped."""
    return html.escape("" if value is None else str(value), quote=False)


@dataclass
class Section:
    """One page section: an anchor id, a title for the nav bar, and its blocks in order (HTML strings or plotly
    figures, which the page turns into chart containers)."""

    id: str
    title: str
    blocks: list[Any] = field(default_factory=list)
    lead: str = ""


def is_missing(value: object) -> bool:
    """Null, NaN or NaT; containers (list columns) are never missing as a whole."""
    if value is None:
        return True
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def is_true(value: object) -> bool:
    """A nullable boolean cell (Python, numpy or pandas) that is true."""
    return not is_missing(value) and bool(value)


def fmt_int(value: object) -> str:
    return "" if is_missing(value) else f"{int(value):,}"


def fmt_bytes(value: object) -> str:
    if is_missing(value):
        return ""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return ""


def fmt_us(value: object) -> str:
    """Microseconds as the unit a reader compares at a glance."""
    if is_missing(value):
        return ""
    us = float(value)
    if us < 1000:
        return f"{us:,.0f} µs"
    if us < 1_000_000:
        return f"{us / 1000:,.1f} ms"
    return f"{us / 1_000_000:,.2f} s"


def fmt_ts(value: object) -> str:
    if is_missing(value):
        return ""
    ts = pd.Timestamp(value)
    return ts.strftime("%H:%M:%S.") + f"{ts.microsecond // 1000:03d}"


def fmt_ts_full(value: object) -> str:
    if is_missing(value):
        return ""
    return pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def fmt_list(value: object) -> str:
    """Lists (numpy arrays from Parquet list columns) and maps (lists of key/value tuples) as one line."""
    if value is None or isinstance(value, float):
        return ""
    items = value.items() if isinstance(value, dict) else list(value)
    return ", ".join(f"{item[0]}: {item[1]}" if isinstance(item, tuple) else str(item) for item in items)


def fmt_conn(value: object) -> str:
    """`client>broker@first_seen_us` as `client → broker`; the full id stays in the cell's title."""
    if is_missing(value):
        return ""
    return str(value).split("@", 1)[0].replace(">", " → ")


def fmt_acks(value: object) -> str:
    """`release@2026-11-22T03:26:50.324202Z` entries shortened to `release@03:26:50.324`."""
    return ", ".join(f"{kind}@{fmt_ts(at)}" if at else kind
                     for kind, _, at in (str(item).partition("@") for item in (value if value is not None else [])))


def fmt_text(value: object) -> str:
    return "" if is_missing(value) else str(value)


def fmt_float(value: object) -> str:
    return "" if is_missing(value) else f"{float(value):,.3g}"


def fmt_pct(value: object) -> str:
    return "" if is_missing(value) else f"{100 * float(value):.2f}%"


@dataclass(frozen=True)
class Col:
    """A table column: the data column, its header, how to show a value, and whether it sorts as a number."""

    key: str
    header: str
    fmt: Callable[[object], str] = fmt_text
    numeric: bool = False
    title: str = ""
    wrap: bool = False


def _sort_key(value: object, col: Col) -> str:
    if is_missing(value):
        return ""
    if col.numeric:
        return repr(float(value))
    if isinstance(value, pd.Timestamp) or col.fmt is fmt_ts:
        return pd.Timestamp(value).isoformat()
    return ""


def table(df: pd.DataFrame, cols: Sequence[Col], *, table_id: str, source: str,
          max_rows: int = MAX_TABLE_ROWS, cell_class: Callable[[pd.Series], str] | None = None) -> str:
    """A sortable table of the first `max_rows` rows, with a note saying how many were left out and where they are."""
    total = len(df)
    shown = df.head(max_rows)
    head = "".join(
        f'<th scope="col"{" data-type=num" if c.numeric else ""}{f" title={esc(c.title)!r}" if c.title else ""}>'
        f"{esc(c.header)}</th>"
        for c in cols)
    body: list[str] = []
    for row in shown.to_dict("records"):
        cells = []
        for c in cols:
            value = row.get(c.key)
            text = c.fmt(value)
            key = _sort_key(value, c)
            sort_attr = f' data-sort="{esc(key)}"' if key else ""
            full = fmt_ts_full(value) if c.fmt is fmt_ts else str(value) if c.fmt is fmt_conn else ""
            title = f' title="{esc(full)}"' if full and text else ""
            cls = ' class="num"' if c.numeric else ' class="wrap"' if c.wrap or c.fmt is fmt_list else ""
            cells.append(f"<td{cls}{sort_attr}{title}>{esc(text)}</td>")
        row_class = f' class="{esc(cell_class(pd.Series(row)))}"' if cell_class else ""
        body.append(f"<tr{row_class}>{''.join(cells)}</tr>")
    note = ""
    if total > len(shown):
        note = (f'<p class="note">Showing the first {len(shown):,} of {total:,} rows; '
                f"every row is in <code>{esc(source)}</code>.</p>")
    return (f'<div class="table-wrap"><table class="sortable" id="{esc(table_id)}">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{note}")


def empty(what: str, fills: str, *, where: str = "in this capture") -> str:
    """The placeholder for a section or chart with no data: what is missing and what traffic would fill it."""
    return f'<div class="empty"><strong>No {esc(what)} {esc(where)}.</strong> {esc(fills)}</div>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def heading(text: str) -> str:
    return f"<h3>{esc(text)}</h3>"


def card(label: str, value: str, *, href: str = "", tone: str = "", detail: str = "") -> str:
    """A headline number; a card with `href` links to the section that explains it."""
    tag, attrs = ("a", f' href="{esc(href)}"') if href else ("div", "")
    tone_cls = f" card-{esc(tone)}" if tone else ""
    sub = f'<div class="card-detail">{esc(detail)}</div>' if detail else ""
    return (f'<{tag} class="card{tone_cls}"{attrs}><div class="card-value">{esc(value)}</div>'
            f'<div class="card-label">{esc(label)}</div>{sub}</{tag}>')


def cards(items: Sequence[str]) -> str:
    return f'<div class="cards">{"".join(items)}</div>'
