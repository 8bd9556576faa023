"""Whole BalancePolicy and ResourceGroup objects, and parsing them: the first validation error is
reported as a :class:`PolicyError` that names the field (dotted camelCase path) and the value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import shown
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.fields import API_VERSION, ApiVersion, K8sName
from kafka_balancer.model.policy.resource_group import ResourceGroupSpec


class ObjectMeta(BaseModel):
    """The part of metadata the operator reads; everything else is kept by Kubernetes."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: K8sName
    namespace: str = "default"
    generation: int | None = None


class BalancePolicy(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    api_version: ApiVersion = Field(API_VERSION, alias="apiVersion")
    kind: Literal["BalancePolicy"] = "BalancePolicy"
    metadata: ObjectMeta
    spec: BalancePolicySpec


class ResourceGroup(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    api_version: ApiVersion = Field(API_VERSION, alias="apiVersion")
    kind: Literal["ResourceGroup"] = "ResourceGroup"
    metadata: ObjectMeta
    spec: ResourceGroupSpec


class PolicyError(ModelError):
    """A spec that does not validate; ``field`` is the dotted camelCase path, ``value`` the bad value."""

    def __init__(self, field: str, message: str, value: Any = None):
        self.field = field
        self.value = value
        self.message = message
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"{field}: {message}{shown}")


def _first_error(err: ValidationError, prefix: str) -> PolicyError:
    first = err.errors(include_url=False)[0]
    field = prefix
    for part in first["loc"]:
        field += f"[{part}]" if isinstance(part, int) else f".{part}"
    message = str(first["msg"]).removeprefix("Value error, ")
    value = first.get("input") if first["type"] not in {"missing"} else None
    if isinstance(value, Mapping | list):
        value = None  # a whole sub-object is not a useful "got"; the message says what is wrong
    return PolicyError(field, message, value)


def parse_balance_policy_spec(spec: Any) -> BalancePolicySpec:
    """Validate a BalancePolicy spec (as found in the object's ``spec``). Raises PolicyError."""
    try:
        return BalancePolicySpec.model_validate(spec)
    except ValidationError as err:
        raise _first_error(err, "spec") from None


def parse_resource_group_spec(spec: Any) -> ResourceGroupSpec:
    """Validate a ResourceGroup spec. Raises PolicyError."""
    try:
        return ResourceGroupSpec.model_validate(spec)
    except ValidationError as err:
        raise _first_error(err, "spec") from None


def parse_manifests(documents: Sequence[Any]) -> tuple[list[BalancePolicy], list[ResourceGroup]]:
    """Split parsed YAML documents (e.g. ``yaml.safe_load_all``) into policies and groups; others are skipped.

    Used by the CLI: a BalancePolicy manifest is also the CLI's policy file.
    """
    policies: list[BalancePolicy] = []
    groups: list[ResourceGroup] = []
    for i, doc in enumerate(documents):
        if not isinstance(doc, Mapping) or doc.get("apiVersion") != API_VERSION:
            continue
        kind = doc.get("kind")
        if kind not in ("BalancePolicy", "ResourceGroup"):
            continue
        metadata = doc.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        where = f"document[{i}] ({kind} {shown(name)})"
        try:
            if kind == "BalancePolicy":
                policies.append(BalancePolicy.model_validate(doc))
            elif kind == "ResourceGroup":
                groups.append(ResourceGroup.model_validate(doc))
        except ValidationError as err:
            raise _first_error(err, where) from None
    return policies, groups
