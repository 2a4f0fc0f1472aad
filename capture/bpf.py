"""Capture filter from the Kafka ports: only TCP on those ports reaches the ring files, so the files stay small."""

from __future__ import annotations


class PortError(ValueError):
    """A --port value that is not a TCP port (or no port at all)."""


def parse_ports(values: list[str]) -> list[int]:
    """'9092', '9092,9093' and '9092-9094' (repeatable) -> sorted unique ports; raises PortError on anything else."""
    ports: set[int] = set()
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                raise PortError(f"empty port in {value!r}")
            low, sep, high = item.partition("-")
            try:
                first, last = int(low), int(high) if sep else int(low)
            except ValueError:
                raise PortError(f"{item!r} is not a port number or range (like 9092 or 9092-9094)") from None
            if not 1 <= first <= last <= 65535:
                raise PortError(f"{item!r} is outside 1-65535 (or the range is reversed)")
            ports.update(range(first, last + 1))
    if not ports:
        raise PortError("no port given: pass at least one --port")
    return sorted(ports)


def build_filter(ports: list[int]) -> str:
    """BPF for TCP on any of the ports; consecutive ports collapse into a portrange to keep the program short."""
    if not ports:
        raise PortError("no port given: pass at least one --port")
    terms: list[str] = []
    start = prev = ports[0]
    for port in [*ports[1:], None]:
        if port is not None and port == prev + 1:
            prev = port
            continue
        terms.append(f"port {start}" if start == prev else f"portrange {start}-{prev}")
        if port is not None:
            start = prev = port
    return "tcp and (" + " or ".join(terms) + ")"
