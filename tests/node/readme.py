"""README.md's "Installing on a real cluster", read as the commands a user types.

The node test (tests/node/test_chart_on_node.py) runs these very commands, so that the README says
exactly what was tested: each code block of the section is a list of commands (comments dropped,
continued lines joined, words split as the shell splits them), and `helm install`'s flags are read by
Helm's own --set parsers.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python as helm

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Installing on a real cluster"


def blocks(section: str = SECTION) -> list[list[list[str]]]:
    """The section's ```sh blocks, each a list of commands (their words)."""
    text = README.read_text()
    body = text[text.index(section) + len(section) :]
    body = body[: body.index("\n## ")]
    found = []
    for block in re.findall(r"```sh\n(.*?)```", body, flags=re.S):
        joined = block.replace("\\\n", " ")
        found.append([shlex.split(line) for line in joined.splitlines() if line.strip() and not line.startswith("#")])
    return found


@dataclass
class HelmCommand:
    """`helm install|uninstall RELEASE [CHART] [flags]` as the Helm library's arguments."""

    action: str
    release: str
    chart: str | None = None
    namespace: str = "default"
    values: dict[str, Any] = field(default_factory=dict)
    create_namespace: bool = False
    wait: bool = False


def helm_command(words: list[str]) -> HelmCommand:
    assert words[0] == "helm", words
    action, release, *rest = words[1:]
    command = HelmCommand(action, release)
    if action in {"install", "upgrade"}:
        command.chart, *rest = rest
    parsers = {"--set": helm.parse_set_string, "--set-string": helm.parse_set_string_values}
    for flag, value in itertools.pairwise([*rest, ""]):
        if flag in parsers:
            merge_values(command.values, parsers[flag](value))
        elif flag == "--namespace":
            command.namespace = value
    command.create_namespace = "--create-namespace" in rest
    command.wait = "--wait" in rest
    return command


def merge_values(into: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` merged into ``into`` as Helm merges values given twice (maps by key, the rest replaced)."""
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge_values(into[key], value)
        else:
            into[key] = value
    return into
