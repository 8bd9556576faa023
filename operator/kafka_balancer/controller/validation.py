"""The checks a BalancePolicy passes before anything touches its cluster; each failure is a Stall.

A Stall carries the Stalled condition's reason and a message that names the field, the value, the
group, the Secret or the other policy at fault. Blocking (Kubernetes reads): called from the
reconciler's worker thread.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kafka_balancer.controller import cron, summaries
from kafka_balancer.controller.kubeapi import (
    PASSWORD_KEY,
    SERVERS_KEY,
    USERNAME_KEY,
    Credentials,
    ForbiddenError,
    KubeApi,
    NotFoundError,
)
from kafka_balancer.controller.services import Groups
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.groups import check_groups
from kafka_balancer.model.policy.parsing import PolicyError, parse_balance_policy_spec, parse_resource_group_spec


class Stall(Exception):  # noqa: N818 - a control-flow signal, not an error type users see
    """Stop this reconciliation: the spec or the environment needs a human. Reported as Stalled."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def parse_spec(body: dict[str, Any]) -> BalancePolicySpec:
    try:
        spec = parse_balance_policy_spec(body.get("spec"))
        if spec.triggers.schedule is not None:
            try:
                cron.validate(spec.triggers.schedule)
            except cron.CronError as err:
                raise PolicyError("spec.triggers.schedule", str(err)) from None
        for i, window in enumerate(spec.execution.maintenance_windows):
            try:
                cron.in_maintenance_window([window], dt.datetime.now(dt.UTC))
            except cron.CronError as err:
                raise PolicyError(f"spec.execution.maintenanceWindows[{i}].start", str(err)) from None
    except PolicyError as err:
        raise Stall("InvalidSpec", str(err)) from None
    return spec


def read_groups(kube: KubeApi, namespace: str, spec: BalancePolicySpec) -> Groups:
    groups = []
    for group in spec.resource_groups:
        try:
            obj = kube.get_group(namespace, group)
        except NotFoundError:
            raise Stall(
                "UnknownResourceGroup",
                f"spec.resourceGroups: ResourceGroup '{group}' does not exist in namespace {namespace}",
            ) from None
        try:
            groups.append((group, parse_resource_group_spec(obj.get("spec"))))
        except PolicyError as err:
            raise Stall("InvalidResourceGroup", f"ResourceGroup '{group}': {err}") from None
    try:
        check_groups(groups)
    except PolicyError as err:
        raise Stall("OverlappingResourceGroups", str(err)) from None
    return groups


def read_credentials(kube: KubeApi, namespace: str, spec: BalancePolicySpec) -> Credentials | None:
    """The policy's credentials, only when its Secret names every one of the policy's bootstrap servers.

    Whoever may edit the policy chooses ``bootstrapServers``; whoever may write the Secret chooses where its
    credentials may go. Checked before any connection, so a refused policy sends nothing anywhere."""
    ref = spec.cluster.credentials_secret
    if ref is None:
        return None
    where = f"spec.cluster.credentialsSecret: Secret {namespace}/{ref.name}"
    try:
        creds = kube.credentials(namespace, ref.name)
    except NotFoundError as err:
        raise Stall("MissingSecret", f"spec.cluster.credentialsSecret: {err}") from None
    except ForbiddenError as err:
        grant = f"{{namespace: {namespace}, names: [{ref.name}]}}"
        raise Stall(
            "SecretNotGranted", f"spec.cluster.credentialsSecret: {err}: add {grant} to the chart's rbac.secrets"
        ) from None
    if spec.cluster.security_protocol.startswith("SASL"):
        for key, value in ((USERNAME_KEY, creds.username), (PASSWORD_KEY, creds.password)):
            if value is None:
                raise Stall("MissingSecret", f"{where} has no key '{key}'")
    if creds.servers is None:
        raise Stall(
            "CredentialsNotBound",
            f"{where} has no key '{SERVERS_KEY}': it must list the bootstrap servers its credentials may be sent"
            f" to (here {spec.cluster.bootstrap_servers})",
        )
    allowed = summaries.servers(creds.servers)
    others = sorted(summaries.servers(spec.cluster.bootstrap_servers) - allowed)
    if others:
        raise Stall(
            "CredentialsNotBound",
            f"{where} may be used for {', '.join(sorted(allowed)) or 'no server'} (its key '{SERVERS_KEY}'), not for"
            f" {', '.join(others)} of spec.cluster.bootstrapServers: nothing was sent there",
        )
    return creds
