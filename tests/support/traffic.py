"""Plain TCP traffic on 127.0.0.1 for the live capture tests: packets for a capture to see, no Kafka involved."""

from __future__ import annotations

import socket
import threading
import time


def send_loop(port: int, chunks: int, size: int = 1000, pause: float = 0.002, fill: bytes = b"k") -> threading.Thread:
    """A TCP connection on 127.0.0.1:port carrying `chunks` writes of `size` bytes, `pause` seconds apart; the
    thread runs it (already started)."""
    srv = socket.create_server(("127.0.0.1", port))

    def run() -> None:
        with srv:
            cli = socket.create_connection(("127.0.0.1", port))
            conn, _ = srv.accept()
            with cli, conn:
                for _ in range(chunks):
                    cli.sendall(fill * size)
                    conn.recv(65536)
                    time.sleep(pause)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
