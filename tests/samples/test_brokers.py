"""The ports handed to servers started later: outside the kernel's ephemeral range, and never the same in two
processes (CI once lost a 3-node cluster to a port another process took between its choice and the broker's bind)."""

from __future__ import annotations

import subprocess
import sys

from kafkatap.samples.brokers import SERVER_PORTS, free_ports, port_is_free


def ephemeral_range() -> range:
    low, high = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    return range(low, high + 1)


def test_ports_are_free_distinct_and_outside_the_ephemeral_range() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6 and all(port_is_free(p) for p in ports)
    assert all(p in SERVER_PORTS and p not in ephemeral_range() for p in ports)


def test_another_process_never_gets_a_port_one_holds() -> None:
    """Without the reservation, 1,000 picks would meet 200 held ports about 22 times."""
    pick = "from kafkatap.samples.brokers import free_ports; print(*free_ports({}), flush=True); input()"
    with subprocess.Popen([sys.executable, "-c", pick.format(200)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as holder:
        held = set(map(int, holder.stdout.readline().split()))
        other = subprocess.run([sys.executable, "-c", pick.format(1000)], input="\n", capture_output=True, text=True,
                               check=True)
        holder.communicate("\n")
    assert len(held) == 200 and not held & set(map(int, other.stdout.split()))
