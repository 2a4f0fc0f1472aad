"""Stub of the compiled twin of account.Account (_account.pyx)."""

from kafkatap.dissect.kafka.account import Account as Account
