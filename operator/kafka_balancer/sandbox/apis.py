"""The APIs the emulator serves and the version range it advertises for each.

Ranges stop where a later version would need something the emulator does not model (topic ids as
the only key in DeleteTopics v6 and OffsetFetch v10, KIP-848 member epochs).
"""

from __future__ import annotations

from kafka_balancer.sandbox import apis_cluster, apis_groups, apis_replicas
from kafka_balancer.sandbox.protocol import MESSAGES, SASL_AUTHENTICATE, SASL_HANDSHAKE, Api, Call, HandlerFn, Router
from kafka_balancer.sandbox.sasl import SaslServer
from kafka_balancer.sandbox.state import ClusterState


def _api_versions(_call: Call) -> object:  # answered by the router itself
    raise AssertionError("ApiVersions is answered by Router")


# key -> (min version, max version, handler)
TABLE: dict[int, tuple[int, int, HandlerFn]] = {
    18: (0, 3, _api_versions),
    3: (0, 12, apis_cluster.metadata),
    60: (0, 1, apis_cluster.describe_cluster),
    10: (0, 4, apis_cluster.find_coordinator),
    19: (2, 7, apis_cluster.create_topics),
    20: (1, 5, apis_cluster.delete_topics),
    32: (1, 4, apis_cluster.describe_configs),
    44: (0, 1, apis_cluster.incremental_alter_configs),
    45: (0, 0, apis_replicas.alter_reassignments),
    46: (0, 0, apis_replicas.list_reassignments),
    75: (0, 0, apis_replicas.describe_topic_partitions),
    43: (0, 2, apis_replicas.elect_leaders),
    35: (1, 5, apis_replicas.describe_log_dirs),
    34: (1, 2, apis_replicas.alter_replica_log_dirs),
    2: (1, 7, apis_replicas.list_offsets),
    16: (0, 4, apis_groups.list_groups),
    15: (0, 5, apis_groups.describe_groups),
    9: (1, 8, apis_groups.offset_fetch),
}


def build_router(state: ClusterState, host: str, sasl: SaslServer | None = None) -> Router:
    """The router for every broker; with ``sasl``, connections must authenticate first."""
    router = Router(state, host, require_auth=sasl is not None)
    table = dict(TABLE)
    if sasl is not None:
        # SaslHandshake v1 only: v0 would switch to unframed SASL tokens, which no current client needs.
        table[SASL_HANDSHAKE] = (1, 1, sasl.handshake)
        table[SASL_AUTHENTICATE] = (0, 2, sasl.authenticate)
    for key, (low, high, handler) in table.items():
        request, response = MESSAGES[key]
        router.register(Api(key, request, response, low, high, handler))
    return router
