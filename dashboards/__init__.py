"""The HTML dashboard of a `kafkatap analyze` report (pyarrow + plotly, no Spark)."""
