"""Errors raised for invalid cluster descriptions."""


class ModelError(ValueError):
    """Invalid input to the model; the message names the broker/topic/partition, field and value."""
