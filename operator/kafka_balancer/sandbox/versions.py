"""The Kafka version a cluster of the sandbox is, and which of the APIs the product uses it has (issue 54).

The real cluster runs the jars of one version (sandbox.real); the emulator is told which version it
answers as (``EmulatorOptions.kafka_version``) and behaves as that version's brokers do where the product
can tell them apart. The conformance tests hold both to the same version's behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass


def version_key(version: str) -> tuple[int, ...]:
    """``"4.3.1"`` -> ``(4, 3, 1)``, to order versions."""
    return tuple(int(n) for n in version.split("."))


@dataclass(frozen=True)
class KafkaFeatures:
    """What brokers of ``version`` have (None: the newest version the product supports, which has all)."""

    version: str | None = None

    def _since(self, *first: int) -> bool:
        return self.version is None or version_key(self.version) >= first

    @property
    def cordons(self) -> bool:
        """``cordoned.log.dirs`` (KIP-1066): a broker config listing directories that take no new replica."""
        return self._since(4, 3)

    @property
    def eligible_leader_replicas(self) -> bool:
        """ELR (KIP-966), on by default from 4.1: below min ISR the replicas that left the ISR stay eligible
        leaders, and the cluster-level min.insync.replicas can be set but not deleted."""
        return self._since(4, 1)
