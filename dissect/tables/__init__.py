"""The table layer: rows of the Parquet output, their schemas, the writer and the run summary."""
