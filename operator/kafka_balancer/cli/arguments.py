"""Argument types every subcommand uses for numbers, so a value beyond Kafka's ranges or NaN never
gets past the parser (argparse then refuses it in one line, exit 2)."""

from __future__ import annotations

import argparse
import math

from kafka_balancer.model.limits import INT32_MAX, shown


def integer(text: str) -> int:
    """An integer option (a count, an id, a port): within Kafka's INT32."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {shown(text)}") from None
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"must be within {-INT32_MAX - 1}..{INT32_MAX}, got {shown(text)}")
    return value


def number(text: str) -> float:
    """A real-valued option (seconds, a ratio, a scale): finite (NaN passes every comparison, so a
    check like ``value > 0`` would let it through to a ``sleep(nan)``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {shown(text)}")
    return value
