"""Stub of the compiled fast paths of Exchange.request and Exchange.response, and of Exchange's compiled base
(_exchange.pyx)."""

from kafkatap.dissect.kafka.exchange import Exchange
from kafkatap.dissect.kafka.messages import Messages
from kafkatap.dissect.kafka.state import ConnState
from kafkatap.dissect.streams.reassembly import Where

class ExchangeFields:
    out: Messages

def request(exchange: Exchange, st: ConnState, at: Where, offset: int, payload: bytes, where: Where) -> None: ...
def response(exchange: Exchange, st: ConnState, at: Where, offset: int, payload: bytes, where: Where) -> None: ...
