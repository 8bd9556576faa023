"""Fuzz every command's inputs: no traceback, exit 2 with one line, under 1 GiB, in bounded time (issue 37).

Hypothesis draws (a) the document a command reads, from a valid one broken at random places (numbers
beyond Kafka's types, NaN, wrong types, hostile names, deleted and unknown fields) or replaced by a
hostile shape (deep nesting, not UTF-8, truncated, YAML aliases, oversized, random bytes), and (b) the
values of each command's options. Every run is the real `main` in a child forked from a server that
imported the CLI once (tests/cli/forkserver.py), limited to 1 GiB of address space (RLIMIT_AS) and to
``CPU_SECONDS`` of CPU (RLIMIT_CPU), and killed after ``TIMEOUT`` seconds of wall time. The contract
checked for every run:

- no traceback, and no "internal error" (the top-level handler's words for a defect);
- exit 0 (the input was valid after all), 2 with exactly one line on stderr besides warnings, or 1 with
  one line only for commands that connect to the (dead) cluster or bind a (busy) port;
- finished within ``CPU_SECONDS`` of CPU and ``TIMEOUT`` of wall time (a killed child fails the test), and
  no MemoryError (that would be an "internal error, MemoryError": the input made the command reach beyond
  1 GiB). The work a command does is bounded in CPU seconds, which a busy machine does not inflate (a
  20-s wall-clock bound killed `plan` on one at load average 50); the wall-clock bound only catches a
  command that waits on nothing.

``CLI_FUZZ_EXAMPLES=2000 .venv/bin/pytest tests/cli/test_fuzz_cli.py`` draws more examples per test
(default 80), ``HYPOTHESIS_PROFILE=explore`` new ones.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_balancer.sandbox.ports import free_port

from cli.bounded import Run
from cli.documents import COMMAND_INPUTS, CommandInput, argv, valid, write_inputs
from cli.forked import ForkServer

EXAMPLES = int(os.environ.get("CLI_FUZZ_EXAMPLES", "80"))
CPU_SECONDS = 20  # CPU one command may use: an input that blows up the work uses all of it
# Wall time one command may take: a refused connection gives up after --request-timeout 1; only a command
# that waits on nothing takes long, whatever the load.
TIMEOUT = 300.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    fork_server = ForkServer(tmp_path_factory.mktemp("fuzz-out"), TIMEOUT, CPU_SECONDS)
    try:
        yield fork_server
    finally:
        fork_server.close()


@pytest.fixture(scope="module")
def fill(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        directory = tmp_path_factory.mktemp("fuzz-inputs")
        yield write_inputs(directory, dead_port=free_port(), busy_port=busy.getsockname()[1])


# Commands that connect to the cluster (nothing listens there) or bind ports (taken): exit 1 is theirs.
CONNECTS = {"execute", "stop", "sandbox", "sample", "snapshot"}


def check_contract(result: Run) -> None:
    command = result.argv[0]
    assert result.code != -signal.SIGXCPU, f"killed after {CPU_SECONDS} CPU seconds: {result}"
    assert result.code != -signal.SIGKILL, f"killed after {TIMEOUT:g} s: {result}"
    assert "Traceback" not in result.stderr, str(result)
    assert "internal error" not in result.stderr, str(result)
    if result.code == 0:
        return
    live = command in CONNECTS or (command in {"consumers", "audit"} and "--bootstrap-servers" in result.argv)
    assert result.code == 2 or (result.code == 1 and live), str(result)
    assert len(result.reasons) == 1, str(result)


# ----- documents ---------------------------------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    2**31, 2**63, 10**400, -1, -(2**63), 0, 1e308, -1e308, float("nan"), float("inf"), None, True, "", "x" * 300,
    "orders/eu", "..", "t" * 250, [], {}, [[[[[]]]]], [2**40], [1, 1], {"": None}, "\u0000", "ördners", 0.5,
]  # fmt: skip
hostile_value = st.one_of(
    st.sampled_from(HOSTILE_VALUES).map(copy.deepcopy),  # a copy: a later mutation may append to a drawn list
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=4),
)


def _containers(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of every value below the root."""
    children = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, child in children:
        yield (*path, key)
        yield from _containers(child, (*path, key))


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def broken_document(draw: st.DrawFn, kind: str) -> Any:
    """A valid document of ``kind`` with one to three values replaced, deleted or added."""
    doc = valid(kind)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_containers(doc))
        path = draw(st.sampled_from(paths)) if paths else ()
        if not path:
            return draw(hostile_value)
        parent, key = _at(doc, path[:-1]), path[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[key] = draw(hostile_value)
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "id", "partitions", "log_dirs", "isr", "leader"]))] = draw(
                hostile_value
            )
        else:
            parent.append(draw(hostile_value))
    return doc


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def _hostile_shapes(kind: str) -> st.SearchStrategy[bytes]:
    text = json.dumps(valid(kind)).encode()
    depth = st.sampled_from([65, 1000, 100_000])
    return st.one_of(
        depth.map(lambda n: b"[" * n + b"]" * n),
        depth.map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
        st.integers(1, len(text) - 1).map(lambda cut: text[:cut]),
        st.integers(0, len(text) - 1).map(lambda at: text[:at] + b"\xff\xfe" + text[at:]),
        st.sampled_from([b"", b" ", b"NaN", b"1e400", b'"text"', b"[]", b"null", LAUGHS.encode()]),
        st.sampled_from(
            [
                b"!!python/object/apply:os.system [true]",
                b"spec: {goals: {balanceThreshold: .nan}}",
                b"a: &x 1\nb: {<<: *x}",
                b"--- 1\n--- [\n",
                b"\t- x",
            ]
        ),
        st.just(b"# padding\n" * 400_000),  # 4 MB: over the manifest limit, a large comment-only JSON error
        st.binary(max_size=64),
    )


