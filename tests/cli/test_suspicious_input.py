"""Input Kafka forbids is refused, naming the field and the value; input Kafka allows but that is almost
certainly a mistake is warned about (issue 37, item 16). Each command runs as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.bounded import refused, run
from cli.documents import valid


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("orders/eu", "'orders/eu'"),
        ("orders eu", "'orders eu'"),
        ("..", "'..'"),
        ("t" * 250, "250 characters"),
        ("ördners", "'ördners'"),
    ],
)
def test_topic_names_kafka_forbids_are_refused(tmp_path: Path, name: str, shown: str) -> None:
    """Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], not "." or "..": in a snapshot, a plan, a group."""
    snapshot = valid("snapshot")
    snapshot["partitions"][2]["topic"] = name
    out = tmp_path / "out.json"
    refused(run("plan", "--snapshot", _write(tmp_path / "s.json", snapshot), "--output", out), "topic", shown)
    plan = {"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": [1, 2]}]}
    plan_file = _write(tmp_path / "p.json", plan)
    refused(run("report", "--before", _write(tmp_path / "ok.json", valid("snapshot")), "--plan", plan_file,
                "--output", tmp_path / "r.html"), "topic", shown)  # fmt: skip
    group = valid("group")
    group["topics"][name] = 1
    refused(run("consumers", "simulate", "--group", _write(tmp_path / "g.json", group)), "topics", shown)


def test_a_topic_listed_twice_is_refused(tmp_path: Path) -> None:
    snapshot = valid("snapshot")
    snapshot["topics"].append({"name": "orders", "minInsyncReplicas": 2})
    refused(run("audit", "--snapshot", _write(tmp_path / "s.json", snapshot)), "'orders'", "twice")


def test_an_empty_isr_with_a_leader_is_refused(tmp_path: Path) -> None:
    """Kafka's leader is always in the ISR: an empty ISR with a leader is no state Kafka reports."""
    snapshot = valid("snapshot")
    snapshot["partitions"][0] |= {"leader": 1, "isr": []}
    refused(run("audit", "--snapshot", _write(tmp_path / "s.json", snapshot)), "orders-0", "'isr'", "'leader' is 1")


def test_every_partition_leaderless_is_warned_about(tmp_path: Path) -> None:
    """Legal (the whole cluster was down), but a plan from that moment is not what anyone means."""
    snapshot = valid("snapshot")
    for partition in snapshot["partitions"]:
        partition |= {"leader": None, "isr": []}
    path = _write(tmp_path / "s.json", snapshot)
    result = run("plan", "--snapshot", path, "--output", tmp_path / "plan.json")
    assert result.code == 0, str(result)
    assert result.lines == [f"plan: warning: --snapshot {path}: every partition (3) has no leader: the snapshot "
                            "shows a cluster that served nothing when it was taken"], str(result)  # fmt: skip
    snapshot["partitions"][0] |= {"leader": 1, "isr": [1]}
    result = run("plan", "--snapshot", _write(tmp_path / "s.json", snapshot), "--output", tmp_path / "plan.json")
    assert result.code == 0, str(result)
    assert not result.lines, str(result)


@pytest.mark.parametrize(
    ("log_dirs", "words"),
    [
        (["data/a", "any"], ["log_dirs", "'data/a'", '"any" or an absolute path']),
        (["any"], ["log_dirs", "one entry per replica"]),
        (["/data/a", "any"], ["log_dirs", "'/data/a' for broker 2", "its log directories are not known"]),
    ],
)
def test_log_dirs_that_cannot_be_applied_are_refused(tmp_path: Path, log_dirs: list[str], words: list[str]) -> None:
    """kafka-reassign-partitions.sh's log_dirs: "any" or an absolute path per replica, and a named one must
    be one of the broker's log directories. The form is refused by execute before it connects (nothing
    listens on the port); report checks the directories against the snapshot (which names none here)."""
    plan = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3], "log_dirs": log_dirs}]}
    path = _write(tmp_path / "p.json", plan)
    if not log_dirs[0].startswith("/"):
        result = run("execute", "--bootstrap-servers", "127.0.0.1:1", "--plan", path, "--state", tmp_path / "st.json")
        refused(result, *words)
    refused(run("report", "--before", _write(tmp_path / "s.json", valid("snapshot")), "--plan", path, "--output",
                tmp_path / "r.html"), *words)  # fmt: skip
    plan["partitions"][0]["log_dirs"] = ["any", "any"]
    result = run("report", "--before", tmp_path / "s.json", "--plan", _write(tmp_path / "p.json", plan), "--output",
                 tmp_path / "r.html")  # fmt: skip
    assert result.code == 0, str(result)


def test_two_members_owning_one_partition_are_warned_about(tmp_path: Path) -> None:
    """Kafka allows it (a member on an older generation; the sticky assignors then give the partition to
    neither first), so the what-if runs, with a warning naming the partition and both members."""
    group = valid("group")
    group["members"][1]["assignment"] = {"t0": [1, 2]}
    path = _write(tmp_path / "g.json", group)
    result = run("consumers", "simulate", "--group", path)
    assert result.code == 0, str(result)
    assert result.lines == [f"consumers: warning: --group {path}: partition t0-1 is in the 'assignment' of both "
                            "'C0' and 'C1' (the sticky assignors give it to neither first)"], str(result)  # fmt: skip


@pytest.mark.parametrize("rate", ["9223372036854775808", "8EiB/s", "1e30MB/s", "nan", "10000000TiB/s"])
def test_a_throttle_beyond_kafkas_long_is_refused(tmp_path: Path, rate: str) -> None:
    """The throttle rate is a LONG broker config: a larger one would be refused by the broker mid-run."""
    plan = _write(tmp_path / "p.json", valid("plan"))
    result = run("execute", "--bootstrap-servers", "127.0.0.1:1", "--plan", plan, "--throttle", rate)
    refused(result, "--throttle", rate)
