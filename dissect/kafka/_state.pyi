"""Stub of the compiled twins of state.Request, state.Response and state.ConnState (_state.pyx)."""

from kafkatap.dissect.kafka.state import ConnState as ConnState, Request as Request, Response as Response
