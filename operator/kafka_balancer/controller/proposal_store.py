"""Where a policy's proposal lives between planning and execution: ConfigMaps in the policy's namespace.

A real API server refuses a ConfigMap whose data exceeds 1 MiB, and etcd any object over 1.5 MiB,
while a proposal grows with the partitions it changes (about 200 bytes each as JSON). So the
proposal is stored compressed and, when it must be, in pieces:

- ``<policy>-proposal`` holds ``proposal-id``, ``parts`` (how many ConfigMaps hold the proposal),
  ``binaryData.proposal.json.gz`` (the first piece of the whole proposal: JSON, gzip) and, for
  people, copies of ``summary.json`` and ``plan.json`` (Kafka's reassignment JSON, what
  ``kafka-reassign-partitions.sh`` takes) while they fit in 192 KiB.
- ``<policy>-proposal-2`` ... ``-N`` hold ``proposal-id``, ``part`` (``i/N``) and the next pieces.

Pieces are 768 KiB of compressed proposal: tens of thousands of changed partitions each. The pieces are written
first and ``<policy>-proposal`` last, so it names a proposal only once all of it is stored. Parts
beyond ``parts`` left by an earlier, larger proposal are ignored (and go with the policy).

Reading it back is the integrity check: every piece must carry the same id, the pieces must
decompress to at most ``max_bytes`` and parse, and the proposal's id must be the hash of its own
content (:meth:`~kafka_balancer.model.proposal.Proposal.verify`) and the id that was reviewed.

Every ConfigMap written here carries a controller ownerReference to its policy (deleted with it).
A ConfigMap of one of these names that is not the policy's own is never written over: it belongs to
someone else, and taking it would hand its deletion to the policy.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from typing import Any, Final

import kubernetes

from kafka_balancer.controller.kubeapi import ConfigMap, KubeApi
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.proposal import Proposal

GZ_KEY: Final = "proposal.json.gz"
PIECE_BYTES: Final = 768 * 1024
COPIES_BYTES: Final = 192 * 1024  # summary.json and plan.json, for people, when they fit
DEFAULT_MAX_BYTES: Final = 128 * 1024 * 1024  # the whole proposal as JSON (uncompressed)


class ProposalTooLarge(Exception):  # noqa: N818 - reported as Stalled/ProposalTooLarge
    """The proposal is over the operator's limit, or the API server refused to store it."""


class ConfigMapNotOurs(Exception):  # noqa: N818 - reported as Stalled/ConfigMapConflict
    """A ConfigMap of the proposal's names exists and is not the policy's own."""


class ProposalLost(Exception):  # noqa: N818 - reported as Stalled/ProposalLost
    """The stored proposal is missing, incomplete or not the one that was reviewed."""


class ProposalTampered(ProposalLost):
    """What people review next to the proposal (plan.json, summary.json, any other key) is not the verified
    proposal: what a reviewer read is not what would run."""


# The keys of the first ConfigMap: the proposal's id, its number of parts, and the review copies.
REVIEW_KEYS: Final = ("summary.json", "plan.json")
DATA_KEYS: Final = frozenset({"proposal-id", "parts", *REVIEW_KEYS})


def config_map_name(policy: str, part: int = 1) -> str:
    return f"{policy}-proposal" if part == 1 else f"{policy}-proposal-{part}"


@dataclass(frozen=True)
class Owner:
    """The policy a proposal belongs to: its ownerReference (with its uid) and name."""

    reference: dict[str, Any]

    @property
    def uid(self) -> str:
        return str(self.reference.get("uid"))

    @property
    def policy(self) -> str:
        return str(self.reference.get("name"))


