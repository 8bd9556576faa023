"""Execution of a proposal over the Kafka port: batches, throttles, progress, stop, resume."""
