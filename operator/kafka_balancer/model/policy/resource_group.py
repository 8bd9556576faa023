"""The ResourceGroup spec: a group's brokers (by id or rack) and topics (by name or pattern)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from kafka_balancer.model.policy.fields import BrokerId, RackName, SpecModel, TopicName, listed_once
from kafka_balancer.model.topic_patterns import MAX_PATTERN_LENGTH, MAX_PATTERNS, compile_pattern, matches_any


class BrokerSelector(SpecModel):
    """The brokers of a group: by id or by rack (exactly one)."""

    ids: list[BrokerId] | None = None
    """Broker ids."""
    racks: list[Annotated[str, Field(min_length=1)]] | None = None
    """Every broker whose `broker.rack` is one of these."""

    @model_validator(mode="after")
    def _exactly_one(self) -> BrokerSelector:
        if (self.ids is None) == (self.racks is None):
            raise ValueError("set exactly one of 'ids' or 'racks'")
        chosen = self.ids if self.ids is not None else self.racks
        if not chosen:
            raise ValueError("'ids' or 'racks' must not be empty")
        return self


def _linear_time(pattern: str) -> str:
    compile_pattern(pattern)  # PatternError is a ValueError: pydantic reports it at the pattern's index
    return pattern


TopicPattern = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PATTERN_LENGTH),
    AfterValidator(_linear_time),
]


class TopicSelector(SpecModel):
    """The topics of a group: exact names and regular expressions (full match)."""

    names: list[TopicName] = Field(default_factory=list)
    """Topic names."""
    patterns: list[TopicPattern] = Field(default_factory=list, max_length=MAX_PATTERNS)
    """Regular expressions in RE2 syntax, matched against the whole topic name in linear time (no
    backreferences or look-around)."""

    def matches(self, topic: str) -> bool:
        return topic in self.names or matches_any(self.patterns, topic)


class ResourceGroupSpec(SpecModel):
    """A set of brokers and the topics that live on them, balanced against its own average."""

    brokers: BrokerSelector
    """The group's brokers."""
    topics: TopicSelector = Field(default_factory=TopicSelector)
    """The group's topics; a topic in no group is balanced over the brokers in no group (if every broker is in
    a group, it stays where it is: no distribution goal moves it; its replicas on dead or removed brokers go to
    any broker, rack-aware, and may settle on another broker where one ends above a capacity limit; its
    leadership moves off demoted or excluded brokers, to its preferred leader rack where a replica re-placed there
    made that rack preferred, and to another of its replicas where a broker is above a network-out or CPU limit that
    no other leadership move repairs)."""
    preferred_leader_racks: list[RackName] = Field(default_factory=list, max_length=64)
    """Racks (`broker.rack`) to lead this group's topics from, most preferred first, in place of the policy's
    `goals.preferredLeaderRacks` (which a group without its own list follows): a partition of the group's topics
    is led from the first rack of this list holding one of its replicas (on a broker that may lead); the goals
    that leadership carries are balanced among the group's brokers of each rack of this list (and of the unlisted
    racks together). In force while `preferred-leader-racks` is a hard goal of the policy. A name no broker has
    is refused, unless a broker is down. Empty = the policy's list."""

    @field_validator("preferred_leader_racks")
    @classmethod
    def _no_duplicates(cls, racks: list[str]) -> list[str]:
        return listed_once(racks)
