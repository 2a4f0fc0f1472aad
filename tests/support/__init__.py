"""Helpers shared by the test modules, so that no test module imports another."""
