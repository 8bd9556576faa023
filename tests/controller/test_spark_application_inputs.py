"""What a policy puts into a SparkApplication stays where it belongs (issue 37, item 13).

With ``spec.analysis.engine.type: sparkApplication`` the policy's sample store must be on the shared
volume the Spark pods mount; the check was lexical, so ``<mount>/samples/../../elsewhere`` passed and
the operator created directories outside the volume. The application's name is made from the policy's
name or the prefix in ``engine.url``: it must be a DNS-1123 label, which the Spark operator needs for
the driver's pod and Service names. No Spark runs here: every case is decided before submission.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import Cluster, Operator, policy_manifest, run_operator
from .test_spark_application_engine import CLAIM, SPARK, install_spark_operator_crd

pytestmark = pytest.mark.timeout(120)

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def _policy(name: str, bootstrap: str, samples: str, engine_url: str = "kafka") -> dict[str, Any]:
    analysis = {
        "samples": samples,
        "intervalSeconds": 1,
        "windowSeconds": 2,
        "engine": {"type": "sparkApplication", "url": engine_url},
    }
    return policy_manifest(name, {"cluster": {"bootstrapServers": bootstrap}, "mode": "DryRun", "analysis": analysis})


def _outcome(kube: Cluster, name: str) -> dict[str, Any] | None:
    """The Stalled condition, or ProposalReady=False once the application is submitted."""
    stalled = kube.condition(name, "Stalled")
    if stalled and stalled["status"] == "True":
        return stalled
    waiting = kube.condition(name, "ProposalReady")
    if waiting and waiting["status"] == "False" and waiting["reason"] == "SparkApplicationRunning":
        return waiting
    return None


def test_a_store_outside_the_volume_and_a_bad_name_are_refused_before_submission(
    kube: Cluster, emulator: Callable[..., EmulatedCluster], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    settings = {"image": "img", "volumeClaim": CLAIM, "mountPath": str(volume), "pollSeconds": 0.5}
    monkeypatch.setenv("KAFKA_BALANCER_SPARK_APPLICATION", json.dumps(settings))
    monkeypatch.setenv("KAFKA_BALANCER_SPARK_NAMESPACE", "kafka")
    install_spark_operator_crd(kube)
    clusters = [emulator(dataclasses.replace(six_broker_model(), cluster_name=f"c{i}")) for i in range(3)]
    escape = f"{volume}/samples/../../outside"  # lexically under the mount, really beside it
    with run_operator():
        kube.apply(_policy("escape", clusters[0].bootstrap_servers, escape))
        kube.apply(_policy("bad-prefix", clusters[1].bootstrap_servers, f"{volume}/b", engine_url="kafka/Bad_Prefix"))
        kube.apply(_policy("team.a", clusters[2].bootstrap_servers, f"{volume}/c"))
        outcomes = {n: kube.wait_for(n, lambda n=n: _outcome(kube, n)) for n in ("escape", "bad-prefix", "team.a")}
        group, version, plural = SPARK
        names = [a["metadata"]["name"] for a in kube.server.objects(plural, group=group, version=version)]

    assert outcomes["escape"]["reason"] == "InvalidSpec", outcomes["escape"]
    assert "spec.analysis.samples" in outcomes["escape"]["message"]
    assert str(tmp_path / "outside") in outcomes["escape"]["message"]
    assert not (tmp_path / "outside").exists(), "nothing is written outside the volume"
    assert outcomes["bad-prefix"]["reason"] == "InvalidSpec", outcomes["bad-prefix"]
    assert "spec.analysis.engine.url" in outcomes["bad-prefix"]["message"]
    assert "Bad_Prefix" in outcomes["bad-prefix"]["message"]
    # A policy name with a dot is a valid object name, not a valid label: the application's name is one.
    assert outcomes["team.a"]["reason"] == "SparkApplicationRunning", outcomes["team.a"]
    assert len(names) == 1, names
    assert names[0].startswith("team-a-"), names
    assert DNS_LABEL.match(names[0]), names


def test_the_emulated_api_server_refuses_an_invalid_object_name(kube: Cluster, operator: Operator) -> None:
    import kubernetes

    with pytest.raises(kubernetes.client.ApiException) as refused:
        kube.core.create_namespaced_config_map("kafka", {"metadata": {"name": "Not_A_Name"}, "data": {}})
    assert refused.value.status == 422
    assert "a lowercase RFC 1123 subdomain" in str(refused.value.body)
