"""Static checks of the Dockerfile: what a reviewer would check by eye. tests/image runs the image
`make image` builds from it."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
VALUES = yaml.safe_load((REPO / "charts" / "kafka-balancer" / "values.yaml").read_text())


@dataclass(frozen=True)
class Instruction:
    keyword: str
    value: str
    stage: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with line continuations joined and comments dropped, tagged with their stage."""
    joined = re.sub(r"\\\n", " ", text)
    out, stage = [], -1
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, value = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append(Instruction(keyword, value.strip(), stage))
    return out


INSTRUCTIONS = parse_dockerfile(DOCKERFILE.read_text())
FINAL_STAGE = max(i.stage for i in INSTRUCTIONS)
# The build arguments declared before the first FROM, with their defaults (what FROM lines may use).
GLOBAL_ARGS = dict(i.value.partition("=")[::2] for i in INSTRUCTIONS if i.keyword == "ARG" and i.stage == -1)


def from_images() -> list[list[str]]:
    """Each FROM's words, build arguments replaced by their defaults (``docker build`` without --build-arg)."""
    return [
        re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: GLOBAL_ARGS[m.group(1) or m.group(2)], i.value).split()
        for i in INSTRUCTIONS
        if i.keyword == "FROM"
    ]


def final(keyword: str) -> list[Instruction]:
    return [i for i in INSTRUCTIONS if i.keyword == keyword and i.stage == FINAL_STAGE]


def exec_form(keyword: str) -> list[str]:
    found = final(keyword)
    assert len(found) == 1, f"one {keyword} expected in the final stage"
    value = json.loads(found[0].value)
    assert isinstance(value, list), f"{keyword} must use the exec (JSON) form so signals reach kopf"
    return [str(v) for v in value]


def test_multi_stage_with_base_images_pinned_by_tag() -> None:
    froms = from_images()
    assert len(froms) >= 2, "multi-stage: build tools stay out of the runtime image"
    stages = set()
    for parts in froms:
        image = parts[0]
        if "@sha256:" not in image:
            name, _, tag = image.rpartition(":")
            assert name, f"{image}: pin the base image by tag"
            assert tag != "latest", f"{image}: pin an exact version, not {tag!r}"
            assert re.search(r"\d+\.\d+", tag), f"{image}: pin an exact version, not {tag!r}"
            assert "slim" in tag, f"{image}: use a slim base"
        if len(parts) == 3 and parts[1].upper() == "AS":
            stages.add(parts[2])
    copies_from = {m for i in final("COPY") for m in re.findall(r"--from=(\S+)", i.value)}
    assert copies_from, "the runtime stage copies the built package from a build stage"
    assert copies_from <= stages


def test_base_python_satisfies_requires_python() -> None:
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = tuple(int(x) for x in re.findall(r"\d+", requires)[:2])
    pythons = [image for image, *_ in from_images() if image.rpartition(":")[0].rsplit("/", 1)[-1] == "python"]
    assert pythons, "the base is the python image (make image's Debian base stands in for it)"
    for image in pythons:
        version = tuple(int(x) for x in re.findall(r"\d+", image.rpartition(":")[2])[:2])
        assert version >= minimum, f"{image} is older than requires-python {requires}"


def test_both_stages_share_one_base_image_a_build_argument_replaces() -> None:
    """`make image` passes its Debian base as BASE_IMAGE where the public one cannot be pulled."""
    assert "BASE_IMAGE" in GLOBAL_ARGS
    stages = [i.value.split()[0] for i in INSTRUCTIONS if i.keyword == "FROM"]
    assert stages == ["${BASE_IMAGE}"] * len(stages)


def test_runs_as_a_numeric_non_root_user() -> None:
    users = final("USER")
    assert users, "USER must be set in the final stage"
    user = users[-1].value.split(":")[0]
    # Numeric, so Kubernetes can enforce runAsNonRoot without resolving names; and the chart agrees.
    assert user.isdigit()
    assert int(user) != 0
    assert int(user) == VALUES["podSecurityContext"]["runAsUser"]
    last_user_line = max(n for n, i in enumerate(INSTRUCTIONS) if i.keyword == "USER")
    assert not any(i.keyword == "RUN" for i in INSTRUCTIONS[last_user_line:]), "nothing runs as root after USER"


def test_java_17_headless_for_spark_and_the_package_from_pyproject() -> None:
    runs = " ".join(i.value for i in final("RUN"))
    assert "openjdk-17-jre-headless" in runs
    assert "--no-install-recommends" in runs
    assert "rm -rf /var/lib/apt/lists" in runs
    build_runs = " ".join(i.value for i in INSTRUCTIONS if i.keyword == "RUN" and i.stage != FINAL_STAGE)
    assert re.search(r"pip install (\S+ )*\.(\s|$)", build_runs), "the package is installed from pyproject.toml"


def test_no_secrets_in_the_image() -> None:
    for i in INSTRUCTIONS:
        if i.keyword in {"ENV", "ARG", "LABEL"}:
            names = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", i.value) or [i.value.split()[0]]
            for name in names:
                assert not re.search(r"PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|CREDENTIAL|SASL", name, re.I), (
                    f"{i.keyword} {name}: credentials come from Kubernetes Secrets at run time, never the image"
                )
        if i.keyword in {"COPY", "ADD"}:
            assert not re.search(r"\.env\b|id_rsa|\.pem|\.key\b|kubeconfig|\.netrc", i.value), i.value
    assert not any(i.keyword == "ADD" for i in INSTRUCTIONS), "COPY, not ADD (no remote URLs or auto-extraction)"


