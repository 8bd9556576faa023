"""`kafka-balancer consumers simulate --group G.json`, run as a user runs it (the console script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ISSUE_EXAMPLE = {
    "topics": {"t0": 4, "t1": 4},
    "members": [
        {"id": "C0", "topics": ["t0", "t1"], "assignment": {"t0": [0, 1]}},
        {"id": "C1", "topics": ["t0", "t1"]},
        {"id": "C2", "topics": ["t0", "t1"]},
    ],
}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "kafka-balancer"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120, check=False)


def test_simulate_json_has_every_assignor(tmp_path: Path) -> None:
    path = tmp_path / "G.json"
    path.write_text(json.dumps(ISSUE_EXAMPLE), encoding="utf-8")
    done = run_cli("consumers", "simulate", "--group", str(path), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert list(doc["assignors"]) == ["range", "roundrobin", "sticky", "cooperative-sticky"]
    assert doc["assignors"]["range"]["assignment"] == {
        "C0": {"t0": [0, 1], "t1": [0, 1]},
        "C1": {"t0": [2], "t1": [2]},
        "C2": {"t0": [3], "t1": [3]},
    }
    # Sticky starts from the current assignment: C0 keeps t0-0 and t0-1.
    assert doc["assignors"]["sticky"]["assignment"]["C0"]["t0"] == [0, 1]
    for name, result in doc["assignors"].items():
        assert set(result["churnIfMemberLeaves"]) == {"C0", "C1", "C2"}, name
        assert result["balance"]["maxPartitions"] >= result["balance"]["minPartitions"]
    assert doc["recommendation"]["assignor"] == "cooperative-sticky"


def test_simulate_table(tmp_path: Path) -> None:
    path = tmp_path / "G.json"
    path.write_text(json.dumps(ISSUE_EXAMPLE), encoding="utf-8")
    done = run_cli("consumers", "simulate", "--group", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["ASSIGNOR", "IMBALANCE", "MAX/MIN"]
    assert lines[1].split()[:3] == ["range", "1.50", "4/2"]
    assert "  C0: t0:0,1 t1:0,1" in lines
    assert lines[-1].startswith("recommended: cooperative-sticky")
    assert not any(line.startswith("leave churn:") for line in lines)

    done = run_cli("consumers", "simulate", "--group", str(path), "--max-leavers", "2")
    assert done.returncode == 0, done.stderr
    assert "leave churn: 2 of 3 members simulated (--max-leavers)" in done.stdout.splitlines()


def test_simulate_bad_file_names_member_and_field(tmp_path: Path) -> None:
    path = tmp_path / "G.json"
    path.write_text(json.dumps({"topics": {"t0": 2}, "members": [{"id": "C0", "topics": "t0"}]}), encoding="utf-8")
    done = run_cli("consumers", "simulate", "--group", str(path))
    assert done.returncode != 0
    assert "members[0] ('C0'): field 'topics' must be a non-empty list of topic names, got 't0'" in done.stderr
    done = run_cli("consumers", "simulate", "--group", str(tmp_path / "missing.json"))
    assert done.returncode != 0
    assert "cannot read" in done.stderr
    done = run_cli("consumers", "--group", str(path))  # forgot `simulate`
    assert done.returncode != 0
    assert "is for the offline what-if: `consumers simulate --group`" in done.stderr


def test_simulate_refuses_a_group_too_large_to_simulate_before_allocating(tmp_path: Path) -> None:
    # 10^9 partitions in a 100-byte file: refused with the size and the limit named, before a
    # partition is materialised (the run took 2.8 GB and did not end before the limit existed).
    path = tmp_path / "G.json"
    huge = {"topics": {"t0": 999_999_999, "t1": 1}, "members": [{"id": "C0", "topics": ["t0", "t1"]}]}
    path.write_text(json.dumps(huge), encoding="utf-8")
    done = run_cli("consumers", "simulate", "--group", str(path))
    assert done.returncode != 0
    assert "1,000,000,000 partitions in total" in done.stderr
    assert "above the 1,000,000" in done.stderr
    assert "Traceback" not in done.stderr


def test_simulate_refuses_more_work_than_a_simulation_may_take(tmp_path: Path) -> None:
    # The review's 20,000 members (issue 55), every one simulated leaving: 20,002 runs of each assignor,
    # hours of CPU. Refused before any assignor runs, in one line naming the members, the leavers, the
    # partitions and the limit, with the exit status of bad input.
    path = tmp_path / "G.json"
    group = {"topics": {"t0": 1000}, "members": [{"id": f"C{i}", "topics": ["t0"]} for i in range(20_000)]}
    path.write_text(json.dumps(group), encoding="utf-8")
    done = run_cli("consumers", "simulate", "--group", str(path), "--max-leavers", "0")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"consumers: simulate: --group {path}: group: field 'members' has 20,000 members; 20,000 of them leaving "
        "over 1,000 partitions is 2,020,202,000 partition-rounds of work, above the 60,000,000 a simulation may "
        'take (docs/consumers.md, "Limits"); simulate fewer leavers (--max-leavers)'
    ]
    assert done.stdout == ""


def test_simulate_refuses_a_new_member_id_already_in_the_group(tmp_path: Path) -> None:
    path = tmp_path / "G.json"
    path.write_text(json.dumps(ISSUE_EXAMPLE), encoding="utf-8")
    done = run_cli("consumers", "simulate", "--group", str(path), "--new-member", "C1")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "consumers: simulate: --new-member C1: new member id 'C1' is already a member; pick another\n"
    )
