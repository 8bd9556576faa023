"""The report's per-log-directory table (JBOD), as a user gets it: `kafka-balancer report` of a snapshot
with log directories and a reassignment JSON that names directories. Every figure below is worked out
by hand from the snapshot and the plan, not by the code under test."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.cli import main
from kafka_balancer.model import ClusterBuilder
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.report import render_report

from .test_report import parse

GB = 1e9

# Brokers 1 and 2 have two directories each (broker 2's /data/1 is cordoned), broker 3's are not known.
SNAPSHOT: dict[str, Any] = {
    "version": 1,
    "cluster": "jbod",
    "brokers": [
        {"id": 1, "logDirs": [{"path": "/data/0", "totalBytes": 55 * GB}, {"path": "/data/1", "totalBytes": 100 * GB}]},
        {
            "id": 2,
            "logDirs": [
                {"path": "/data/0", "totalBytes": 100 * GB},
                {"path": "/data/1", "cordoned": True, "totalBytes": 100 * GB},
            ],
        },
        {"id": 3},
    ],
    "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "logDirs": ["/data/0", "/data/0"], "sizeBytes": 30 * GB},
        {"topic": "t", "partition": 1, "replicas": [1, 2], "logDirs": ["/data/0", "/data/1"], "sizeBytes": 20 * GB},
        {"topic": "t", "partition": 2, "replicas": [1, 3], "logDirs": ["/data/1", None], "sizeBytes": 10 * GB},
    ],
}
PLAN = {
    "version": 1,
    "partitions": [
        # Broker 1 moves t-0 between its directories; broker 2 keeps it where it is.
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/data/1", "any"]},
        # Broker 2 receives t-2 with "any" (its directory is the broker's choice); broker 1 keeps its own.
        {"topic": "t", "partition": 2, "replicas": [2, 1]},
    ],
}

# (broker, directory) -> bytes before, bytes after; "" is the broker's row of replicas in no known directory.
BYTES = {
    (1, "/data/0"): (50 * GB, 20 * GB),  # t-0 30 + t-1 20, then t-1 alone
    (1, "/data/1"): (10 * GB, 40 * GB),  # t-2, then t-2 + t-0
    (2, "/data/0"): (30 * GB, 30 * GB),  # t-0
    (2, "/data/1"): (20 * GB, 20 * GB),  # t-1
    (2, ""): (None, 10 * GB),  # t-2, received with "any"
}
BROKER_BYTES = {1: (60 * GB, 60 * GB), 2: (50 * GB, 60 * GB)}
SIZES = {(1, "/data/0"): 55 * GB, (1, "/data/1"): 100 * GB, (2, "/data/0"): 100 * GB, (2, "/data/1"): 100 * GB}
# log-dir-distribution's targets (docs/goals.md, "Log directories"): broker 1's two open directories share
# its 60 GB by volume size, 55 : 100, before and after; broker 2 has one open directory (/data/1 is
# cordoned), so none of its is weighed. The band is widened by broker 1's largest replica, t-0's 30 GB.
TARGETS = {(1, "/data/0"): 60 * GB * 55 / 155, (1, "/data/1"): 60 * GB * 100 / 155}


def _rows(html: str) -> dict[tuple[int, str], dict[str, str]]:
    """Each directory row's cells by data-key (its data-value where it has one, else its text)."""
    table = re.search(r'<table class="log-dirs">(.*?)</table>', html, flags=re.S)
    assert table is not None, "no per-log-directory table"
    out = {}
    for broker, path, body in re.findall(r'<tr data-broker="(\d+)" data-log-dir="([^"]*)">(.*?)</tr>', table.group(1)):
        cells = dict(re.findall(r'<td data-key="([a-z-]+)"(?: data-value="([^"]*)")?', body))
        texts = re.findall(r"<td[^>]*>([^<]*)</td>", body)
        cells["cordoned"], cells["flagged"], cells["directory"] = texts[2], texts[-1], texts[1]
        out[(int(broker), path)] = cells
    return out


def _number(value: str) -> float | None:
    return float(value) if value else None


