"""Kafka's own ranges and names, checked where input enters the model.

Broker ids, partition ids, partition counts and replication factors are INT32 in Kafka's protocol;
sizes, rates and throttles are LONG (a throttle rate is a LONG broker config). A number beyond them
is not a Kafka cluster: it would overflow the model's int32 arrays or turn sums into infinity. Topic
names follow Kafka's rule (``Topic.validate``): 1 to 249 characters of ``[a-zA-Z0-9._-]``, not ``.``
or ``..``. Every check raises :class:`ModelError` naming where, the field and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from kafka_balancer.model.errors import ModelError

INT32_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
TOPIC_NAME_MAX = 249
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
SHOWN = 80  # characters of a refused value quoted in a message


def shown(value: Any) -> str:
    """``repr`` of a value, cut to a readable length (a refused list can hold millions of items)."""
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[: SHOWN - 3]}..."


def check_int32(value: Any, where: str, field: str, *, minimum: int = 0) -> int:
    """An integer in ``minimum..INT32_MAX`` (a broker id, a partition, a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= INT32_MAX:
        raise ModelError(f"{where}: field '{field}' must be an integer in {minimum}..{INT32_MAX}, got {shown(value)}")
    return value


def check_ids(values: Sequence[int], where: str, field: str) -> None:
    """Broker ids already known to be integers (the readers check the type): within INT32, by the extremes."""
    if values and not (min(values) >= 0 and max(values) <= INT32_MAX):
        raise ModelError(f"{where}: field '{field}' must hold broker ids in 0..{INT32_MAX}, got {shown(list(values))}")


def check_amount(value: Any, where: str, field: str, *, minimum: float = 0.0) -> float:
    """A finite number in ``minimum..LONG_MAX`` (bytes, bytes or messages per second, cores)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"{where}: field '{field}' must be a number, got {shown(value)}")
    if isinstance(value, int) and not minimum <= value <= LONG_MAX:  # before float(): 10**400 overflows it
        raise ModelError(f"{where}: field '{field}' must be a number in {minimum:g}..{LONG_MAX}, got {shown(value)}")
    number = float(value)
    if not (math.isfinite(number) and minimum <= number <= LONG_MAX):
        raise ModelError(f"{where}: field '{field}' must be a number in {minimum:g}..{LONG_MAX}, got {shown(value)}")
    return number


def check_topic_name(value: Any, where: str, field: str = "topic") -> str:
    """A name Kafka accepts for a topic."""
    if not isinstance(value, str) or not value:
        raise ModelError(f"{where}: field '{field}' must be a non-empty string, got {shown(value)}")
    if len(value) > TOPIC_NAME_MAX:
        raise ModelError(
            f"{where}: field '{field}' is {len(value)} characters, Kafka allows at most {TOPIC_NAME_MAX}: "
            f"{shown(value)}"
        )
    if value in (".", "..") or not _TOPIC_NAME.fullmatch(value):
        raise ModelError(
            f"{where}: field '{field}' is not a topic name Kafka allows (ASCII letters, digits, '.', '_', '-'; "
            f"not '.' or '..'), got {shown(value)}"
        )
    return value
