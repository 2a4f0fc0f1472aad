"""Stub of the compiled twins of pcap.record_walk and pcapng.epb_run (_packet_records.pyx)."""

import numpy as np

def record_walk(buf: bytes, head: int,
                little: bool) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], int, int]: ...
def epb_run(buf: bytes, off: int, little: bool, section_base: int,
            interfaces: int) -> tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]: ...
