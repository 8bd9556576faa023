# Two entry points for a fresh machine: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv browser kafka kube-binaries gitops-tools prometheus-tools test test-under-load lint typecheck contracts pytest demo bench crds clean

venv: $(STAMP)

# Rebuilt only when pyproject.toml or constraints.txt changes; the stamp keeps repeated runs fast.
# constraints.txt holds the versions last tested, so a fresh clone installs what passed.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

contracts: venv
	$(BIN)/lint-imports

# Debian's headless Chromium: the tests open the HTML report in it (the one system package they need;
# Java 17 for Spark is on the machine). Installed once, with sudo when not root.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium; }

# Apache Kafka 4.3.1 (the broker's jars and a log4j2 provider for SLF4J), from Maven Central with Maven:
# kafka-runtime/pom.xml lists them, the dependency plugin copies them into build/kafka/libs, once.
# The tests and the demo run real KRaft brokers from these jars (kafka_balancer.sandbox.real).
# Debian's maven (and a Java 17 runtime) are installed when missing, with sudo when not root.
KAFKA_LIBS := build/kafka/libs
KAFKA_STAMP := build/kafka/.fetched
kafka: $(KAFKA_STAMP)

$(KAFKA_STAMP): kafka-runtime/pom.xml
	@command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless maven; }
	rm -rf $(KAFKA_LIBS)
	mvn -q -B -Dstyle.color=never -f kafka-runtime/pom.xml dependency:copy-dependencies \
	  -DincludeScope=runtime -DoutputDirectory=$(abspath $(KAFKA_LIBS))
	touch $@

# The real Kubernetes API server and etcd of the operator's end-to-end and RBAC tests, built from Go
# module sources with the machine's Go (1.26, no GOTOOLCHAIN needed; kube/go.mod says which versions,
# and why a wrapper module) into build/ (ignored), static and stripped as Kubernetes releases them.
# The first build costs about 7.5 CPU-minutes (README); the stamp skips it while kube/go.* are unchanged.
KUBE_BIN := build/kube/bin
KUBE_STAMP := $(KUBE_BIN)/.built

kube-binaries: $(KUBE_STAMP)

$(KUBE_STAMP): kube/go.mod kube/go.sum
	@command -v go >/dev/null 2>&1 || { echo "kube-binaries: Go 1.26 or newer is needed (kube/go.mod)" >&2; exit 1; }
	cd kube && version=$$(go list -m -f '{{.Version}}' k8s.io/kubernetes) && \
	  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$$version" \
	    -o ../$(KUBE_BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver && \
	  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o ../$(KUBE_BIN)/etcd go.etcd.io/etcd/server/v3
	touch $@

# The users' own tools, which the tests run (tests/go_tools.py), each built from its Go module under tools/
# (fetched from the Go module proxy; go.sum pins every module) into build/tools/bin, once: the stamps skip
# the build while the module's files are unchanged, and Go's build cache persists between clean clones on
# one machine.
# - gitops-health (tools/gitops): Flux's kstatus, status poller, CEL health evaluator and `wait: true`
#   check, and Argo CD's health scripts in gopher-lua with Argo CD's VM setup. About 3 CPU-minutes cold.
# - promtool, prometheus and promql-series (tools/prometheus): github.com/prometheus/prometheus without its
#   cloud service discoveries (-tags remove_all_sd: static and file targets are all the tests use) and
#   without its web UI assets (built only with -tags builtinassets; the API and rule evaluation need
#   none). About 12 CPU-minutes cold (README).
TOOLS_BIN := build/tools/bin
GITOPS_STAMP := $(TOOLS_BIN)/.gitops-built
PROMETHEUS_STAMP := $(TOOLS_BIN)/.prometheus-built
GO_BUILD := CGO_ENABLED=0 go build -trimpath -ldflags "-s -w"

gitops-tools: $(GITOPS_STAMP)

$(GITOPS_STAMP): tools/gitops/go.mod tools/gitops/go.sum $(wildcard tools/gitops/*.go)
	@command -v go >/dev/null 2>&1 || { echo "gitops-tools: Go 1.26 or newer is needed (tools/gitops/go.mod)" >&2; exit 1; }
	cd tools/gitops && $(GO_BUILD) -o ../../$(TOOLS_BIN)/gitops-health .
	touch $@

prometheus-tools: $(PROMETHEUS_STAMP)

$(PROMETHEUS_STAMP): tools/prometheus/go.mod tools/prometheus/go.sum $(wildcard tools/prometheus/*/*.go)
	@command -v go >/dev/null 2>&1 || { echo "prometheus-tools: Go 1.26.7 or newer is needed (tools/prometheus/go.mod)" >&2; exit 1; }
	cd tools/prometheus && version=$$(go list -m -f '{{.Version}}' github.com/prometheus/prometheus) && \
	  CGO_ENABLED=0 go build -trimpath -tags remove_all_sd -o ../../$(TOOLS_BIN)/ \
	    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$$version" \
	    github.com/prometheus/prometheus/cmd/promtool github.com/prometheus/prometheus/cmd/prometheus ./promql-series
	touch $@

# Two pytest-xdist workers: much of the suite waits on JVMs, sockets and subprocesses, so two run
# side by side on a 2-core machine. One real Kafka cluster and one Spark session serve the run: the
# tests on each are an xdist group (tests/conftest.py), run by one worker (--dist loadgroup), which
# alone starts it. Every server picks free ports of its own (sandbox/ports.py).
# PYTEST_WORKERS=0 runs the suite in one process.
PYTEST_WORKERS ?= 2
pytest: venv browser kafka kube-binaries gitops-tools prometheus-tools
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: lint typecheck contracts pytest

# `make test` beside two CPU-bound processes for its whole duration: the suite must be as green on a busy
# machine as on an idle one (.ci/under_load). Three runs in a row, each from a fresh clone of HEAD:
#   make test-under-load UNDER_LOAD_ARGS="--runs 3 --fresh-clone"
UNDER_LOAD_ARGS ?=
test-under-load:
	.ci/under_load $(UNDER_LOAD_ARGS)

demo: venv kafka
	$(BIN)/kafka-balancer demo

bench: venv kafka
	$(BIN)/python -m bench.run_all

# CRDs and their field reference are generated from the models; the chart ships the same files.
crds: venv
	$(BIN)/kafka-balancer crds crds --docs docs/crds.md
	cp crds/*.yaml charts/kafka-balancer/crds/

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build/kafka build/kube build/tools
