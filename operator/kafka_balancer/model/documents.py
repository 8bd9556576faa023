"""Decode an input document (JSON, or YAML manifests) into plain data, or refuse it in one sentence.

The rules every document obeys, whatever reads it: UTF-8 text; nesting no deeper than
``MAX_DEPTH`` (Python's parsers recurse, and a deeper document ended in a RecursionError); YAML
without aliases (nested aliases expand exponentially: a 1 KB "billion laughs" document grows to
gigabytes) and at most ``MAX_MANIFEST_BYTES``, what a Kubernetes API server stores for two objects.
Size limits of whole files are the reader's (the command line's ``read_input``); these functions
get text already read.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from kafka_balancer.model.errors import ModelError

MAX_DEPTH = 64  # levels of arrays and objects: the deepest real document (a policy) has about 8
MAX_MANIFEST_BYTES = 3 << 20  # 3 MiB: two objects of the API server's 1.5 MiB


def decode_text(data: str | bytes, what: str) -> str:
    """``data`` as text; bytes must be UTF-8 (the error names the byte offset)."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ModelError(f"{what}: not UTF-8 text (byte {err.start}: {data[err.start : err.start + 4]!r})") from None


def check_depth(value: Any, what: str) -> None:
    """Refuse a value nested deeper than ``MAX_DEPTH``, level by level (no recursion)."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise ModelError(f"{what}: nested more than {MAX_DEPTH} levels deep")
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]


def loads_json(data: str | bytes, what: str) -> Any:
    """One JSON document; NaN and Infinity (not JSON, but Python writes them) are refused too."""
    text = decode_text(data, what)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise ModelError(f"{what}: not valid JSON: {err}") from None
    except RecursionError:
        raise ModelError(f"{what}: nested more than {MAX_DEPTH} levels deep") from None
    except _ConstantError as err:
        raise ModelError(f"{what}: {err.args[0]} is not a JSON number") from None
    check_depth(value, what)
    return value


class _ConstantError(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _ConstantError(name)


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses every alias (``*name``) where it meets it."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise ModelError(
                f"YAML aliases are not accepted (alias *{event.anchor} on line {event.start_mark.line + 1}); "
                "write the value out"
            )
        return super().compose_node(parent, index)


def loads_manifests(data: str | bytes, what: str) -> list[Any]:
    """Every document of a YAML stream (``---``-separated), empty documents left out."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise ModelError(
            f"{what}: {len(data) / (1 << 20):.1f} MiB, more than the {MAX_MANIFEST_BYTES >> 20} MiB accepted"
        )
    text = decode_text(data, what)
    try:
        docs = [doc for doc in yaml.load_all(text, Loader=_NoAliasLoader) if doc is not None]
    except ModelError as err:
        raise ModelError(f"{what}: {err}") from None
    except yaml.YAMLError as err:
        raise ModelError(f"{what}: not valid YAML: {' '.join(str(err).split())}") from None
    except RecursionError:
        raise ModelError(f"{what}: nested more than {MAX_DEPTH} levels deep") from None
    for doc in docs:
        check_depth(doc, what)
    return docs
