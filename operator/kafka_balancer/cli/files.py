"""The files commands read and write: a bounded size, refused in one line naming the option and the file.

Decoding (UTF-8, JSON or YAML, nesting, aliases) is the model's (kafka_balancer.model.documents);
this is only the reading, which the model does not do.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from kafka_balancer.cli import CommandError
from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.documents import loads_json
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.snapshot import loads_snapshot
from kafka_balancer.model.suspicious import suspicious

MAX_INPUT_BYTES = 1 << 30  # 1 GiB: a snapshot of about 4 million partitions
_CHUNK = 1 << 20


def read_input(path: str | Path, option: str, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file ``option`` names; a directory, a missing file or one over ``limit`` is refused."""
    try:
        with open(path, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # a pipe is fine: /dev/stdin, <(...)
                raise CommandError(f"{option} {path}: not a regular file")
            chunks, size = [], 0
            while chunk := file.read(_CHUNK):  # not read(limit): that reserves the whole limit at once
                size += len(chunk)
                if size > limit:
                    raise CommandError(f"{option} {path}: larger than the {limit >> 20} MiB accepted")
                chunks.append(chunk)
    except IsADirectoryError:
        raise CommandError(f"{option} {path}: is a directory, not a file") from None
    except OSError as err:
        raise CommandError(f"{option} {path}: cannot read: {err.strerror or err}") from None
    return b"".join(chunks)


def read_json(path: str | Path, option: str, *, limit: int = MAX_INPUT_BYTES) -> Any:
    """A JSON document from the file ``option`` names (model rules: UTF-8, bounded nesting)."""
    return loads_json(read_input(path, option, limit=limit), f"{option} {path}")


def write_output(path: str | Path, text: str, option: str) -> None:
    """Write what a command produced to the file ``option`` names; refused in one line when it cannot be."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as err:
        raise CommandError(f"{option} {path}: cannot write: {err.strerror or err}") from None


def load_snapshot(path: str | Path, option: str, command: str) -> ClusterModel:
    """The cluster snapshot in the file ``option`` names; what looks wrong in it is printed as a warning."""
    try:
        model = loads_snapshot(read_input(path, option))
    except ModelError as err:
        raise ModelError(f"{option} {path}: {err}") from None
    for warning in suspicious(model):
        print(f"{command}: warning: {option} {path}: {warning}", file=sys.stderr)
    return model