def test_the_report_of_a_plan_naming_directories_shows_every_directory_before_and_after(tmp_path: Path) -> None:
    (tmp_path / "before.json").write_text(json.dumps(SNAPSHOT))
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    out = tmp_path / "plan.html"
    args = ["report", "--before", str(tmp_path / "before.json"), "--plan", str(tmp_path / "plan.json")]
    assert main([*args, "--output", str(out)]) == 0
    html = out.read_text()
    parse(html)
    rows = _rows(html)
    assert list(rows) == list(BYTES)  # broker order, log.dirs order, the row of no directory last; none for 3

    for key, (before, after) in BYTES.items():
        cells = rows[key]
        broker_before, broker_after = BROKER_BYTES[key[0]]
        assert _number(cells["bytes-before"]) == before, key
        assert _number(cells["bytes-after"]) == after, key
        assert _number(cells["share-before"]) == pytest.approx(None if before is None else before / broker_before)
        assert _number(cells["share-after"]) == pytest.approx(after / broker_after)
        size = SIZES.get(key)
        assert _number(cells["size"]) == size
        if size is None:  # the row of no directory: no volume, no average to deviate from
            assert cells["directory"] == "not in a known directory"
            assert _number(cells["utilisation-after"]) is None
            assert _number(cells["deviation-after"]) is None
            continue
        assert _number(cells["utilisation-before"]) == pytest.approx(before / size)
        assert _number(cells["utilisation-after"]) == pytest.approx(after / size)
        target = TARGETS.get(key)
        if target is None:  # not weighed: no target to deviate from
            assert _number(cells["deviation-before"]) is None
            assert _number(cells["deviation-after"]) is None
            continue
        assert _number(cells["deviation-before"]) == pytest.approx(before / target - 1)
        assert _number(cells["deviation-after"]) == pytest.approx(after / target - 1)

    assert [rows[k]["cordoned"] for k in BYTES] == ["", "", "", "cordoned", ""]
    # 50/55 = 90.9% of /data/0 is over the default 80%. Broker 1 before: 50 GB against a target of
    # 21.3 (+134.8%) and 10 against 38.7 (-74.2%), inside the band 21.3 x 0.9 - 30 .. 21.3 x 1.1 + 30
    # (resp. 38.7 x ...): whole replicas of up to 30 GB fill no finer. After: 20 and 40, -6.1% and +3.3%.
    assert rows[(1, "/data/0")]["flagged"] == "before: over capacity"
    assert all(rows[k]["flagged"] == "" for k in BYTES if k != (1, "/data/0"))
    text = " ".join(parse(html).text)
    for shown in ("90.9%", "+134.8%", "-74.2%", "-6.1%", "+3.3%", "50.0 GB"):
        assert shown in text


def test_a_directory_outside_its_band_is_flagged(tmp_path: Path) -> None:
    """Ten 1 GB replicas of broker 1 in /a, none in /b: 10 GB against a target of 5 (+100%), above
    5 x 1.1 + 1 (the band widened by the broker's largest replica, 1 GB)."""
    builder = ClusterBuilder()
    builder.add_broker(1, log_dirs=(LogDir("/a", total_bytes=100 * GB), LogDir("/b", total_bytes=100 * GB)))
    for p in range(10):
        builder.add_partition("t", p, [1], size_bytes=GB, log_dirs=["/a"])
    model = builder.build()
    rows = _rows(render_report(model, model, {}))
    assert rows[(1, "/a")]["flagged"] == "before: outside band; after: outside band"
    assert rows[(1, "/b")]["flagged"] == "before: outside band; after: outside band"


def test_the_thresholds_flagged_against_are_the_users(tmp_path: Path) -> None:
    (tmp_path / "before.json").write_text(json.dumps(SNAPSHOT))
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    out = tmp_path / "plan.html"
    args = ["report", "--before", str(tmp_path / "before.json"), "--plan", str(tmp_path / "plan.json")]
    assert main([*args, "--output", str(out), "--capacity-threshold", "0.95", "--balance-threshold", "2.0"]) == 0
    rows = _rows(out.read_text())
    assert {key: row["flagged"] for key, row in rows.items() if row["flagged"]} == {}  # 90.9% < 95%, all within ±100%
    assert main([*args, "--output", str(out), "--capacity-threshold", "1.5"]) == 2


def test_no_directory_table_without_directories() -> None:
    builder = ClusterBuilder()
    for b in (1, 2):
        builder.add_broker(b)
    builder.add_partition("t", 0, [1, 2], size_bytes=10)
    model = builder.build()
    assert "log-dirs" not in render_report(model, model, {})

    builder = ClusterBuilder()
    builder.add_broker(1, log_dirs=(LogDir("/d0"), LogDir("/d1")))
    builder.add_broker(2)
    builder.add_partition("t", 0, [1, 2], size_bytes=10)
    rows = _rows(render_report(builder.build(), builder.build(), {}))
    # Broker 1's replica has no known directory (the snapshot gave none): counted, not dropped.
    assert {k: (v["bytes-before"], v["bytes-after"]) for k, v in rows.items()} == {
        (1, "/d0"): ("0.0", "0.0"),
        (1, "/d1"): ("0.0", "0.0"),
        (1, ""): ("10.0", "10.0"),
    }
