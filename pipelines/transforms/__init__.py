"""The pipelines' transformations: pure DataFrame -> DataFrame functions, one small module per concern."""
