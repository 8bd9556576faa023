"""The demo's HTML report: self-contained, charts drawn from the model's real per-broker loads."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from kafka_balancer.model import ClusterBuilder, ClusterModel, PartitionTarget, ReassignmentPlan
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.planner import PlannerOptions, plan
from kafka_balancer.report import METRICS, broker_loads, planned, render_report, write_report

GB = 1e9
MB = 1e6


def skewed_cluster() -> ClusterModel:
    """Six brokers on three racks; the hot topic sits on brokers 1-3, brokers 5 and 6 are new."""
    builder = ClusterBuilder(cluster_name="demo <&> cluster", captured_at="2026-11-21T19:00:00Z")
    for broker, rack in ((1, "a"), (2, "b"), (3, "c"), (4, "a"), (5, "b"), (6, "c")):
        builder.add_broker(broker, rack=rack, disk_bytes=1000 * GB)
    for p in range(6):
        builder.add_partition(
            "hot",
            p,
            [1 + p % 3, 1 + (p + 1) % 3],
            size_bytes=40 * GB,
            bytes_in_per_sec=8 * MB,
            bytes_out_per_sec=20 * MB,
        )
    for p in range(4):
        builder.add_partition("cold", p, [4, 1 + p % 3], size_bytes=5 * GB, bytes_in_per_sec=1 * MB)
    return builder.build()


def balanced(model: ClusterModel) -> ClusterModel:
    """Spread every partition round-robin over all brokers (what a plan would do, done by hand here)."""
    brokers = model.num_brokers
    replicas = np.array(model.replicas)
    for p in range(model.num_partitions):
        replicas[p, 0] = p % brokers
        replicas[p, 1] = (p + 1 + p // brokers) % brokers
    return model.with_placement(replicas, replicas[:, 0].copy())


class _Collector(HTMLParser):
    """Collects tags and attributes and checks that every opened element is closed."""

    VOID = frozenset({"meta", "br", "img", "input", "link", "hr"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1]}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    collector.close()
    assert collector.stack == [], f"unclosed elements: {collector.stack}"
    return collector


def test_loads_follow_kafka_traffic_model() -> None:
    model = skewed_cluster()
    loads = broker_loads(model)
    assert loads.broker_ids == (1, 2, 3, 4, 5, 6)
    # hot-0 [1,2], hot-3 [1,2] lead on 1; hot-2 [3,1], hot-5 [3,1] follow on 1; cold-0 and cold-3 follow on 1.
    assert loads.metric("replicas")[0] == 6
    assert loads.metric("leaders")[0] == 2
    assert loads.metric("disk")[0] == pytest.approx(4 * 40 * GB + 2 * 5 * GB)
    assert loads.metric("network_in")[0] == pytest.approx(4 * 8 * MB + 2 * 1 * MB)
    # The leader sends consumers 20 MB/s and its one follower 8 MB/s per hot partition.
    assert loads.metric("network_out")[0] == pytest.approx(2 * (20 + 8) * MB)
    # Broker 4 leads all cold partitions (1 MB/s in, one follower each) and the new brokers carry nothing.
    assert loads.metric("network_out")[3] == pytest.approx(4 * 1 * MB)
    assert loads.metric("replicas")[4:] == (0.0, 0.0)
    # Totals are conserved: every replica is counted once.
    assert sum(loads.metric("replicas")) == model.num_replicas
    assert sum(loads.metric("disk")) == pytest.approx(float((model.size_bytes * model.replication_factor).sum()))
    with pytest.raises(KeyError, match="unknown report metric 'iops'"):
        loads.metric("iops")


def test_report_has_a_chart_per_metric_with_bars_matching_the_loads(tmp_path: Path) -> None:
    before = skewed_cluster()
    after = balanced(before)
    summary = {"moves": 9, "bytesMoved": 260 * GB, "leaderChanges": 4, "durationSeconds": 95.5, "proposal": "p-1"}
    path = write_report(tmp_path / "out" / "report.html", before, after, summary)
    html = path.read_text(encoding="utf-8")
    doc = parse(html)

    svgs = [attrs for tag, attrs in doc.elements if tag == "svg"]
    assert len(svgs) == len(METRICS) == 5
    titles = [a["aria-label"] for a in svgs]
    assert titles == [f"{name} per broker: before and after per broker" for _, name, _ in METRICS]

    bars = [a for tag, a in doc.elements if tag == "rect" and "bar" in (a.get("class") or "")]
    assert len(bars) == 5 * 2 * before.num_brokers
    expected_before, expected_after = broker_loads(before), broker_loads(after)
    for chart, (key, _, _) in enumerate(METRICS):
        chart_bars = bars[chart * 12 : (chart + 1) * 12]
        got_before = [float(b["data-value"] or "nan") for b in chart_bars if b["class"] == "bar before"]
        got_after = [float(b["data-value"] or "nan") for b in chart_bars if b["class"] == "bar after"]
        assert got_before == pytest.approx(expected_before.metric(key))
        assert got_after == pytest.approx(expected_after.metric(key))
        # Bar heights are proportional to the values (same scale inside one chart).
        heights = [float(b["height"] or 0) for b in chart_bars]
        values = [float(b["data-value"] or 0) for b in chart_bars]
        biggest = max(range(len(values)), key=values.__getitem__)
        for h, v in zip(heights, values, strict=True):
            assert h == pytest.approx(heights[biggest] * v / values[biggest], abs=0.11)

    # After balancing the new brokers carry replicas and the spread shrinks.
    assert expected_after.metric("replicas")[4] > 0
    text = " ".join(doc.text)
    assert "260.0 GB" in text
    assert "1 min 36 s" in text  # 95.5 s
    assert "p-1" in text  # other summary entries are listed too
    spread = re.findall(r"<tr><td class=\"l\">Replicas</td><td>([\d.]+)</td><td>([\d.]+)</td>", html)
    assert spread, "spread row for replicas missing"
    assert float(spread[0][1]) < float(spread[0][0])


def test_report_is_self_contained_and_escapes_names(tmp_path: Path) -> None:
    html = render_report(skewed_cluster(), balanced(skewed_cluster()), {"note": "<script>alert(1)</script>"})
    doc = parse(html)
    assert not any(tag in {"script", "link", "img", "iframe"} for tag, _ in doc.elements)
    # The only URL is the SVG namespace; nothing is fetched when the file opens.
    urls = set(re.findall(r"https?://[^\"' )]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "demo &lt;&amp;&gt; cluster" in html


def test_brokers_added_by_the_run_show_as_zero_before() -> None:
    before = skewed_cluster()
    builder = ClusterBuilder()
    for b in (1, 2, 7):
        builder.add_broker(b)
    builder.add_partition("t", 0, [7, 1], size_bytes=10)
    after = builder.build()
    html = render_report(before, after, {})
    row = re.search(r'<tr data-broker="7">(.*?)</tr>', html)
    assert row is not None
    cells = re.findall(r"<td>([^<]*)</td>", row.group(1))
    # disk before/after, network in before/after, ...: the before side of a new broker is "-".
    assert cells[0] == "-"
    assert cells[1] == "10 B"


def test_cordoned_brokers_are_marked_in_the_per_broker_table() -> None:
    builder = ClusterBuilder()
    builder.add_broker(1, log_dirs=(LogDir("/d0", cordoned=True), LogDir("/d1", cordoned=True)))
    builder.add_broker(2, log_dirs=(LogDir("/d0", cordoned=True), LogDir("/d1")))
    builder.add_broker(3, log_dirs=(LogDir("/d0"),))
    builder.add_broker(4)
    builder.add_partition("t", 0, [1, 2], size_bytes=10)
    model = builder.build()
    html = render_report(model, model, {})
    rows = {b: re.search(rf'<tr data-broker="{b}"><td class="l">(.*?)</td>', html) for b in (1, 2, 3, 4)}
    labels = {b: row.group(1) if row else "" for b, row in rows.items()}
    assert labels[1] == '1 <span class="cordoned">(cordoned)</span>'
    assert labels[2] == '2 <span class="cordoned">(1 of 2 log dirs cordoned)</span>'
    assert labels[3] == "3"
    assert labels[4] == "4"


def test_a_resource_without_data_says_so_instead_of_drawing_a_scale() -> None:
    """A snapshot read from Kafka without samples has no traffic: the network charts say "no data"."""
    builder = ClusterBuilder()
    for b in (1, 2):
        builder.add_broker(b)
    builder.add_partition("t", 0, [1, 2], size_bytes=1500)
    model = builder.build()
    html = render_report(model, model, {})
    svgs = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    no_data = [i for i, svg in enumerate(svgs) if 'class="no-data"' in svg]
    assert [METRICS[i][0] for i in no_data] == ["network_in", "network_out"]
    for i in no_data:
        assert re.findall(r'text-anchor="end">([^<]*)</text>', svgs[i]) == ["0 B/s"]  # the baseline only
    disk_ticks = re.findall(r'text-anchor="end">([^<]*)</text>', svgs[0])
    assert disk_ticks == ["0 B", "500 B", "1.0 KB", "1.5 KB", "2.0 KB"]


def test_write_report_replaces_the_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    write_report(target, skewed_cluster(), skewed_cluster(), {})
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_goals_from_the_planner_summary_get_their_own_table() -> None:
    summary = {
        "moves": 3,
        "goals": {
            "rack-awareness": {"holdsBefore": False, "holdsAfter": True, "before": 2, "after": 0},
            "disk-distribution": {"holdsBefore": False, "holdsAfter": True, "before": {"max/avg": 1.96}, "after": 1.04},
        },
    }
    html = render_report(skewed_cluster(), balanced(skewed_cluster()), summary)
    parse(html)
    row = re.search(r'<tr data-goal="rack-awareness">(.*?)</tr>', html)
    assert row is not None
    assert re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1)) == ["rack-awareness", "violated", "holds", "2", "0"]
    assert "max/avg 1.96" in html
    assert "goals.rack-awareness" not in html  # not repeated in the flat summary list


def test_report_of_a_real_proposal_shows_the_planned_cluster() -> None:
    """The planner's proposal, applied with ``planned``, is the "after" side; its summary fills the headline."""
    before = skewed_cluster()
    proposal = plan(before, PlannerOptions())
    after = planned(before, proposal.plan)
    for target in proposal.plan.partitions:
        p = after.partition_index(target.topic, target.partition)
        assert after.replica_ids(p) == target.replicas
        assert after.leader_id(p) == target.replicas[0]  # leadership follows the preferred leader
    html = render_report(before, after, proposal.summary)
    doc = parse(html)
    text = " ".join(doc.text)
    assert f"{proposal.summary['moves']} Replica moves" in text
    assert f"{proposal.summary['bytesToMove'] / GB:.1f} GB Bytes to move" in text
    assert f"{proposal.summary['leaderChanges']} Leader changes" in text
    goals = re.findall(r'<tr data-goal="([a-z-]+)">', html)
    assert sorted(goals) == sorted(proposal.summary["goals"])
    # Every resource is spread more evenly after the plan, as the report's spread table shows.
    for _, name, _ in METRICS:
        row = re.search(rf'<tr><td class="l">{name}</td><td>([\d.]+)</td><td>([\d.]+)</td>', html)
        assert row is not None, name
        assert float(row.group(2)) < float(row.group(1)), name
    bars = [a for tag, a in doc.elements if tag == "rect" and a.get("class") == "bar after"]
    assert [float(b["data-value"] or "nan") for b in bars[: before.num_brokers]] == pytest.approx(
        broker_loads(after).metric("disk")
    )