def document(kind: str) -> st.SearchStrategy[bytes]:
    broken = broken_document(kind).map(lambda doc: json.dumps(doc).encode())
    return st.one_of(broken, broken, _hostile_shapes(kind))


@pytest.mark.parametrize("command", COMMAND_INPUTS, ids=lambda c: c.name)
def test_every_document_a_command_reads(
    server: ForkServer, fill: dict[str, str], tmp_path: Path, command: CommandInput
) -> None:
    path = tmp_path / "input"

    @settings(
        max_examples=max(10, EXAMPLES // 5),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(data=document(command.kind))
    def one(data: bytes) -> None:
        path.write_bytes(data)
        check_contract(server.run(argv(command, path, fill)))

    one()


# ----- options -------------------------------------------------------------------------------------------------

NUMBER_TEXTS = ["0", "-1", "1", "3", "2147483648", "9223372036854775808", "1e400", "nan", "inf", "-inf", "1e308",
                "0.5", "x", "", "99999999999999999999999", "0x10", "1_000"]  # fmt: skip
number_text = st.one_of(st.sampled_from(NUMBER_TEXTS), st.integers().map(str), st.floats().map(str))
ids_text = st.one_of(st.sampled_from(["1,2", "1,,2", "-1", "2147483648", "1e3", "a,b", ""]), number_text)
names_text = st.one_of(st.sampled_from(["orders", "orders/eu", "..", "t" * 300, ",,", "ö"]), st.text(max_size=12))
duration_text = st.one_of(st.sampled_from(["1ms", "0", "-1s", "1e400", "nan", "x", "", "5m", "1.5h"]), number_text)
time_text = st.sampled_from(["now", "now-1h", "now-1e400d", "2026-13-40", "x", "", "now-99999999999999d"])


def _options(**choices: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """Some of the options, each with a drawn value."""
    pairs = [st.tuples(st.just(option.replace("_", "-")), values) for option, values in choices.items()]
    return st.lists(st.one_of(*pairs), min_size=1, max_size=4).map(lambda picked: [x for p in picked for x in p])


OPTIONS: dict[str, tuple[tuple[str, ...], st.SearchStrategy[list[str]]]] = {
    "plan": (
        ("plan", "--snapshot", "{snapshot}", "--output", "{dir}/out.json"),
        _options(
            __replication_factor=number_text,
            __brokers=ids_text,
            __target_brokers=ids_text,
            __topics=names_text,
            __operation=st.sampled_from(
                [
                    "rebalance",
                    "add-brokers",
                    "remove-brokers",
                    "demote-brokers",
                    "change-replication-factor",
                    "move-topics",
                    "x",
                ]
            ),
            __target_group=names_text,
        ),
    ),
    "execute": (
        (
            "execute",
            "--bootstrap-servers",
            "127.0.0.1:{dead}",
            "--plan",
            "{plan}",
            "--state",
            "{dir}/st.json",
            "--quiet",
            "--request-timeout",
            "1",
        ),
        _options(
            __throttle=st.one_of(number_text.map(lambda n: n + "MiB/s"), number_text),
            __max_bytes_per_run=st.one_of(number_text.map(lambda n: n + "GB"), number_text),
            __concurrent_moves_per_broker=number_text,
            __concurrent_moves_total=number_text,
            __poll_interval=number_text,
            __stuck_after=number_text,
            __give_up_blocked_after=number_text,
            __request_timeout=st.sampled_from(["0", "-1", "nan", "inf", "1e400", "x", "0.5"]),
        ),
    ),
    "stop": (
        ("stop", "--state", "{dir}/none.json", "--bootstrap-servers", "127.0.0.1:{dead}"),
        _options(__timeout=number_text, __request_timeout=number_text),
    ),
    "audit": (("audit", "--snapshot", "{snapshot}"), _options(__default_min_insync_replicas=number_text)),
    "consumers simulate": (
        ("consumers", "simulate", "--group", "{group}"),
        _options(__max_leavers=number_text, __new_member=names_text),
    ),
    "consumers": (
        ("consumers", "--bootstrap-servers", "127.0.0.1:{dead}", "--request-timeout", "1"),
        _options(__top=number_text, __spark_threshold=number_text),
    ),
    "sandbox": (
        ("sandbox", "--snapshot", "{snapshot}"),
        _options(
            __port_base=st.sampled_from(["0", "-1", "65534", "65535", "65536", "99999999999", "x", "nan", "{busy}"]),
            __time_scale=number_text,
        ),
    ),
    "analyze": (
        ("analyze", "--samples", "{dir}/samples", "--output", "{dir}/a.json"),
        _options(
            __from=time_text,
            __to=time_text,
            __window=duration_text,
            __min_windows=number_text,
            __min_completeness=number_text,
            __group=st.sampled_from(["a=1,2", "=1", "a=", "a=x", "a=2147483648", "a"]),
        ),
    ),
    "sample": (
        (
            "sample",
            "--bootstrap-servers",
            "127.0.0.1:{dead}",
            "--samples",
            "{dir}/samples",
            "--count",
            "1",
            "--request-timeout",
            "1",
        ),
        _options(
            __interval=st.sampled_from(["0", "-1s", "1e400", "nan", "x", "", "1ms"]),
            __retention=duration_text,
            __count=st.sampled_from(["0", "-1", "x", "nan", "2147483648", "1"]),
        ),
    ),
}


@pytest.mark.parametrize("command", OPTIONS)
def test_every_option_value(server: ForkServer, fill: dict[str, str], command: str) -> None:
    base, options = OPTIONS[command]
    group = Path(fill["dir"]) / "group.json"
    group.write_text(json.dumps(valid("group")))
    fill = fill | {"group": str(group)}

    @settings(max_examples=max(10, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(chosen=options)
    def one(chosen: list[str]) -> None:
        args = [part.format(**fill) for part in base] + [fill["busy"] if v == "{busy}" else v for v in chosen]
        if "--port-base" not in args and command == "sandbox":
            args += ["--port-base", fill["busy"]]
        check_contract(server.run(args))

    one()
