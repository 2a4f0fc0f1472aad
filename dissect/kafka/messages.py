"""What the Kafka layer hands on: decoded messages, their pairs and the problems met. The table layer implements it
(`tables.rows.Rows`), so the Kafka layer never imports what writes its output."""

from __future__ import annotations

from typing import Protocol

from kafkatap.dissect.kafka.state import ConnState, Request, Response
from kafkatap.dissect.streams.reassembly import Conn, Where


class Messages(Protocol):
    def request(self, st: ConnState, req: Request, where: Where) -> None:
        """A decoded request; its body's `rows` hold the record data (`extract.COLLECT`) as bytes."""

    def response(self, st: ConnState, req: Request, resp: Response, where: Where) -> None:
        """A decoded response to req; its body's `rows` hold the record data as bytes."""

    def frame(self, st: ConnState, req: Request, resp: Response | None, where: Where,
              unpaired: bool = False) -> None:
        """A request and its response; or a request alone: one that gets none (Produce with acks=0) or, unpaired,
        one whose response the capture lost."""

    def response_only(self, st: ConnState, at: Where, size: int, correlation_id: int) -> None:
        """A response whose request the capture does not hold (at: the packet carrying its first byte)."""

    def connection(self, conn: Conn, conn_id: str, client_addr: str, broker_addr: str, closed_by: str) -> None:
        """A Kafka connection the capture is done with, and its TCP analysis counts."""

    def anomaly(self, kind: str, detail: str, where: Where, conn_id: str | None, direction: int | None,
                offset: int | None, nbytes: int, api_key: int | None = None,
                correlation_id: int | None = None) -> None:
        """A problem: what, where in the capture and in the stream, and how many bytes it cost."""
