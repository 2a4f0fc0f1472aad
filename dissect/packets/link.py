"""Link layers: where the IP header of each frame starts, for a whole chunk of frames of one link type at once.

Supported: Ethernet (1) with any stack of 802.1Q/802.1ad/QinQ tags, Linux cooked SLL (113) and SLL2 (276), BSD
loopback NULL (0) and LOOP (108) with the address family in either byte order, and raw IP (101, 228, 229, and the
OS-specific 12 and 14).
"""

from __future__ import annotations

import numpy as np

from kafkatap.dissect.packets.gather import be16, le32

ETHERNET, NULL, LOOP, RAW, RAW_OPENBSD, RAW_BSDOS, SLL, IPV4, IPV6, SLL2 = 1, 0, 108, 101, 12, 14, 113, 228, 229, 276
SUPPORTED = frozenset({ETHERNET, NULL, LOOP, RAW, RAW_OPENBSD, RAW_BSDOS, SLL, IPV4, IPV6, SLL2})
VLAN_TPIDS = (0x8100, 0x88A8, 0x9100)
MAX_VLAN_TAGS = 8
AF_INET6 = (24, 28, 30)  # NetBSD/OpenBSD, FreeBSD, macOS (Linux's 10 never appears in NULL captures)

# status of each frame
OK, NOT_IP, SHORT = 0, 1, 2


def network_layer(data: np.ndarray, off: np.ndarray, caplen: np.ndarray,
                  linktype: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(l3 offset, IP version 4/6 or 0 = read it from the header, status) per frame; linktype must be SUPPORTED."""
    if linktype == ETHERNET:
        ethertype = be16(data, off + 12)
        l3 = off + 14
        for _ in range(MAX_VLAN_TAGS):
            tagged = np.isin(ethertype, VLAN_TPIDS)
            if not tagged.any():
                break
            ethertype = np.where(tagged, be16(data, l3 + 2), ethertype)
            l3 = l3 + 4 * tagged
        return _by_ethertype(ethertype, l3, off, caplen)
    if linktype == SLL:
        return _by_ethertype(be16(data, off + 14), off + 16, off, caplen)
    if linktype == SLL2:
        return _by_ethertype(be16(data, off), off + 20, off, caplen)
    if linktype in (NULL, LOOP):
        family = le32(data, off)
        swapped = family & 0xFFFF == 0  # written in the other byte order: the family sits in the upper half
        family = np.where(swapped, ((family >> 24) & 0xFF) | ((family >> 8) & 0xFF00), family)
        version = np.where(family == 2, 4, np.where(np.isin(family, AF_INET6), 6, 0))
        status = np.where(version == 0, NOT_IP, OK)
        status = np.where(caplen < 4, SHORT, status)
        return off + 4, version, status
    version = {IPV4: 4, IPV6: 6}.get(linktype, 0)
    return off, np.full(len(off), version, np.int64), np.where(caplen < 1, SHORT, OK)


def _by_ethertype(ethertype: np.ndarray, l3: np.ndarray, off: np.ndarray,
                  caplen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    version = np.where(ethertype == 0x0800, 4, np.where(ethertype == 0x86DD, 6, 0))
    status = np.where(l3 - off > caplen, SHORT, np.where(version == 0, NOT_IP, OK))
    return l3, version, status
