"""Every command ends in one line and exit 2 on bad input, 1 when the cluster or the machine fails, and
never in a traceback (issue 37, item 15). Each command runs as a user runs it, in a process limited to
1 GiB of address space (tests/cli/bounded.py)."""

from __future__ import annotations

import base64
import json
import socket
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.sandbox.ports import free_port

from cli.bounded import refused, run
from cli.documents import COMMAND_INPUTS, POLICY, STATE, CommandInput, argv, valid, write_inputs

INT32_MAX = 2**31 - 1


@pytest.fixture
def fill(tmp_path: Path) -> Iterator[dict[str, str]]:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield write_inputs(tmp_path / "inputs", dead_port=free_port(), busy_port=busy.getsockname()[1])


@pytest.fixture
def witness() -> Iterator[socket.socket]:
    """A listening port that tells whether anything connected to it: the kernel completes a client's
    handshake without accept(), so a connection made at any time is waiting there afterwards."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.setblocking(False)
        yield sock


def _connected(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _write(path: Path, doc: Any) -> Path:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _inputs(kind: str) -> list[CommandInput]:
    return [c for c in COMMAND_INPUTS if c.kind == kind]


# ----- numbers beyond Kafka's types -----------------------------------------------------------------------


def _snapshot_with(change: str) -> dict[str, Any]:
    doc = valid("snapshot")
    if change == "broker id":
        doc["brokers"][0]["id"] = INT32_MAX + 1
        doc["partitions"][0] |= {"replicas": [INT32_MAX + 1, 2], "leader": INT32_MAX + 1, "isr": [INT32_MAX + 1, 2]}
    elif change == "partition id":
        doc["partitions"][0]["partition"] = 2**40
    elif change == "minInsyncReplicas":
        doc["topics"][0]["minInsyncReplicas"] = 2**40
    elif change == "sizeBytes 10^400":
        doc["partitions"][0]["sizeBytes"] = 10**400
    elif change == "sizeBytes 1e308":
        doc["partitions"][0]["sizeBytes"] = 1e308
        doc["partitions"][1]["sizeBytes"] = 1e308
    elif change == "bytesInPerSec 1e400":
        return json.dumps(doc).replace('"bytesInPerSec": 5.5', '"bytesInPerSec": 1e400')  # type: ignore[return-value]
    elif change == "diskBytes 1e308":
        doc["brokers"][0]["capacity"]["diskBytes"] = 1e308
    return doc


SNAPSHOT_CHANGES = {
    "broker id": "id",
    "partition id": "partition",
    "minInsyncReplicas": "minInsyncReplicas",
    "sizeBytes 10^400": "sizeBytes",
    "sizeBytes 1e308": "sizeBytes",
    "bytesInPerSec 1e400": "bytesInPerSec",
    "diskBytes 1e308": "diskBytes",
}


@pytest.mark.parametrize("change", SNAPSHOT_CHANGES)
@pytest.mark.parametrize("command", ["plan --snapshot", "audit --snapshot", "report --before"])
def test_numbers_beyond_kafkas_types_in_a_snapshot_are_refused(
    tmp_path: Path, fill: dict[str, str], command: str, change: str
) -> None:
    """Ids and counts are Kafka INT32s, sizes and rates finite and within a LONG: beyond them numpy overflowed
    (a traceback) or sums became inf and NaN (a plan from garbage)."""
    snapshot = _write(tmp_path / "s.json", _snapshot_with(change))
    (chosen,) = [c for c in COMMAND_INPUTS if c.name == command]
    refused(run(*argv(chosen, snapshot, fill)), SNAPSHOT_CHANGES[change])


@pytest.mark.parametrize(
    ("name", "doc", "field"),
    [
        ("replica id", {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2**40]}]}, "replicas"),
        ("partition", {"version": 1, "partitions": [{"topic": "t", "partition": 2**31, "replicas": [1]}]}, "partition"),
    ],
)
def test_numbers_beyond_int32_in_a_plan_are_refused(
    tmp_path: Path, fill: dict[str, str], name: str, doc: dict[str, Any], field: str
) -> None:
    plan = _write(tmp_path / "plan.json", doc)
    for command in _inputs("plan"):
        refused(run(*argv(command, plan, fill)), field)


@pytest.mark.parametrize(
    ("options", "word"),
    [
        (["--operation", "change-replication-factor", "--topics", "orders", "--replication-factor", str(2**40)],
         "--replication-factor"),
        (["--operation", "remove-brokers", "--brokers", str(2**40)], "--brokers"),
    ],
)  # fmt: skip
def test_plan_options_beyond_int32_are_refused(fill: dict[str, str], options: list[str], word: str) -> None:
    refused(run("plan", "--snapshot", fill["snapshot"], "--output", f"{fill['dir']}/o.json", *options), word)


def test_consumer_group_numbers_beyond_range_are_refused(tmp_path: Path) -> None:
    group = valid("group")
    group["topics"]["t1"] = 2**40
    refused(run("consumers", "simulate", "--group", _write(tmp_path / "g.json", group)), "partitions")
    group = valid("group")
    group["lag"]["t1"] = [1e308, 1e308]
    refused(run("consumers", "simulate", "--group", _write(tmp_path / "g.json", group)), "lag")


def test_analyze_capacity_beyond_range_is_refused(tmp_path: Path, fill: dict[str, str]) -> None:
    capacity = valid("capacity")
    capacity["brokers"] = {str(2**40): {"diskBytes": 1}}
    (command,) = _inputs("capacity")
    refused(run(*argv(command, _write(tmp_path / "c.json", capacity), fill)), "capacity")
    capacity = valid("capacity")
    capacity["default"]["diskBytes"] = 1e308
    refused(run(*argv(command, _write(tmp_path / "c.json", capacity), fill)), "diskBytes")


# ----- documents no parser should take ---------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMAND_INPUTS, ids=lambda c: c.name)
def test_deeply_nested_json_is_refused_by_every_command(
    tmp_path: Path, fill: dict[str, str], command: CommandInput
) -> None:
    """100,000 nested arrays: a RecursionError traceback in every command that read JSON."""
    deep = tmp_path / "deep"
    if command.kind == "policy":
        _write(deep, "a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    else:
        _write(deep, "[" * 100_000 + "]" * 100_000)
    refused(run(*argv(command, deep, fill)), "nested")


@pytest.mark.parametrize("command", COMMAND_INPUTS, ids=lambda c: c.name)
def test_a_file_that_is_not_utf8_is_refused_by_every_command(
    tmp_path: Path, fill: dict[str, str], command: CommandInput
) -> None:
    text = POLICY if command.kind == "policy" else json.dumps(valid(command.kind))
    bad = tmp_path / "latin1"
    bad.write_bytes(text.encode().replace(b"orders" if b"orders" in text.encode() else b"a", b"\xff\xfe", 1))
    refused(run(*argv(command, bad, fill)), "UTF-8", str(bad))


def test_a_missing_or_unreadable_file_is_refused(tmp_path: Path, fill: dict[str, str]) -> None:
    for command in COMMAND_INPUTS:
        if command.kind != "state":  # a state file that does not exist yet is a new execution
            refused(run(*argv(command, tmp_path / "missing.json", fill)), "missing.json")
    refused(run(*argv(COMMAND_INPUTS[0], tmp_path, fill)), "directory")


def test_output_that_cannot_be_written_is_refused(tmp_path: Path, fill: dict[str, str]) -> None:
    refused(run("plan", "--snapshot", fill["snapshot"], "--output", tmp_path / "no" / "plan.json"), "--output")
    refused(run("crds", tmp_path / "file" / "crds", "--docs", tmp_path / "no" / "crds.md"), "crds.md")


# ----- YAML --------------------------------------------------------------------------------------------------

LAUGHS = """\
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancePolicy
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
metadata: {name: *i}
spec: {cluster: {bootstrapServers: "kafka:9092"}}
"""


@pytest.mark.parametrize("option", ["--policy", "--resource-groups"])
def test_yaml_aliases_are_refused(tmp_path: Path, fill: dict[str, str], option: str) -> None:
    """Nested aliases ("billion laughs") in metadata.name grew to 4.6 GB while the error message was built."""
    (command,) = [c for c in COMMAND_INPUTS if c.name == f"plan {option}"]
    result = run(*argv(command, _write(tmp_path / "laughs.yaml", LAUGHS), fill), timeout=60)
    refused(result, "alias", "line 4")


def test_oversized_yaml_is_refused(tmp_path: Path, fill: dict[str, str]) -> None:
    big = POLICY + "".join(f"# {'x' * 100}\n" for _ in range(40_000))
    (command,) = [c for c in COMMAND_INPUTS if c.name == "plan --policy"]
    refused(run(*argv(command, _write(tmp_path / "big.yaml", big), fill)), "MiB")


# ----- the execution state file ------------------------------------------------------------------------------


def _packed(letters: bytes, repeat: int) -> str:
    squeeze = zlib.compressobj(9)
    body = b"".join(squeeze.compress(letters) for _ in range(repeat)) + squeeze.flush()
    return "z:" + base64.b64encode(body).decode()


CORRUPT_STATES: dict[str, tuple[Any, str]] = {
    "truncated": (json.dumps(STATE)[:100], "JSON"),
    "deadReasons a string": ({**STATE, "deadReasons": "x"}, "deadReasons"),
    "startedAt a word": ({**STATE, "startedAt": "yesterday"}, "startedAt"),
    "bytesDone NaN": (json.dumps({**STATE, "bytesDone": 1}).replace('"bytesDone": 1', '"bytesDone": NaN'), "NaN"),
    "context a list": ({**STATE, "context": [1, 2]}, "context"),
    "throttle topics a number": ({**STATE, "throttles": {"topics": 5}}, "throttles"),
    "created a list of numbers": ({**STATE, "throttles": {"created": {"t": 5}}}, "throttles"),
    "retired entries a number": ({**STATE, "throttles": {"retired": {"t": {"k": 5}}}}, "throttles.retired.t"),
    "in-flight partition 2^40": ({**STATE, "inFlight": [["orders", 2**40, 1.0, [1], [2], 0]]}, "inFlight"),
    "run length of 4e12 tasks": ({**STATE, "tasks": "p4000000000000"}, "tasks"),
    "packed to 1 GiB": ({**STATE, "tasks": _packed(b"p" * (1 << 20), 1 << 10)}, "tasks"),
}


@pytest.mark.parametrize("corruption", CORRUPT_STATES)
@pytest.mark.parametrize("command", ["stop --state", "execute --state"])
def test_a_corrupted_state_file_is_refused_before_anything_is_sent(
    tmp_path: Path, fill: dict[str, str], witness: socket.socket, command: str, corruption: str
) -> None:
    """`stop` and `execute` read the record before they connect: a broken one is named, nothing is sent (the
    cluster's address, the command line's or the record's, is a port that tells whether anything connected),
    and nothing decompresses to gigabytes."""
    doc, word = CORRUPT_STATES[corruption]
    address = f"127.0.0.1:{witness.getsockname()[1]}"
    text = doc if isinstance(doc, str) else json.dumps(doc)
    state = _write(tmp_path / "state.json", text.replace('"127.0.0.1:1"', f'"{address}"'))
    (chosen,) = [c for c in COMMAND_INPUTS if c.name == command]
    result = run(*argv(chosen, state, {**fill, "dead": address.rsplit(":", 1)[1]}), timeout=60)
    refused(result, word, "state")
    assert not _connected(witness), f"{result}: connected to the cluster"


# ----- options and the environment ---------------------------------------------------------------------------


def test_argparse_usage_errors_are_one_line() -> None:
    refused(run("plan"), "--snapshot")
    refused(run("no-such-command"), "no-such-command")
    refused(run("execute", "--plan", "p.json", "--concurrent-moves-total", "many"), "many")
    refused(run("sandbox", "--snapshot", "s.json", "--port-base", "x"), "--port-base")


def test_sandbox_ports_beyond_65535_are_refused(fill: dict[str, str]) -> None:
    """Three brokers from 65534 need ports 65534..65536: an OverflowError traceback from bind()."""
    refused(run("sandbox", "--snapshot", fill["snapshot"], "--port-base", "65534"), "65536")
    refused(run("sandbox", "--real", "--brokers", "3", "--port-base", "65534"), "65535")


def test_an_unreachable_bootstrap_server_ends_in_one_line_and_exit_1(tmp_path: Path, fill: dict[str, str]) -> None:
    """Nothing listens on the port: every command that talks to the cluster says so in one line and exits 1
    (the cluster failed, not the input), librdkafka's own log lines included."""
    dead = f"127.0.0.1:{fill['dead']}"
    commands = [
        ("snapshot", "--bootstrap-servers", dead, "--output", tmp_path / "s.json"),
        ("audit", "--bootstrap-servers", dead),
        ("sample", "--bootstrap-servers", dead, "--samples", tmp_path / "samples", "--count", "1"),
        ("execute", "--bootstrap-servers", dead, "--plan", fill["plan"], "--state", tmp_path / "st.json", "--quiet"),
    ]
    for argv_ in commands:
        # The bound is the request timeout's: the command gives up after 2 s of it (and its start); one that
        # ignored --request-timeout would wait the default 30 s per request and be killed at 25 s.
        result = run(*argv_, "--request-timeout", "2", timeout=25)
        refused(result, dead, code=1)


@pytest.mark.parametrize("metadata", ["2147483648", "[a, b]", "x"])
def test_a_manifest_whose_metadata_is_not_an_object_is_refused(
    tmp_path: Path, fill: dict[str, str], metadata: str
) -> None:
    """Found by the fuzz test: an AttributeError while the error message was being built."""
    policy = POLICY.replace("metadata: {name: balance, namespace: kafka}", f"metadata: {metadata}")
    (command,) = [c for c in COMMAND_INPUTS if c.name == "plan --policy"]
    refused(run(*argv(command, _write(tmp_path / "p.yaml", policy), fill)), "metadata")
