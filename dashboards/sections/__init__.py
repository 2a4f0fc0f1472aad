"""One module per dashboard section; each `render(report) -> Section` returns HTML fragments and plotly figures."""

from kafkatap.dashboards.sections import (duplicates, e2e, fencings, groups, latency, overview, producers, sessions,
                                          share, share_records, throughput)

SECTIONS = [overview, throughput, latency, e2e, groups, producers, share, share_records, fencings, duplicates, sessions]
