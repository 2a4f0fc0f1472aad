"""One module per dashboard section; each `render(report) -> Section` returns HTML fragments and plotly figures."""

from kafkatap.dashboards.sections import (duplicates, fencings, groups, latency, overview, producers, sessions, share,
                                          throughput)

SECTIONS = [overview, throughput, latency, groups, producers, share, fencings, duplicates, sessions]
