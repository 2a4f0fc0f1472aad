"""The Kafka layer: which streams are Kafka, their frames, decoded messages paired by correlation id."""
