"""What the capture shows while it runs (a rich live panel on a terminal) and the summary it prints at the end."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.table import Table


@dataclass
class Snapshot:
    engine: str
    iface: str
    bpf: str
    elapsed: float = 0.0
    packets: int = 0
    bytes_written: int = 0
    files: int = 0
    current_file: str | None = None
    dropped: int | None = None
    if_dropped: int | None = None
    messages: int | None = None  # Kafka messages dissected so far (None: not dissecting)
    dissected: int | None = None  # capture bytes the dissector has read


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def _drops(s: Snapshot) -> str:
    if s.dropped is None:
        return "reported at exit"
    return f"{s.dropped}" + (f" (+{s.if_dropped} by the interface)" if s.if_dropped else "")


def rows(s: Snapshot) -> list[tuple[str, str]]:
    out = [("engine", s.engine), ("interface", s.iface), ("filter", s.bpf), ("elapsed", f"{s.elapsed:.1f} s"),
           ("packets", str(s.packets)), ("written", human_bytes(s.bytes_written)), ("files", str(s.files)),
           ("drops", _drops(s))]
    out.append(("current file", os.path.basename(s.current_file) if s.current_file else "-"))
    if s.messages is not None:
        out += [("kafka messages", f"{s.messages:,}"), ("dissected", human_bytes(s.dissected or 0))]
    return out


class LiveStatus:
    """A live panel on stderr when it is a terminal; silent otherwise (the summary is always printed)."""

    def __init__(self) -> None:
        self.console = Console(stderr=True)
        self.live: Live | None = None
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=True)
            self.live.start()

    def update(self, s: Snapshot) -> None:
        if self.live is None:
            return
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan")
        table.add_column()
        for key, value in rows(s):
            table.add_row(key, value)
        self.live.update(table)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