class ProposalStore:
    """Saves a policy's proposal into its ConfigMaps and reads it back verified."""

    def __init__(self, kube: KubeApi, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.kube = kube
        self.max_bytes = max_bytes

    # ----- writing ------------------------------------------------------------------------
    def save(self, namespace: str, owner: Owner, proposal: Proposal) -> str:
        """Store ``proposal``; the name of the ConfigMap that names it. Raises ProposalTooLarge, ConfigMapNotOurs."""
        text = json.dumps(proposal.to_dict(), sort_keys=True, separators=(",", ":")).encode()
        if len(text) > self.max_bytes:
            raise ProposalTooLarge(
                f"proposal {proposal.id} is {_mib(len(text))} of JSON ({len(proposal.plan)} partitions); the"
                f" operator stores at most {_mib(self.max_bytes)} (KAFKA_BALANCER_PROPOSAL_MAX_BYTES): narrow the"
                " operation or the groups, or raise the limit"
            )
        packed = gzip.compress(text, compresslevel=6, mtime=0)
        pieces = [packed[i : i + PIECE_BYTES] for i in range(0, len(packed), PIECE_BYTES)] or [b""]
        count = len(pieces)
        maps = [
            ConfigMap(
                config_map_name(owner.policy, i),
                (owner.uid,),
                {"proposal-id": proposal.id, "part": f"{i}/{count}"},
                {GZ_KEY: piece},
            )
            for i, piece in enumerate(pieces[1:], start=2)
        ]
        first = {"proposal-id": proposal.id, "parts": str(count), **_copies(proposal)}
        maps.append(ConfigMap(config_map_name(owner.policy), (owner.uid,), first, {GZ_KEY: pieces[0]}))
        existing = {m.name: self._ours(namespace, m.name, owner) for m in maps}  # refuse before writing anything
        for config_map in maps:  # the first ConfigMap last: it names the proposal once every piece is in
            self._write(namespace, config_map, existing[config_map.name], owner)
        return config_map_name(owner.policy)

    def _ours(self, namespace: str, name: str, owner: Owner) -> ConfigMap | None:
        found = self.kube.read_config_map(namespace, name)
        if found is not None and owner.uid not in found.owners:
            raise ConfigMapNotOurs(
                f"ConfigMap {namespace}/{name} exists and is not owned by BalancePolicy {namespace}/{owner.policy}:"
                " the operator does not write over it (deleting the policy would delete it); rename or delete it,"
                " or rename the policy"
            )
        return found

    def _write(self, namespace: str, config_map: ConfigMap, before: ConfigMap | None, owner: Owner) -> None:
        try:
            if before is None:
                self.kube.create_config_map(namespace, config_map, owner.reference)
            else:
                self.kube.replace_config_map_data(namespace, config_map, before)
        except kubernetes.client.ApiException as err:
            if err.status in (413, 422):  # over the API server's or etcd's size limit
                raise ProposalTooLarge(
                    f"the API server refused ConfigMap {namespace}/{config_map.name}: {_api_message(err)}"
                ) from None
            raise

    # ----- reading ------------------------------------------------------------------------
    def load(self, namespace: str, name: str, expected_id: str) -> Proposal:
        """The stored proposal, verified to be ``expected_id``. Raises ProposalLost naming what is wrong."""
        first = self.kube.read_config_map(namespace, name)
        if first is None:
            raise ProposalLost(f"ConfigMap {namespace}/{name} not found")
        stored_id = first.data.get("proposal-id")
        if stored_id != expected_id:
            raise ProposalLost(f"ConfigMap {namespace}/{name} holds proposal {stored_id}, not {expected_id}")
        count = first.data.get("parts", "")
        if not count.isdigit() or int(count) < 1 or GZ_KEY not in first.binary:
            raise ProposalLost(f"ConfigMap {namespace}/{name} has no proposal in binaryData.{GZ_KEY}")
        pieces = [first.binary[GZ_KEY]]
        for i in range(2, int(count) + 1):
            part_name = f"{name}-{i}"
            part = self.kube.read_config_map(namespace, part_name)
            if part is None or part.data.get("proposal-id") != expected_id or GZ_KEY not in part.binary:
                seen = None if part is None else part.data.get("proposal-id")
                raise ProposalLost(
                    f"ConfigMap {namespace}/{part_name}: part {i} of proposal {expected_id} is missing (found {seen})"
                )
            pieces.append(part.binary[GZ_KEY])
        try:
            proposal = Proposal.loads(_gunzip(b"".join(pieces), self.max_bytes))
            proposal.verify()
        except (ModelError, ValueError) as err:
            raise ProposalLost(f"ConfigMap {namespace}/{name}: {err}") from None
        if proposal.id != expected_id:
            raise ProposalLost(f"ConfigMap {namespace}/{name} holds proposal {proposal.id}, not {expected_id}")
        _check_copies(first.data, proposal, f"ConfigMap {namespace}/{name}")
        return proposal


def _check_copies(data: dict[str, str], proposal: Proposal, where: str) -> None:
    """What people read next to the proposal is the proposal: each review copy there is exactly the one made
    from it (a copy left out for size may be absent), and nothing else is there to read."""
    made = _copies(proposal)
    unknown = sorted(set(data) - DATA_KEYS)
    if unknown:
        raise ProposalTampered(f"{where} has data the operator did not write: {', '.join(unknown)}")
    for key in REVIEW_KEYS:
        if key in data and data[key] != made.get(key):
            raise ProposalTampered(
                f"{where}: {key} differs from the verified proposal {proposal.id}: what a reviewer read there is "
                "not what would run"
            )


def _copies(proposal: Proposal) -> dict[str, str]:
    """summary.json, then plan.json, while they fit in COPIES_BYTES (the proposal itself holds both)."""
    out: dict[str, str] = {}
    room = COPIES_BYTES
    for key, text in (
        ("summary.json", json.dumps(dict(proposal.summary), sort_keys=True, separators=(",", ":"), default=str)),
        ("plan.json", proposal.plan.dumps()),
    ):
        if len(text.encode()) <= room:
            out[key] = text
            room -= len(text.encode())
    return out


def _gunzip(data: bytes, limit: int) -> bytes:
    """Decompress at most ``limit`` bytes: a piece made to expand further is refused, not expanded."""
    inflater = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as err:
        raise ValueError(f"binaryData.{GZ_KEY} is not gzip: {err}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise ValueError(f"binaryData.{GZ_KEY} expands beyond {_mib(limit)}")
    if not inflater.eof:
        raise ValueError(f"binaryData.{GZ_KEY} is truncated")
    return out


def _mib(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MiB"


def _api_message(err: kubernetes.client.ApiException) -> str:
    try:
        return str(json.loads(err.body or "{}").get("message") or err.reason)
    except (ValueError, AttributeError):
        return f"{err.status} {err.reason}"
