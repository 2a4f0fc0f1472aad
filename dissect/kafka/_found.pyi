"""Stub of the compiled twin of extract.Found (_found.pyx)."""

from kafkatap.dissect.kafka.extract import Found as Found
