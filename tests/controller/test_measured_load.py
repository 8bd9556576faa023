"""Planning inputs when a policy has a sample store: live placement, measured rates; and the RBAC list's shape."""

from __future__ import annotations

from kafka_balancer.controller.analysis import with_measured_load
from kafka_balancer.controller.rbac import API_CALLS, allows
from kafka_balancer.model import ClusterBuilder, ClusterModel


def _model(
    placement: dict[tuple[str, int], list[int]], rates: dict[tuple[str, int], float], **broker: float
) -> ClusterModel:
    builder = ClusterBuilder(cluster_name="c")
    for b in (1, 2, 3, 4):
        builder.add_broker(b, rack=f"r{b % 2}", **broker)  # type: ignore[arg-type]
    for (topic, p), replicas in sorted(placement.items()):
        builder.add_partition(
            topic, p, replicas, size_bytes=100.0, bytes_in_per_sec=rates.get((topic, p), 0.0), messages_in_per_sec=1.0
        )
    return builder.build()


def test_live_placement_keeps_the_measured_rates() -> None:
    # The analysis saw t-0 on brokers 1,2 (before an execution moved it) and never saw t-1 (created since).
    measured = _model({("t", 0): [1, 2]}, {("t", 0): 5e6}, network_in_bytes_per_sec=1e8)
    live = _model({("t", 0): [3, 4], ("t", 1): [1, 2]}, {})
    merged = with_measured_load(live, measured)
    t0, t1 = merged.partition_index("t", 0), merged.partition_index("t", 1)
    assert merged.replica_ids(t0) == (3, 4)  # placement: live
    assert merged.bytes_in[t0] == 5e6  # rate: measured
    assert merged.bytes_in[t1] == 0.0  # unseen partition: live values
    assert merged.capacity[0][1] == 1e8  # capacity learnt by the analysis
    assert not merged.bytes_in.flags.writeable


def test_rbac_list_is_unique_and_answers_lookups() -> None:
    keys = [(c.group, c.resource, c.verb, c.scope) for c in API_CALLS]
    assert len(keys) == len(set(keys))
    assert all(c.why for c in API_CALLS)
    assert allows("kafkabalancer.io", "balancepolicies/status", "patch", namespaced=True)
    assert allows("", "secrets", "get", namespaced=True)
    assert not allows("", "secrets", "list", namespaced=True)  # the operator reads one named Secret, never lists
    assert not allows("", "configmaps", "delete", namespaced=True)  # owner references delete them, not us
