"""What an older Kafka lacks of what the product uses, said once per cluster (issue 54).

The product reads cordons (``cordoned.log.dirs``, KIP-1066, Kafka 4.3+) and eligible leader replicas
(KIP-966, by DescribeTopicPartitions, Kafka 3.8+; kept by Kafka 4.1+). A cluster without one is read
as having none of it (no cordoned directory, no eligible leader replica), and the operator goes on;
the first time it finds a cluster lacking a feature it logs one line saying so, never again in the
process for that cluster and feature.
"""

from __future__ import annotations

import logging
import threading
from enum import Enum

log = logging.getLogger(__name__)


class Feature(Enum):
    CORDONS = "log directory cordons (cordoned.log.dirs, KIP-1066, Kafka 4.3+): no directory is read as cordoned"
    DESCRIBE_TOPIC_PARTITIONS = "DescribeTopicPartitions (KIP-966, Kafka 3.8+): no eligible leader replica is read"


_said: set[tuple[str, Feature]] = set()
_lock = threading.Lock()


def say_lacking(cluster: str, feature: Feature) -> bool:
    """Log that ``cluster`` lacks ``feature``, the first time only; True when this call logged it."""
    with _lock:
        if (cluster, feature) in _said:
            return False
        _said.add((cluster, feature))
    log.warning("Kafka at %s lacks %s; going on without it", cluster, feature.value)
    return True


def forget(cluster: str) -> None:
    """Say again what ``cluster`` lacks (a cluster upgraded in place, or a test that watches the line)."""
    with _lock:
        _said.difference_update({key for key in _said if key[0] == cluster})
