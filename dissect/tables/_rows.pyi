"""Stub of the compiled twins of rows.request, rows.response and rows.frame, and of Rows' compiled base (_rows.pyx)."""

from kafkatap.dissect.kafka._messages import Messages
from kafkatap.dissect.kafka.state import ConnState, Request, Response
from kafkatap.dissect.kafka.topics import TopicNames
from kafkatap.dissect.streams.reassembly import Where
from kafkatap.dissect.tables.rows import Rows
from kafkatap.dissect.tables.writer import TableWriter

class RowsFields(Messages):
    topics: TopicNames
    frames: TableWriter
    batches: TableWriter
    records: TableWriter | None
    messages: dict[str, int]
    statuses: dict[str, int]

def request(rows: Rows, st: ConnState, req: Request, where: Where) -> None: ...
def response(rows: Rows, st: ConnState, req: Request, resp: Response, where: Where) -> None: ...
def frame(rows: Rows, st: ConnState, req: Request, resp: Response | None, where: Where,
          unpaired: bool = False) -> None: ...
