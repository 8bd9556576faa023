"""Java's String ordering and java.util.HashMap iteration order, so the sticky assignors match Kafka.

Kafka's AbstractStickyAssignor walks ``HashMap``/``HashSet`` instances in a few places where the order
changes the result (which member keeps its extra partition; which partition is moved back). To give
exactly the assignment a Java consumer leader computes, those walks use the order a Java 8+ HashMap
yields: buckets by ``(h ^ h >>> 16) & (capacity - 1)``, insertion order inside a bucket (a resize
splits buckets without reordering them). Bins are assumed never to turn into trees (that needs eight
colliding keys in one bucket), which is the only case where this order could differ.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

_MASK = 0xFFFFFFFF


def java_string_key(text: str) -> bytes:
    """A sort key equal to Java's ``String.compareTo`` (UTF-16 code units, not code points)."""
    return text.encode("utf-16-be")


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit number."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return h


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode()`` (31 * (31 + partition) + topic hash)."""
    topic, partition = tp
    return (31 * (31 + partition) + java_string_hash(topic)) & _MASK


def _bucket(h: int, capacity: int) -> int:
    return (h ^ (h >> 16)) & (capacity - 1)


class JavaHashSet(Generic[K]):
    """The keys of a ``java.util.HashSet``/``HashMap`` created with the default capacity (16)."""

    def __init__(self, hash_fn: Callable[[K], int], items: Iterable[K] = ()):
        self._hash = hash_fn
        self._capacity = 16
        self._seq = 0
        self._items: dict[K, int] = {}
        for item in items:
            self.add(item)

    def add(self, item: K) -> bool:
        if item in self._items:
            return False
        self._items[item] = self._seq
        self._seq += 1
        # HashMap.putVal resizes when the new size exceeds capacity * 0.75; it never shrinks.
        if len(self._items) > self._capacity * 3 // 4:
            self._capacity *= 2
        return True

    def discard(self, item: K) -> None:
        self._items.pop(item, None)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        capacity = self._capacity
        return iter(sorted(self._items, key=lambda k: (_bucket(self._hash(k), capacity), self._items[k])))

    def first(self) -> K:
        return next(iter(self))


def java_string_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a default ``HashMap<String, ...>`` filled with ``keys`` in this order."""
    return list(JavaHashSet(java_string_hash, keys))
