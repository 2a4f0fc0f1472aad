"""kafkatap: Kafka wire-traffic capture and analysis. The functions below are the Python API (see kafkatap.api);
the stages are the subpackages capture, dissect, pipelines, dashboards and samples."""

from kafkatap.api import Outputs, analyze, dashboard, dissect_captures, read, report, tables

__all__ = ["Outputs", "analyze", "dashboard", "dissect_captures", "read", "report", "tables"]
