"""Engine command lines and the parsing of what dumpcap and tcpdump print (texts copied from real runs)."""

from __future__ import annotations

import os

import pytest

from kafkatap.capture.engines import EngineLog, EngineMissing, Spec, choose, classify, dumpcap_argv, tcpdump_argv

DUMPCAP_RUN = (
    "Capturing on 'Loopback: lo'\nFile: /tmp/c/kafkatap_00001_20261122030418.pcapng\n"
    "\rPackets: 42 \rPackets: 86 File: /tmp/c/kafkatap_00002_20261122030420.pcapng\n"
    "\rPackets: 590 File: /tmp/c/kafkatap_00008_20261122030422.pcapng\n\rPackets: 606 \rPackets captured: 606\n"
    "Packets received/dropped on interface 'Loopback: lo': 612/6 (pcap:4/dumpcap:2/flushed:0/ps_ifdrop:3) (99.0%)\n"
)
DUMPCAP_DISK_FULL = (
    "\rPackets: 479 dumpcap: Not all the packets could be written to the file to which the capture was being saved\n"
    "(\"/tmp/f/f_00003_20261122030557.pcapng\") because there is no space left on the file system\n"
    "on which that file resides.\n\nPackets captured: 504\n"
)
TCPDUMP_RUN = (
    "tcpdump: listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n"
    "Got 192\rGot 386\rtcpdump: 400 packets captured, 800 packets received by filter, 1 packets dropped by kernel\n"
    "Got 731\r731 packets captured\n1462 packets received by filter\n2 packets dropped by kernel\n"
)
DUMPCAP_NO_PERMISSION = "Capturing on 'Loopback: lo'\ndumpcap: You do not have permission to capture on device \"lo\".\n" \
                        "(socket: Operation not permitted)\n"
TCPDUMP_NO_PERMISSION = "tcpdump: lo: You don't have permission to perform this capture on that device\n" \
                        "(socket: Operation not permitted)\n"
NO_DEVICE = "Capturing on 'nosuch0'\ndumpcap: There is no device named \"nosuch0\".\n(No such device exists)\n"


def feed(text: str, step: int = 7) -> EngineLog:
    """Feed in small pieces: pipes split lines anywhere."""
    log = EngineLog()
    for i in range(0, len(text), step):
        log.feed(text[i:i + step])
    log.close()
    return log


def test_dumpcap_counts_files_and_drops() -> None:
    opened: list[str] = []
    log = EngineLog(on_file=opened.append)
    log.feed(DUMPCAP_RUN)
    log.close()
    assert log.packets == 606 and log.final
    assert (log.received, log.dropped, log.if_dropped) == (612, 6, 3)
    assert [os.path.basename(p) for p in opened] == ["kafkatap_00001_20261122030418.pcapng",
                                                    "kafkatap_00002_20261122030420.pcapng",
                                                    "kafkatap_00008_20261122030422.pcapng"]
    assert log.messages == []


def test_live_count_before_exit() -> None:
    log = EngineLog()
    log.feed("Capturing on 'Loopback: lo'\nFile: /x/a.pcapng\n\rPackets: 86 ")
    assert log.packets == 86 and not log.final and log.dropped is None


@pytest.mark.parametrize("step", [1, 5, 1000])
def test_tcpdump_counts(step: int) -> None:
    log = feed(TCPDUMP_RUN, step)
    assert (log.packets, log.received, log.dropped) == (731, 1462, 2)
    assert log.messages == []


def test_messages_kept_and_classified() -> None:
    log = feed(DUMPCAP_DISK_FULL)
    assert log.packets == 504
    assert classify(log.messages) == "disk_full"
    assert any("Not all the packets" in m for m in log.messages)
    assert classify(feed(DUMPCAP_NO_PERMISSION).messages) == "permission"
    assert classify(feed(TCPDUMP_NO_PERMISSION).messages) == "permission"
    assert classify(feed(NO_DEVICE).messages) == "no_device"
    assert classify(["tcpdump: can't parse filter expression: syntax error"]) == "bad_filter"


def test_argv() -> None:
    spec = Spec("lo", "tcp and (port 9092)", "/d", ring_mb=0.5, ring_files=4, snaplen=200, duration=3, packets=10)
    d = dumpcap_argv("/usr/bin/dumpcap", spec)
    assert d[:7] == ["/usr/bin/dumpcap", "-i", "lo", "-f", "tcp and (port 9092)", "-w", "/d/kafkatap.pcapng"]
    for pair in (["-b", "filesize:500"], ["-b", "files:4"], ["-b", "printname:stdout"], ["-s", "200"],
                 ["-a", "duration:3"], ["-c", "10"]):
        assert any(d[i:i + 2] == pair for i in range(len(d))), pair
    t = tcpdump_argv("/usr/bin/tcpdump", spec)
    assert t[-1] == "tcp and (port 9092)"
    for pair in (["-C", "1"], ["-w", "/d/kafkatap.pcap"], ["-s", "200"], ["-c", "10"]):
        assert any(t[i:i + 2] == pair for i in range(len(t))), pair
    assert "-U" in t and "-W" not in t  # capture.ring keeps tcpdump's last K files


def test_choose_with_empty_path(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EngineMissing, match="apt install tshark"):
        choose("dumpcap")
    with pytest.raises(EngineMissing, match="apt install tcpdump"):
        choose("tcpdump")
    engine, binary, note = choose(None)
    assert engine == "scapy" and binary is None and "falling back to scapy" in note
