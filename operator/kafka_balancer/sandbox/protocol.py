"""Wire protocol: decode a request frame, route it to its handler, encode the response frame.

The request and response classes are kafka-python's ``kafka.protocol`` messages, generated from
Kafka's own JSON message definitions, so every version's layout (including flexible versions with
tagged fields) comes from the same source the brokers use. The emulator advertises, per API, the
versions it answers; clients pick the highest version both sides know.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin.cluster import (
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from kafka.protocol.admin.configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.admin.groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.admin.topics import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_balancer.kafka.errors import error_code
from kafka_balancer.sandbox.server import Session
from kafka_balancer.sandbox.state import ClusterState

log = logging.getLogger(__name__)

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
# What a SASL listener answers before the client has authenticated.
_BEFORE_AUTH = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


@dataclass
class Call:
    """One decoded request, as a handler sees it."""

    state: ClusterState
    broker_id: int
    version: int
    body: Any
    host: str
    session: Session


HandlerFn = Callable[[Call], Any]
"""Returns the response message, or ``bytes`` of an already encoded response body (cached)."""


@dataclass(frozen=True)
class Api:
    key: int
    request: Any
    response: Any
    min_version: int
    max_version: int
    handler: HandlerFn


class Router:
    """Maps API keys to handlers and turns request frames into response frames."""

    def __init__(self, state: ClusterState, host: str, *, require_auth: bool = False):
        self.state = state
        self.host = host
        self.require_auth = require_auth
        self.apis: dict[int, Api] = {}
        self.unknown_keys: set[int] = set()

    def register(self, api: Api) -> None:
        self.apis[api.key] = api

    def advertised(self) -> list[tuple[int, int, int]]:
        return sorted((a.key, a.min_version, a.max_version) for a in self.apis.values())

    def handle(self, broker_id: int, payload: bytes, session: Session) -> bytes | None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", payload, 0)
        if self.require_auth and not session.authenticated and api_key not in _BEFORE_AUTH:
            # As Kafka's SASL listener does: an unauthenticated client gets its connection closed.
            log.warning("broker %d: API key %d before SASL authentication, closing connection", broker_id, api_key)
            return None
        with self.state.lock:
            self.state.requests[api_key] += 1
            self.state.requests_by_broker[(broker_id, api_key)] += 1
            for fault in ((broker_id, api_key), (None, api_key)):
                if self.state.dropped[fault] > 0:
                    self.state.dropped[fault] -= 1
                    log.info("broker %d: dropping API key %d (fault), closing connection", broker_id, api_key)
                    return None
        api = self.apis.get(api_key)
        if api is None:
            # Loud on purpose: a client sending an API we do not emulate is a gap to close.
            if api_key not in self.unknown_keys:
                log.error("broker %d: unsupported API key %d v%d, closing connection", broker_id, api_key, version)
                self.unknown_keys.add(api_key)
            return None
        if api_key == API_VERSIONS and not api.min_version <= version <= api.max_version:
            # KIP-511: answer an unknown ApiVersions version with v0 and the versions we know.
            return self._frame(correlation_id, self._api_versions(0, "UNSUPPORTED_VERSION"), api, 0)
        if not api.min_version <= version <= api.max_version:
            log.error("broker %d: API %d version %d not advertised", broker_id, api_key, version)
            return None
        request = api.request.decode(payload, version=version, header=True)
        call = Call(self.state, broker_id, version, request, self.host, session)
        if api_key == API_VERSIONS:
            response: Any = self._api_versions(version, "NONE")
        else:
            # Handlers read and change the shared state as one step; encoding happens outside
            # the lock (responses hold copies), so a large response does not stall the clock.
            with self.state.lock:
                response = api.handler(call)
        return self._frame(correlation_id, response, api, version)

    def _api_versions(self, version: int, error: str) -> Any:
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in self.advertised()
        ]
        return ApiVersionsResponse(
            version=version,
            error_code=error_code(error),
            api_keys=keys,
            throttle_time_ms=0,
            supported_features=[],
            finalized_features_epoch=-1,
            finalized_features=[],
            zk_migration_ready=False,
        )

    @staticmethod
    def _frame(correlation_id: int, response: Any, api: Api, version: int) -> bytes:
        body = response if isinstance(response, bytes | bytearray) else response.encode(version=version)
        # Response header v1 (flexible versions) adds an empty tagged-field section; ApiVersions
        # always answers with header v0 so that old clients can read it.
        flexible = api.key != API_VERSIONS and api.response.flexible_version_q(version)
        header = struct.pack(">i", correlation_id) + (b"\x00" if flexible else b"")
        return struct.pack(">i", len(header) + len(body)) + header + bytes(body)


# Request/response classes per API key; the handlers and version ranges are registered in
# kafka_balancer.sandbox.apis, which keeps this module about the wire only.
MESSAGES: dict[int, tuple[Any, Any]] = {
    18: (ApiVersionsRequest, ApiVersionsResponse),
    3: (MetadataRequest, MetadataResponse),
    60: (DescribeClusterRequest, DescribeClusterResponse),
    19: (CreateTopicsRequest, CreateTopicsResponse),
    20: (DeleteTopicsRequest, DeleteTopicsResponse),
    32: (DescribeConfigsRequest, DescribeConfigsResponse),
    44: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    45: (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse),
    46: (ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse),
    75: (DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse),
    43: (ElectLeadersRequest, ElectLeadersResponse),
    35: (DescribeLogDirsRequest, DescribeLogDirsResponse),
    34: (AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse),
    2: (ListOffsetsRequest, ListOffsetsResponse),
    10: (FindCoordinatorRequest, FindCoordinatorResponse),
    16: (ListGroupsRequest, ListGroupsResponse),
    15: (DescribeGroupsRequest, DescribeGroupsResponse),
    9: (OffsetFetchRequest, OffsetFetchResponse),
    SASL_HANDSHAKE: (SaslHandshakeRequest, SaslHandshakeResponse),
    SASL_AUTHENTICATE: (SaslAuthenticateRequest, SaslAuthenticateResponse),
}
