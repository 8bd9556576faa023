"""Topic and broker configs through librdkafka: DescribeConfigs and IncrementalAlterConfigs.

librdkafka takes one BROKER resource per call (each goes to its own broker), topics all in one. A value
Kafka cannot read is refused before anything is sent, and a ListChange's SUBTRACT goes in a request of
its own, after its APPEND.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

# The admin package re-exports these without __all__; import them from where they are defined so
# that mypy --strict (no implicit re-export) sees them.
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource

from kafka_balancer.kafka.clients import Clients
from kafka_balancer.kafka.port import (
    MAX_CONFIG_VALUE_BYTES,
    ConfigValue,
    KafkaError,
    KafkaUnavailableError,
    ListChange,
)


def _set_entries(key: str, value: ConfigValue) -> list[Any]:
    """SET, DELETE and a ListChange's APPEND."""
    if isinstance(value, ListChange):
        if not value.append:
            return []
        return [ConfigEntry(key, ",".join(value.append), incremental_operation=AlterConfigOpType.APPEND)]
    op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
    return [ConfigEntry(key, value if value is not None else "", incremental_operation=op)]


def _subtract_entries(key: str, value: ConfigValue) -> list[Any]:
    """A ListChange's SUBTRACT."""
    if isinstance(value, ListChange) and value.subtract:
        return [ConfigEntry(key, ",".join(value.subtract), incremental_operation=AlterConfigOpType.SUBTRACT)]
    return []


def _check_value_sizes(changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
    """Refuse, before anything is sent, a value Kafka cannot read (MAX_CONFIG_VALUE_BYTES): the broker
    would close the connection, which librdkafka reports as a lost broker, not as what was wrong."""
    for name, configs in changes.items():
        for key, value in configs.items():
            parts = (value.append, value.subtract) if isinstance(value, ListChange) else ((value or "",),)
            for entries in parts:
                size = len(",".join(entries).encode())
                if size > MAX_CONFIG_VALUE_BYTES:
                    raise KafkaError(
                        "INVALID_CONFIG",
                        f"{key} of {name}: a value of {size} bytes, more than the {MAX_CONFIG_VALUE_BYTES} "
                        "Kafka's protocol takes (nothing was sent)",
                    )


class Configs:
    """Reads and changes the configs of topics and brokers."""

    def __init__(self, clients: Clients):
        self._clients = clients

    def _describe(self, rtype: Any, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        resources = [ConfigResource(rtype, str(n)) for n in names]
        batches = self._batches(rtype, resources)
        out: dict[str, dict[str, Any]] = {}
        for batch in batches:
            if batch:
                out.update(self._clients.read(functools.partial(self._configs_of, batch)))
        return out

    def _configs_of(self, batch: list[Any]) -> dict[str, dict[str, Any]]:
        clients = self._clients
        return {res.name: clients.result(future) for res, future in clients.admin.describe_configs(batch).items()}

    def _batches(self, rtype: Any, resources: list[Any]) -> list[list[Any]]:
        """Group config resources into calls: librdkafka takes one BROKER resource per call
        (each goes to its own broker), topics all in one.

        Before a broker-addressed call, DescribeCluster refreshes librdkafka's broker list: a
        broker that restarted since the last metadata is otherwise unknown to librdkafka and the
        call waits out its whole timeout. A broker not in the cluster fails at once, by name.
        """
        if rtype != ConfigResource.Type.BROKER:
            return [resources]
        if resources:
            live = self._clients.live_brokers()
            down = sorted(int(r.name) for r in resources if int(r.name) not in live)
            if down:
                raise KafkaUnavailableError(
                    "BROKER_NOT_AVAILABLE",
                    f"broker(s) {down} not in the live brokers {sorted(live)} of {self._clients.spec}",
                )
        return [[r] for r in resources]

    def topic_entries(self, topics: Iterable[str]) -> dict[str, dict[str, Any]]:
        """librdkafka's ConfigEntry of every config of each topic, by topic and config name."""
        return self._describe(ConfigResource.Type.TOPIC, topics)

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """Every config of each topic with its effective value (defaults included)."""
        raw = self.topic_entries(topics)
        return {t: {k: e.value for k, e in entries.items() if e.value is not None} for t, entries in raw.items()}

    def broker_configs(self, broker_ids: Iterable[int]) -> dict[int, dict[str, str]]:
        raw = self._describe(ConfigResource.Type.BROKER, [str(b) for b in broker_ids])
        return {int(b): {k: e.value for k, e in entries.items() if e.value is not None} for b, entries in raw.items()}

    def _alter(self, rtype: Any, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        # Kafka refuses two operations on one config key in a request: a ListChange's SUBTRACT goes
        # in a second request, after its APPEND (an entry being replaced is never missing meanwhile).
        _check_value_sizes(changes)
        for phase in (_set_entries, _subtract_entries):
            resources = []
            for name, configs in changes.items():
                entries = [entry for key, value in configs.items() for entry in phase(key, value)]
                if entries:
                    resources.append(ConfigResource(rtype, name, incremental_configs=entries))
            for batch in self._batches(rtype, resources):
                if batch:
                    for _, future in self._clients.admin.incremental_alter_configs(batch).items():
                        self._clients.result(future)

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        self._alter(ConfigResource.Type.BROKER, {str(b): c for b, c in changes.items()})

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        self._alter(ConfigResource.Type.TOPIC, changes)