def test_planned_widens_for_a_higher_replication_factor_and_names_bad_entries() -> None:
    before = skewed_cluster()
    grown = planned(before, ReassignmentPlan.of([PartitionTarget("cold", 1, (5, 6, 4))]))
    p = grown.partition_index("cold", 1)
    assert grown.replica_ids(p) == (5, 6, 4)
    assert grown.num_replicas == before.num_replicas + 1
    untouched = grown.partition_index("hot", 0)
    assert grown.replica_ids(untouched) == before.replica_ids(untouched)
    assert grown.leader_id(untouched) == before.leader_id(untouched)
    with pytest.raises(ValueError, match=r"plan.partitions\[0\] \(cold-1, replicas \[9, 1\]\): unknown broker id 9"):
        planned(before, ReassignmentPlan.of([PartitionTarget("cold", 1, (9, 1))]))
    with pytest.raises(ValueError, match=r"unknown partition gone-0 in cluster 'demo <&> cluster'"):
        planned(before, ReassignmentPlan.of([PartitionTarget("gone", 0, (1, 2))]))


def _chromium() -> str | None:
    import shutil

    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.mark.slow
def test_report_renders_its_charts_in_headless_chromium(tmp_path: Path) -> None:
    assert _chromium() is not None, "needs headless Chromium: `make browser` installs Debian's chromium"
    import subprocess

    from kafka_balancer.report.svg import AFTER_COLOUR, BEFORE_COLOUR

    from .png import read_png

    report = write_report(tmp_path / "report.html", skewed_cluster(), balanced(skewed_cluster()), {"moves": 9})
    shot = tmp_path / "shot.png"
    profile = tmp_path / "profile"
    result = subprocess.run(
        [
            str(_chromium()), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            f"--screenshot={shot}", "--window-size=1400,420", report.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    pixels = read_png(shot)
    assert pixels.shape[:2] == (420, 1400)

    def count(colour: str) -> int:
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        return int((np.abs(pixels.astype(int) - rgb).sum(axis=2) <= 6).sum())

    # The first row of charts (disk, network in) is on screen: both series are painted as bars,
    # not just legend swatches (a swatch is 10x10 = 100 pixels per colour per chart).
    assert count(BEFORE_COLOUR) > 3000
    assert count(AFTER_COLOUR) > 3000