def _ignored(path: str, patterns: list[str]) -> bool:
    """.dockerignore semantics for the patterns used here: last match wins, ! re-includes."""
    ignored = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        if any(fnmatch.fnmatch(p, pattern) for p in prefixes) or fnmatch.fnmatch(path, pattern):
            ignored = not negate
    return ignored


def test_build_context_holds_what_pip_install_needs_and_nothing_private() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    needed = ["pyproject.toml", pyproject["project"]["readme"], "operator/kafka_balancer/__init__.py"]
    needed += [str(p.relative_to(REPO)) for p in (REPO / "operator" / "kafka_balancer" / "schemas").glob("*.json")]
    for path in needed:
        assert not _ignored(path, patterns), f"{path} is excluded from the build context"
    for private in (".git/config", ".venv/bin/python", "tests/conftest.py", ".coord/H7.md", "bench/run_all.py"):
        assert _ignored(private, patterns), f"{private} would be sent to the Docker daemon"
    for i in INSTRUCTIONS:
        if i.keyword == "COPY" and "--from=" not in i.value:
            *sources, _dest = shlex.split(i.value)
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: no such file in the repository"
                assert not _ignored(source, patterns), f"COPY {source}: excluded by .dockerignore"


def test_writable_paths_are_volumes_matching_the_chart() -> None:
    volumes = json.loads(final("VOLUME")[0].value)
    env = " ".join(i.value for i in final("ENV"))
    spark_dirs = re.search(r"SPARK_LOCAL_DIRS=(\S+)", env)
    store = re.search(r"KAFKA_BALANCER_SAMPLE_STORE=(\S+)", env)
    assert spark_dirs
    assert store
    assert set(volumes) == {"/tmp", spark_dirs.group(1), store.group(1)}
    assert store.group(1) == VALUES["sampleStore"]["path"]
    assert re.search(r"\bHOME=/tmp\b", env), "HOME on a writable volume (Java and Spark write under it)"
    workdirs = final("WORKDIR")
    assert workdirs, "set WORKDIR: Spark writes relative to it (spark-warehouse, derby.log)"
    assert workdirs[-1].value in volumes, "the working directory must be writable (a volume)"


def test_entrypoint_runs_the_operator_with_probes_and_metrics_ports() -> None:
    entrypoint = exec_form("ENTRYPOINT")
    cmd = exec_form("CMD")
    assert entrypoint[0] == "tini", "an init process reaps Spark's child processes and forwards SIGTERM"
    kopf = entrypoint[entrypoint.index("--") + 1 :]
    assert kopf[:2] == ["kopf", "run"]
    assert "--standalone" in kopf
    module = kopf[kopf.index("-m") + 1]
    assert module.startswith("kafka_balancer.controller")
    assert "--all-namespaces" in cmd  # the chart's args replace CMD with --namespace=... when asked
    liveness = next(a for a in cmd if a.startswith("--liveness="))
    port = int(re.search(r":(\d+)/healthz$", liveness).group(1))  # type: ignore[union-attr]
    exposed = {int(p) for i in final("EXPOSE") for p in i.value.split()}
    assert exposed == {port, VALUES["metrics"]["port"]}
    assert port == VALUES["operator"]["healthPort"]


def test_entrypoint_module_exists_imports_and_registers_the_handlers() -> None:
    """`kopf run -m MODULE` must import cleanly in a fresh interpreter and register handlers for both CRDs."""
    entrypoint = exec_form("ENTRYPOINT")
    module = entrypoint[entrypoint.index("-m") + 1]
    code = (
        "import importlib, sys, kopf\n"
        "importlib.import_module(sys.argv[1])\n"
        "registry = kopf.get_default_registry()\n"
        "handlers = [*registry._changing.get_all_handlers(), *registry._spawning.get_all_handlers()]\n"
        "names = {h.selector.plural or h.selector.any_name for h in handlers if h.selector is not None}\n"
        "print(sorted(str(n) for n in names))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, module],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "KAFKA_BALANCER_METRICS_PORT": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['balancepolicies', 'resourcegroups']"


@pytest.mark.parametrize("tool", ["kopf", "tini"])
def test_entrypoint_tools_are_provided(tool: str) -> None:
    if tool == "kopf":
        deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
        assert any(d.startswith("kopf") for d in deps), "kopf must be a runtime dependency"
    else:
        assert "tini" in " ".join(i.value for i in final("RUN")), "tini is installed in the runtime stage"


def test_the_spark_application_main_file_exists_in_the_image() -> None:
    """spark.engine=sparkApplication runs the operator's image with the package's analyze.py as main file."""
    import dataclasses

    from kafka_balancer.analysis.spark_application import SparkApplicationConfig

    main_file = next(f for f in dataclasses.fields(SparkApplicationConfig) if f.name == "main_application_file").default
    assert isinstance(main_file, str)
    path = main_file.removeprefix("local://")
    venv = next(re.search(r"venv (\S+)", i.value) for i in INSTRUCTIONS if "-m venv" in i.value)
    assert venv
    link = f"{venv.group(1)}/kafka_balancer"
    assert path.startswith(link + "/"), f"{main_file} is not under the package link {link}"
    build_runs = " ".join(i.value for i in INSTRUCTIONS if i.keyword == "RUN" and i.stage != FINAL_STAGE)
    assert re.search(
        rf"ln -s \"\$\(python -c '[^']*kafka_balancer\.__file__[^']*'\)\"\s+{re.escape(link)}\b", build_runs
    )
    # The runtime stage copies the whole virtualenv, link included.
    assert any(f"{venv.group(1)} {venv.group(1)}" in i.value for i in final("COPY"))
    assert (REPO / "operator" / "kafka_balancer" / path.removeprefix(link + "/")).is_file()
