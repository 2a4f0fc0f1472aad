"""Stub of the compiled twins of rows.request, rows.response and rows.frame (_rows.pyx)."""

from kafkatap.dissect.kafka.state import ConnState, Request, Response
from kafkatap.dissect.streams.reassembly import Where
from kafkatap.dissect.tables.rows import Rows

def request(rows: Rows, st: ConnState, req: Request, where: Where) -> None: ...
def response(rows: Rows, st: ConnState, req: Request, resp: Response, where: Where) -> None: ...
def frame(rows: Rows, st: ConnState, req: Request, resp: Response | None, where: Where,
          unpaired: bool = False) -> None: ...
